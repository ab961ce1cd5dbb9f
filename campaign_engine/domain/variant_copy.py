"""What an A/B content variant overrides of a channel's copy, and THE merge of it over the base copy.

A variant overrides single fields of a channel's copy (a subject line alone, the commonest email test):
its ``message``, ``notification`` and ``email`` are partial copies (``MessageOverride``,
``NotificationOverride``, ``EmailOverride``: every field optional, each with the limits of the field it
overrides), and its ``translations`` hold the same per language. ``variant_copy`` is the one merge,
field by field over the base copy *of the reader's language*, and every path reads copy through it: the
in-app card and the notify payload on the stored JSON (``wire_variant_copy``), the email walk, the
email preview, the web view and the self-test on the parsed definition
(``CampaignDefinition.content``), explainRecipient through ``overridden``.

A field the variant does not override in the served language is that language's base field: a
Spanish reader of a variant that changes only the English subject reads the Spanish subject. So a
variant never changes a reader's language, never shows a reader text of another language, and adds no
untranslated reader: the untranslated rule (``CAMPAIGN_UNTRANSLATED_MAX_SHARE``) counts the same with
variants as without.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.content import (
    Action,
    EmailCopy,
    EveryDays,
    HttpsUrl,
    Media,
    Message,
    MessageId,
    NotificationCopy,
    StrictModel,
    Targeting,
    Text,
)
from campaign_engine.domain.locale import normalized
from campaign_engine.domain.variants import ContentField

__all__ = [
    "COPY_MODELS",
    "EmailOverride",
    "MessageOverride",
    "NotificationOverride",
    "TranslationOverride",
    "overridden",
    "variant_copy",
    "wire_variant_copy",
]


class _Override(StrictModel):
    @model_validator(mode="after")
    def _overrides_something(self) -> _Override:
        if all(value is None for _, value in self):
            raise ValueError("a variant's copy overrides at least one field (or leave the channel out)")
        return self


class MessageOverride(_Override):
    """The in-app message fields a variant overrides (``Message``'s limits), LearnCard's ``id`` and
    ``targeting`` among them: a variant may show itself to other devices, or keep its own dismissal state."""

    id: MessageId | None = None
    title: Annotated[Text, Field(min_length=1, max_length=120)] | None = None
    body: Annotated[str, Field(max_length=2000)] | None = None
    presentation: Literal["modal", "banner", "toast"] | None = None
    dismissible: bool | None = None
    frequency: Literal["once", "session", "always"] | EveryDays | None = None
    priority: Annotated[int, Field(ge=0, le=1000)] | None = None
    media: Media | None = None
    emoji: Annotated[str, Field(max_length=16)] | None = None
    actions: Annotated[list[Action], Field(max_length=3)] | None = None
    targeting: Targeting | None = None
    enabled: bool | None = None


class NotificationOverride(_Override):
    """The notification fields a variant overrides (``NotificationCopy``'s limits)."""

    title: Annotated[Text, Field(min_length=1, max_length=65)] | None = None
    body: Annotated[Text, Field(min_length=1, max_length=240)] | None = None


class EmailOverride(_Override, CamelModel):
    """The email fields a variant overrides (``EmailCopy``'s limits): ``{"subject": ...}`` alone tests a
    subject line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: Annotated[Text, Field(min_length=1, max_length=150)] | None = None
    title: Annotated[Text, Field(min_length=1, max_length=200)] | None = None
    body: Annotated[str, Field(min_length=1, max_length=20_000)] | None = None
    cta_label: Annotated[Text, Field(min_length=1, max_length=40)] | None = None
    hero_image_url: HttpsUrl | None = None


class TranslationOverride(StrictModel):
    """A variant's overrides in one of the campaign's other languages."""

    message: MessageOverride | None = None
    notification: NotificationOverride | None = None
    email: EmailOverride | None = None

    @model_validator(mode="after")
    def _some_content(self) -> TranslationOverride:
        if self.message is None and self.notification is None and self.email is None:
            raise ValueError("a variant's translation overrides message, notification or email")
        return self


COPY_MODELS: dict[ContentField, type[Message | NotificationCopy | EmailCopy]] = {
    "message": Message,
    "notification": NotificationCopy,
    "email": EmailCopy,
}
"""The whole copy of each field, what a merge gives."""


def variant_copy(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> Any:
    """THE merge: ``override``'s fields (wire form) over ``base`` (one language's copy, wire form), field
    by field; ``base`` unchanged without an override, None without a base."""
    if base is None or not override:
        return base
    return {**base, **override}


def _override(
    definition: Mapping[str, Any], field: ContentField, tag: str, variant_id: str | None
) -> Mapping[str, Any] | None:
    """What ``variant_id`` overrides of ``field`` in language ``tag`` (wire form), or None."""
    variant = next((v for v in definition.get("variants") or () if v["id"] == variant_id), None)
    if variant is None:
        return None
    if tag == definition.get("locale", "en"):
        return variant.get(field)  # type: ignore[no-any-return]
    own = {normalized(t): content for t, content in (variant.get("translations") or {}).items()}
    return (own.get(normalized(tag)) or {}).get(field)


def wire_variant_copy(
    definition: Mapping[str, Any], field: ContentField, tag: str, variant_id: str | None
) -> Any:
    """The wire copy of ``field`` in language ``tag`` (one ``wire_languages`` gave) for a reader of
    ``variant_id``, from a stored definition's JSON: ``variant_copy`` of that language's base copy."""
    if tag == definition.get("locale", "en"):
        base = definition.get(field)
    else:
        base = definition["translations"][tag][field]
    return variant_copy(base, _override(definition, field, tag, variant_id))


def overridden(
    definition: Mapping[str, Any], field: ContentField, tag: str, variant_id: str | None
) -> list[str]:
    """The wire names of the fields of ``field`` that ``variant_id`` overrides in language ``tag`` (what
    explainRecipient shows; empty: the reader reads that language's base copy)."""
    return sorted(_override(definition, field, tag, variant_id) or {})
