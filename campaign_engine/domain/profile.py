"""Profiles (the recipients) as admins write and read them.

An upsert row changes only what it names: an omitted field keeps its stored value, an explicit ``null``
clears it (flags become ``false``, lists become empty, the rest is removed). A row that omits ``isManaged``
or ``dob`` must never turn a managed minor into an eligible recipient, so "omitted" and "null" are told
apart with pydantic's ``model_fields_set``.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.patterns import EMAIL_PATTERN, WEBHOOK_PATTERN, DidStr, ProfileIdStr, Slug
from campaign_engine.domain.schedule import ZONE_NAME_PATTERN, known_zone
from campaign_engine.domain.tenancy import TenantId
from campaign_engine.domain.webhook_signature import secret_bytes

__all__ = [
    "Consent",
    "EmailContact",
    "GuardianIn",
    "GuardianLink",
    "ProfileIn",
    "ProfileOut",
    "ProfileUpsert",
    "UpsertResult",
    "WebhookSecretOut",
]

_EMAIL = re.compile(EMAIL_PATTERN)
_WEBHOOK = re.compile(WEBHOOK_PATTERN)


def _iso_date(value: str) -> str:
    date.fromisoformat(value)  # raises ValueError for anything that is not YYYY-MM-DD
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError("must be an ISO date YYYY-MM-DD")
    return value


def _webhook(url: str) -> str:
    if not _WEBHOOK.match(url):
        raise ValueError("must be an http(s) URL")
    return url


def _webhook_secret(secret: str) -> str:
    secret_bytes(secret)  # its ValueError names what is wrong, never the secret
    return secret


def _email(address: str) -> str:
    if not _EMAIL.fullmatch(address):
        raise ValueError("not a valid email address")
    return address


# The rules below are checked by functions, for their error messages; each also states itself in the
# JSON Schema, so /openapi.json calls valid exactly what these functions accept.
WebhookSecret = Annotated[
    str,
    StringConstraints(max_length=200),
    AfterValidator(_webhook_secret),
    WithJsonSchema({"type": "string", "maxLength": 200, "pattern": r"^whsec_[A-Za-z0-9+/]+={0,2}$"}),
]
EmailAddress = Annotated[
    str,
    StringConstraints(max_length=254),
    AfterValidator(_email),
    WithJsonSchema({"type": "string", "maxLength": 254, "pattern": EMAIL_PATTERN}),
]


def _time_zone(name: str) -> str:
    if known_zone(name) is None:
        raise ValueError("not an IANA time zone in the tz database (e.g. Europe/Paris)")
    return name


TimeZoneName = Annotated[
    str,
    AfterValidator(_time_zone),
    WithJsonSchema({"type": "string", "maxLength": 64, "pattern": ZONE_NAME_PATTERN}),
]
IsoDate = Annotated[str, AfterValidator(_iso_date), WithJsonSchema({"type": "string", "format": "date"})]
WebhookUrl = Annotated[
    str,
    StringConstraints(max_length=2048),
    AfterValidator(_webhook),
    WithJsonSchema({"type": "string", "maxLength": 2048, "pattern": WEBHOOK_PATTERN}),
]


class EmailContact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: EmailAddress
    verified: bool = False
    primary: bool = False


Consent = Literal["granted", "revoked"]
"""Whether a guardian agreed to receive announcements meant for their child: only ``granted`` routes."""


class GuardianIn(CamelModel):
    """One adult who may receive what is meant for the minor whose row names them."""

    model_config = ConfigDict(extra="forbid")

    profile_id: ProfileIdStr
    consent: Consent


class GuardianLink(CamelModel):
    """A ``GUARDIAN_OF`` link as ``profiles.get`` answers it: the other profile and the consent only."""

    profile_id: str
    consent: Consent


class ProfileIn(CamelModel):
    model_config = ConfigDict(extra="forbid")

    profile_id: ProfileIdStr
    did: DidStr | None = None
    dob: IsoDate | None = None
    locale: (
        Annotated[str, StringConstraints(max_length=35, pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")]
        | None
    ) = None
    is_managed: bool | None = None
    is_service_profile: bool | None = None
    emails: Annotated[list[EmailContact], Field(max_length=20)] | None = None
    notifications_webhook: WebhookUrl | None = None
    notifications_webhook_secret: Annotated[WebhookSecret | None, Field(repr=False)] = None
    """The receiver's own ``whsec_`` secret, with ``notificationsWebhook`` only; omitted, the engine
    generates one when the webhook is new or changes and answers it once (``webhookSecrets``)."""
    time_zone: TimeZoneName | None = None
    """Where local-time schedules and quiet hours put this person's day; the campaign's zone if unset."""
    tags: Annotated[list[Slug], Field(max_length=200)] | None = None
    connections: Annotated[list[ProfileIdStr], Field(max_length=5000)] | None = None
    tenants: Annotated[list[TenantId], Field(min_length=1, max_length=100)] | None = None
    """The tenants (apps) the person belongs to, replacing the stored set; platform credentials only.
    Omitted: a new profile joins the caller's tenant, an existing one keeps its set."""

    guardians: Annotated[list[GuardianIn], Field(max_length=20)] | None = None
    """This person's guardians (``GUARDIAN_OF`` links to them), replacing the set; ``[]`` or ``null``
    removes them all, omitted keeps them. Each must be a profile of the same tenant that the age policy
    does not hold for a minor."""

    @model_validator(mode="after")
    def _secret_with_its_webhook(self) -> ProfileIn:
        if self.notifications_webhook_secret is not None and not self.notifications_webhook:
            raise ValueError("notificationsWebhookSecret is given with the notificationsWebhook it signs for")
        return self

    @model_validator(mode="after")
    def _guardians_are_others(self) -> ProfileIn:
        seen: set[str] = set()
        for guardian in self.guardians or []:
            if guardian.profile_id == self.profile_id:
                raise ValueError(f"guardians: '{guardian.profile_id}' cannot be their own guardian")
            if guardian.profile_id in seen:
                raise ValueError(f"guardians: '{guardian.profile_id}' is listed twice")
            seen.add(guardian.profile_id)
        return self

    def named(self, field: str) -> bool:
        """Whether the row named ``field`` (by Python name), even as ``null``."""
        return field in self.model_fields_set

    def properties(self) -> dict[str, Any]:
        """The stored node properties this row sets, by stored name; ``None`` removes one."""
        fields = type(self).model_fields
        changes: dict[str, Any] = {}
        for name in _NODE_PROPERTIES & self.model_fields_set:
            value = getattr(self, name)
            changes[fields[name].alias or name] = False if value is None and name in _FLAGS else value
        return changes


