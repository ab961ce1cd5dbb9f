"""Campaign definitions: the content an admin authors, its invariants, and the status machine.

One model per direction: ``CampaignCreate`` (input), ``CampaignPatch`` (partial update input),
``CampaignPublic`` (what admins read back). ``CampaignDefinition`` is the validated whole that is
stored; a patch is applied to it and the result is validated again, so every rule holds after every
write, not only at creation. One module past 350 lines on purpose: the four models share their
fields and validators, and a rule split from them could hold for one direction and not another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, time
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from campaign_engine.domain.ab_variants import (
    MAX_VARIANTS,
    MIN_VARIANTS,
    ContentVariant,
    assigned_variant,
    check_variants,
)
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.content import (
    STORED,
    EmailCopy,
    Message,
    NotificationCopy,
    StrictModel,
    Text,
    Translation,
    check_translated_actions,
    stored,
)
from campaign_engine.domain.guardian_copy import GuardianCopy, Minors
from campaign_engine.domain.locale import normalized
from campaign_engine.domain.priority import Priority
from campaign_engine.domain.schedule import ZONE_NAME_PATTERN, QuietHours, known_zone
from campaign_engine.domain.segment import SegmentRule
from campaign_engine.domain.tenancy import CampaignRefOut
from campaign_engine.domain.types import checked_instant, format_ts, parse_instant
from campaign_engine.domain.variant_copy import COPY_MODELS, variant_copy
from campaign_engine.domain.variants import MAX_TRANSLATIONS, ContentField, LanguageTag, served_locale

__all__ = [
    "CLEARABLE_FIELDS",
    "CampaignCreate",
    "CampaignDefinition",
    "CampaignPatch",
    "CampaignPublic",
    "CampaignStatus",
    "Channel",
    "ContentVariant",
    "EmailCopy",
    "GuardianCopy",
    "Message",
    "NotificationCopy",
    "QuietHoursWindow",
    "Translation",
    "allowed_transition",
    "campaign_from_node",
]

Channel = Literal["inApp", "notify", "email"]
CampaignStatus = Literal["draft", "live", "paused", "archived"]

_TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"live", "archived"}),
    "live": frozenset({"paused", "archived"}),
    "paused": frozenset({"live", "archived"}),
    "archived": frozenset(),
}


def allowed_transition(current: str, target: str) -> bool:
    return target in _TRANSITIONS.get(current, frozenset())


def _wire(copy: StrictModel) -> dict[str, Any]:
    """A copy or an override in wire form, only the fields it sets (what ``variant_copy`` merges)."""
    return copy.model_dump(mode="json", by_alias=True, exclude_none=True)


def _instant(value: object) -> datetime:
    """Any RFC 3339 instant with an offset, in range, as UTC (``domain/types.py:parse_instant``)."""
    if isinstance(value, str):
        return parse_instant(value)
    if isinstance(value, datetime):
        return checked_instant(value)
    raise ValueError("must be an RFC 3339 timestamp string")


CampaignId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")]
# Read leniently, written in the one stored spelling, so admins read back exactly what Cypher compares.
UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_instant),
    PlainSerializer(format_ts, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 instant with an offset, from 1970-01-01T00:00:00Z to "
            "9999-12-31T23:59:59.999999Z; read back in UTC with microseconds.",
        }
    ),
]


def _known_zone_name(name: str) -> str:
    if known_zone(name) is None:
        raise ValueError("not an IANA time zone in the tz database (e.g. Europe/Paris)")
    return name


ZoneName = Annotated[
    str, StringConstraints(max_length=64, pattern=ZONE_NAME_PATTERN), AfterValidator(_known_zone_name)
]
HourMinute = Annotated[str, StringConstraints(pattern=r"^(?:[01]\d|2[0-3]):[0-5]\d$")]


class QuietHoursWindow(StrictModel):
    """Local wall-clock hours in which notify and email wait; ``start > end`` wraps midnight."""

    start: HourMinute
    end: HourMinute

    @model_validator(mode="after")
    def _not_empty(self) -> QuietHoursWindow:
        if self.start == self.end:
            raise ValueError("quiet hours must not start and end at the same time")
        return self

    def rule(self) -> QuietHours:
        return QuietHours(time.fromisoformat(self.start), time.fromisoformat(self.end))


_CONTENT_FOR_CHANNEL: dict[str, str] = {"inApp": "message", "notify": "notification", "email": "email"}

# Optional fields a patch may clear with null; the rest can only be replaced.
CLEARABLE_FIELDS = frozenset(
    {
        "description",
        "notification",
        "email",
        "startsAt",
        "endsAt",
        "timeZone",
        "quietHours",
        "translations",
        "segment",
        "variants",
        "guardianCopy",
    }
)


def _content_rule_schema(schema: dict[str, Any]) -> None:
    """States ``_content_and_window``'s channel rule in the JSON Schema: a listed channel's content is
    present and not null. (The window rule compares two values; JSON Schema cannot say it.)"""
    schema["allOf"] = [
        {
            "if": {"required": ["channels"], "properties": {"channels": {"contains": {"const": channel}}}},
            "then": {"required": [field], "properties": {field: {"not": {"type": "null"}}}},
        }
        for channel, field in _CONTENT_FOR_CHANNEL.items()
    ]


class CampaignDefinition(StrictModel, CamelModel):
    """Everything an admin authors. Stored as JSON on the Campaign node; validated on every write."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_content_rule_schema)

    name: Annotated[Text, Field(min_length=1, max_length=200)]
    description: Annotated[str, Field(max_length=2000)] | None = None
    channels: Annotated[
        list[Channel], Field(min_length=1, max_length=3, json_schema_extra={"uniqueItems": True})
    ]
    message: Message | None = None
    notification: NotificationCopy | None = None
    email: EmailCopy | None = None
    starts_at: UtcDatetime | None = None
    ends_at: UtcDatetime | None = None
    exclude_minors: bool = True
    discoverable: bool = False
    # The zone of recipients whose profile has none (or an unknown one; absent = UTC), and
    # the local hours in which notify and email deliveries wait (in-app is unaffected).
    time_zone: ZoneName | None = None
    quiet_hours: QuietHoursWindow | None = None
    # The language of the content above, and the same content in other languages.
    locale: LanguageTag = "en"
    translations: Annotated[dict[LanguageTag, Translation], Field(max_length=MAX_TRANSLATIONS)] | None = None
    # A live segment; the audience is the static members plus whoever it matches at send time.
    segment: SegmentRule | None = None
    # A/B content variants, each overriding single fields of the content (domain/variant_copy.py).
    variants: (
        Annotated[list[ContentVariant], Field(min_length=MIN_VARIANTS, max_length=MAX_VARIANTS)] | None
    ) = None
    # Members the age policy excludes get nothing ("exclude") or are replaced by their
    # consenting eligible guardians ("guardians"), who read guardianCopy where it has the channel
    # (domain/guardian_copy.py).
    minors: Minors = "exclude"
    guardian_copy: GuardianCopy | None = None
    # The worker lane (domain/priority.py): critical needs a publisher and skips quiet hours and caps.
    priority: Priority = "normal"

    @field_validator("channels")
    @classmethod
    def _unique_channels(cls, channels: list[Channel]) -> list[Channel]:
        if len(set(channels)) != len(channels):
            raise ValueError("channels must not repeat")
        return channels

    @model_validator(mode="after")
    def _content_and_window(self, info: ValidationInfo) -> CampaignDefinition:
        for channel in self.channels:
            field = _CONTENT_FOR_CHANNEL[channel]
            if getattr(self, field) is None:
                raise ValueError(f"channel '{channel}' needs '{field}' content")
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValueError("endsAt must be after startsAt")
        seen = {normalized(self.locale)}
        for tag in self.translations or {}:
            if normalized(tag) in seen:
                raise ValueError(f"translations: '{tag}' repeats the base locale or another translation")
            seen.add(normalized(tag))
            translated = (self.translations or {})[tag].message
            if translated is not None and not stored(info):
                check_translated_actions(self.message, translated, f"translations['{tag}'].message.actions")
        if self.variants:
            base = {"message": self.message, "notification": self.notification, "email": self.email}
            check_variants(self.variants, base=base, translations=self.translations or {})
        if self.guardian_copy is not None:
            self.guardian_copy.check_base_locale(self.locale)
            if self.guardian_copy.message is not None and not stored(info):  # the campaign's buttons
                check_translated_actions(
                    self.message, self.guardian_copy.message, "guardianCopy.message.actions"
                )
        return self

    def variant(self, field: ContentField, requested: str | None) -> tuple[str, Any]:
        """The served language tag and content of ``field`` for a reader of ``requested``
        (``domain/variants.py:served_locale``, the one rule)."""
        tag = served_locale(self.languages(field), requested)
        if tag == self.locale:
            return self.locale, getattr(self, field)
        return tag, getattr((self.translations or {})[tag], field)

    def content(self, field: ContentField, requested: str | None, variant_id: str | None) -> tuple[str, Any]:
        """``variant`` for a reader of content variant ``variant_id`` (``domain/ab_variants.py``): the
        same language, and in it the variant's fields merged over the base copy
        (``domain/variant_copy.py:variant_copy``, the one merge)."""
        tag, base = self.variant(field, requested)
        chosen = next((v for v in self.variants or () if v.id == variant_id), None)
        if chosen is None:
            return tag, base
        if tag == self.locale:
            override = getattr(chosen, field)
        else:
            own = {normalized(t): content for t, content in (chosen.translations or {}).items()}
            override = getattr(own.get(normalized(tag)), field, None)
        if override is None:
            return tag, base
        merged = variant_copy(_wire(base), _wire(override))
        return tag, COPY_MODELS[field].model_validate(merged)

    def variant_of(self, profile_id: str) -> str | None:
        """THE content variant of ``profile_id`` (``domain/ab_variants.py:assigned_variant``)."""
        wire = [{"id": v.id, "weight": v.weight} for v in self.variants or ()]
        return assigned_variant(wire, campaign_id=self.storage_id(), profile_id=profile_id)

    def storage_id(self) -> str:
        """The id the assignment hash is keyed by; only stored campaigns (``CampaignPublic``) have one."""
        raise TypeError("an unsaved definition has no storage id")

    def languages(self, field: ContentField) -> list[str]:
        """The tags ``field`` has content in, the base first."""
        translations = self.translations or {}
        return [self.locale, *(tag for tag, content in translations.items() if getattr(content, field))]

    def wire(self) -> dict[str, Any]:
        """The JSON form stored in the graph and returned to admins (camelCase, UTC ``Z`` times)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def has_in_app_message(self) -> bool:
        return "inApp" in self.channels and self.message is not None and self.message.enabled


class CampaignCreate(CampaignDefinition):
    id: CampaignId


def _clearable_only_schema(schema: dict[str, Any]) -> None:
    """A patch field may be ``null`` only when it is clearable: say so in the JSON Schema too."""
    for name, prop in schema.get("properties", {}).items():
        if name in CLEARABLE_FIELDS or name == "expectedUpdatedAt":
            continue
        variants = prop.get("anyOf", [])
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and len(variants) == 2:
            prop.pop("anyOf")
            prop.update(kept[0])
        prop.pop("default", None)


class CampaignPatch(CamelModel):
    """A partial update: omitted fields are kept, ``null`` clears an optional field.

    Each field has its definition's type, so a wrong type is refused with its path before the campaign is
    read; the patched whole is validated again (``campaigns/definitions.py``) for the rules that span
    fields. ``expectedUpdatedAt`` is an instant, not a spelling: it is compared to the stored
    ``updatedAt`` to the millisecond, so a value echoed through a JavaScript ``Date`` matches."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_clearable_only_schema)

    campaign_id: Annotated[str, Field(min_length=1, max_length=64)]
    expected_updated_at: UtcDatetime | None = None
    name: Annotated[Text, Field(min_length=1, max_length=200)] | None = None
    description: Annotated[str, Field(max_length=2000)] | None = None
    channels: (
        Annotated[list[Channel], Field(min_length=1, max_length=3, json_schema_extra={"uniqueItems": True})]
        | None
    ) = None
    message: Message | None = None
    notification: NotificationCopy | None = None
    email: EmailCopy | None = None
    starts_at: UtcDatetime | None = None
    ends_at: UtcDatetime | None = None
    exclude_minors: bool | None = None
    discoverable: bool | None = None
    time_zone: ZoneName | None = None
    quiet_hours: QuietHoursWindow | None = None
    locale: LanguageTag | None = None
    translations: Annotated[dict[LanguageTag, Translation], Field(max_length=MAX_TRANSLATIONS)] | None = None
    segment: SegmentRule | None = None
    # A/B content variants, each overriding single fields of the content (domain/variant_copy.py).
    variants: (
        Annotated[list[ContentVariant], Field(min_length=MIN_VARIANTS, max_length=MAX_VARIANTS)] | None
    ) = None
    minors: Minors | None = None
    guardian_copy: GuardianCopy | None = None
    priority: Priority | None = None

    def changes(self) -> dict[str, Any]:
        """The fields the caller sent, by wire name, in wire form, with ``None`` meaning "clear"."""
        sent = self.model_fields_set - {"campaign_id", "expected_updated_at"}
        return self.model_dump(mode="json", by_alias=True, include=sent)


class CampaignPublic(CampaignDefinition):
    """A campaign as admins read it: the definition plus lifecycle fields. ``id`` is the storage id in
    Python (delivery names the campaign by it) and the tenant's ref on the wire (domain/tenancy.py)."""

    id: CampaignRefOut
    status: CampaignStatus
    tenant_id: str | None
    created_at: str
    updated_at: str
    revision: int

    def storage_id(self) -> str:
        return self.id


def campaign_from_node(node: Mapping[str, Any]) -> CampaignPublic:
    """A stored Campaign node (definition JSON plus lifecycle properties) as admins read it."""
    return CampaignPublic.model_validate(
        {
            **json.loads(node["definition"]),
            "id": node["id"],
            "status": node["status"],
            "tenantId": node.get("tenantId"),
            "createdAt": node["createdAt"],
            "updatedAt": node["updatedAt"],
            "revision": node["revision"],
        },
        context=STORED,
    )
