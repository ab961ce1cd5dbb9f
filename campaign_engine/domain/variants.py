"""Which language variant of a campaign's content a reader gets, as one rule.

``served_locale`` is THE choice, for every channel and path; the ``wire_*`` helpers read it off a
stored definition's JSON for the hot reads that keep definitions unparsed (the in-app card cache, the
notify payload, the dispatch preview). ``domain/campaign.py``'s ``CampaignDefinition.variant`` is the
same rule on the parsed model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import StringConstraints

from campaign_engine.domain.locale import LANGUAGE_TAG_PATTERN, lookup

__all__ = [
    "MAX_TRANSLATIONS",
    "ContentField",
    "LanguageTag",
    "served_locale",
    "wire_languages",
    "wire_variant",
]

ContentField = Literal["message", "notification", "email"]
LanguageTag = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=35, pattern=LANGUAGE_TAG_PATTERN)
]
"""A BCP 47 language tag (``es``, ``es-MX``, ``zh-Hant-TW``), compared case-insensitively."""
MAX_TRANSLATIONS = 40


def served_locale(languages: Sequence[str], requested: str | None) -> str:
    """THE choice of language, for every channel and path: the best match for ``requested`` (a
    profile's ``locale``) among ``languages`` (the base content's tag first, then the translations that
    have the channel's content) by RFC 4647 lookup (``domain/locale.py``); the base when none matches."""
    return lookup(requested, languages) or languages[0]


def wire_languages(definition: Mapping[str, Any], field: ContentField) -> list[str]:
    """``CampaignDefinition.languages`` of a stored definition (its wire JSON), for the hot reads that
    keep definitions unparsed (the in-app card cache)."""
    translations: Mapping[str, Any] = definition.get("translations") or {}
    return [
        definition.get("locale", "en"),
        *(tag for tag, content in translations.items() if content.get(field)),
    ]


def wire_variant(definition: Mapping[str, Any], field: ContentField, tag: str) -> Any:
    """The wire content of ``field`` in language ``tag`` (one ``wire_languages`` gave)."""
    if tag == definition.get("locale", "en"):
        return definition.get(field)
    return definition["translations"][tag][field]