_NODE_PROPERTIES = frozenset(
    {"did", "dob", "locale", "is_managed", "is_service_profile", "notifications_webhook", "time_zone"}
)
_FLAGS = frozenset({"is_managed", "is_service_profile"})


class ProfileUpsert(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profiles: Annotated[list[ProfileIn], Field(min_length=1, max_length=1000)]

    @model_validator(mode="after")
    def _unique_ids(self) -> ProfileUpsert:
        seen: dict[str, int] = {}
        for index, profile in enumerate(self.profiles):
            if profile.profile_id in seen:
                raise ValueError(f"profiles[{index}]: profileId repeats profiles[{seen[profile.profile_id]}]")
            seen[profile.profile_id] = index
        return self


class WebhookSecretOut(CamelModel):
    """A secret the engine generated, answered once: it is stored only sealed and never read back."""

    profile_id: str
    secret: str


class UpsertResult(CamelModel):
    created: int
    updated: int = Field(description="existing profiles whose stored facts the rows changed")
    unchanged: int = Field(0, description="existing profiles that already held every fact their row names")
    missing_connections: int
    guardian_links: Annotated[
        int, Field(description="GUARDIAN_OF links created or whose consent changed")
    ] = 0
    webhook_secrets: list[WebhookSecretOut] = Field(default_factory=list)


class ProfileOut(CamelModel):
    profile_id: str
    did: str | None
    dob: str | None
    locale: str | None
    is_managed: bool
    is_service_profile: bool
    emails: list[EmailContact]
    notifications_webhook: str | None
    time_zone: str | None = None
    tags: list[str]
    connections: list[str]
    guardians: list[GuardianLink] = Field(default_factory=list, description="this person's guardians")
    guardian_of: Annotated[
        list[GuardianLink],
        Field(default_factory=list, description="the minors this person is a guardian of"),
    ]
    tenants: list[str] = Field(description="a tenant's own credential sees only its own tenant here")
    announcement_email_opt_out: bool
    announcement_push_opt_out: bool
