"""Routing announcements for minors to their guardians: the campaign's ``minors``
choice, the copy guardians read (``guardianCopy``) and which content one reader is served.

``minors: "exclude"`` (the default) is the age policy as it always was: a member it excludes gets
nothing. ``minors: "guardians"`` replaces such a member, on each channel whose age rule excludes them,
by their guardians with consent granted who are themselves eligible (``graph/rules/routing.py`` has the rule
as Cypher, once for every reader).

``guardianCopy`` is shaped like a translation plus its own ``translations``: per channel
(``message``, ``notification``, ``email``) the copy a routed guardian reads instead of the campaign's,
in the campaign's base ``locale``, and the same fields in other languages. A channel it leaves out is
the campaign's own content for that channel (with the campaign's translations and A/B variants). A
guardian's language is chosen by ``served_locale`` on the guardian's own locale, over the base and the
guardian translations that have the channel, as for any reader.

The guardian copy's in-app message carries the campaign's buttons: the same actions in the same order,
only their labels its own (``CampaignDefinition`` checks it against the campaign's message, by the rule
translations follow, ``check_translated_action_list``), and its translations label them again. Words
for guardians may differ; what a button does may not.

Copy is sent as written: there are no placeholders, so nothing in it can interpolate a child's data.
It must not name the children either (the README's rule on private learner data): a guardian's
announcement says why it reaches them ("your child's class"), never who.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from campaign_engine.domain.content import (
    EmailCopy,
    Message,
    NotificationCopy,
    StrictModel,
    Translation,
    check_translated_actions,
)
from campaign_engine.domain.locale import normalized
from campaign_engine.domain.variants import MAX_TRANSLATIONS, ContentField, LanguageTag

__all__ = [
    "GuardianCopy",
    "Minors",
    "guardian_source",
    "routes_guardians",
]

Minors = Literal["exclude", "guardians"]
_FIELDS: tuple[ContentField, ...] = ("message", "notification", "email")


class GuardianCopy(StrictModel):
    """What a routed guardian reads per channel; validated like the campaign's content (same models)."""

    message: Message | None = None
    notification: NotificationCopy | None = None
    email: EmailCopy | None = None
    translations: Annotated[dict[LanguageTag, Translation], Field(max_length=MAX_TRANSLATIONS)] | None = None

    @model_validator(mode="after")
    def _some_copy(self) -> GuardianCopy:
        if self.message is None and self.notification is None and self.email is None:
            raise ValueError("guardianCopy has message, notification or email copy")
        seen: set[str] = set()
        for tag, content in (self.translations or {}).items():
            if normalized(tag) in seen:
                raise ValueError(f"guardianCopy.translations: '{tag}' repeats another translation")
            seen.add(normalized(tag))
            if content.message is not None and self.message is not None:
                check_translated_actions(
                    self.message, content.message, f"guardianCopy.translations['{tag}'].message.actions"
                )
            for field in _FIELDS:
                if getattr(content, field) is not None and getattr(self, field) is None:
                    raise ValueError(
                        f"guardianCopy.translations['{tag}'].{field}: guardianCopy has no {field} "
                        "in the base locale to translate"
                    )
        return self

    def check_base_locale(self, locale: str) -> None:
        """A translation must not repeat the campaign's base locale (the guardian copy's own)."""
        for tag in self.translations or {}:
            if normalized(tag) == normalized(locale):
                raise ValueError(f"guardianCopy.translations: '{tag}' repeats the base locale")


def routes_guardians(definition: Mapping[str, Any]) -> bool:
    """Whether a stored definition (wire JSON) routes excluded members to their guardians."""
    return definition.get("minors") == "guardians"


def guardian_source(definition: Mapping[str, Any], field: ContentField) -> tuple[Mapping[str, Any], bool]:
    """The wire definition a routed guardian's ``field`` is read from (``wire_languages`` and
    ``wire_variant`` take it as they take a campaign's) and whether it is the guardian copy (then no A/B
    variant applies): the guardian copy where it has ``field``, else the campaign itself."""
    copy = definition.get("guardianCopy") or {}
    if copy.get(field) is None:
        return definition, False
    translations = {tag: t for tag, t in (copy.get("translations") or {}).items() if t.get(field)}
    return {"locale": definition.get("locale", "en"), field: copy[field], "translations": translations}, True
