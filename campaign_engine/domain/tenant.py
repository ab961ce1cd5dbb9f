"""Tenants as records: one organisation's name, branding, app origin, sender, caps and
approval policy, its email layout (footer copy, sender display name) and whether its
email CTA is click-tracked (``clickTracking``, on by default), editable
through ``tenants.*`` without a redeploy.

One model per direction: ``TenantCreate`` (input), ``TenantPatch`` (partial update input), ``TenantPublic``
(what admins read back). ``TenantSettings`` is the validated whole that is stored; a patch is applied to
it and the result validated again, so every rule holds after every write. The rules are the ones the
settings they replace (``CAMPAIGN_TENANTS``, ``CAMPAIGN_APP_ORIGINS``, ``CAMPAIGN_FREQUENCY_CAPS``) had
at start: hex colours and an https logo as ``delivery/email/render.py:Branding`` checks them, an app
origin that is exactly ``scheme://host[:port]`` (http only for loopback, as ``render.py`` allows it).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from email.utils import parseaddr
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.frequency_cap import CapChannel, ChannelCap
from campaign_engine.domain.patterns import EMAIL_PATTERN
from campaign_engine.domain.priority import DEFAULT_WEIGHT, Weight
from campaign_engine.domain.tenancy import TenantId

__all__ = [
    "CLEARABLE_TENANT_FIELDS",
    "GUARD_OVERRIDE_FIELDS",
    "Approval",
    "GuardOverrides",
    "LayoutPatch",
    "LayoutPreviewInput",
    "TenantCreate",
    "TenantLayout",
    "TenantPatch",
    "TenantPublic",
    "TenantSettings",
    "tenant_from_node",
    "tenant_node_properties",
]


_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_EMAIL = re.compile(EMAIL_PATTERN)


def _https_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError("must be an https URL")
    return value


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _app_origin(value: str) -> str:
    """Exactly ``scheme://host[:port]``: every email CTA is ``<origin>/m/<campaignId>``."""
    problem = "must be exactly https://host[:port] (http only for a loopback host)"
    if any(ch.isspace() or ord(ch) < 32 for ch in value) or value.endswith(("?", "#", "/")):
        raise ValueError(problem)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise ValueError(problem) from exc
    host = parts.hostname
    if (
        parts.scheme not in ("https", "http")
        or not host
        or "@" in parts.netloc
        or parts.path
        or parts.query
        or parts.fragment
        or (parts.scheme == "http" and not _is_loopback(host))
    ):
        raise ValueError(problem)
    return value


def _sender(value: str) -> str:
    """A From header: ``local@domain`` or ``Name <local@domain>``, never a second header line."""
    address = parseaddr(value)[1]
    if any(ord(ch) < 32 for ch in value) or not _EMAIL.fullmatch(address):
        raise ValueError("must be an address like news@school.example or 'School <news@school.example>'")
    return value


Text = Annotated[str, StringConstraints(strip_whitespace=True)]
HexColour = Annotated[str, StringConstraints(pattern=r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")]
LogoUrl = Annotated[str, StringConstraints(max_length=2048), AfterValidator(_https_url)]
AppOrigin = Annotated[str, StringConstraints(max_length=512), AfterValidator(_app_origin)]
Sender = Annotated[str, StringConstraints(max_length=320), AfterValidator(_sender)]
TenantName = Annotated[Text, Field(min_length=1, max_length=200)]


# Layout copy is plain text on one line: the renderer escapes it, and no control character (a CR/LF in
# a From header, a NUL) can reach a header or a template. A pattern, so the API schema states it too.
_PLAIN = r"^[^\x00-\x1f\x7f-\x9f]*$"
FooterText = Annotated[Text, StringConstraints(min_length=1, max_length=500, pattern=_PLAIN)]
FooterAddress = Annotated[Text, StringConstraints(min_length=1, max_length=300, pattern=_PLAIN)]
SenderName = Annotated[Text, StringConstraints(min_length=1, max_length=100, pattern=_PLAIN)]
TenantCaps = dict[CapChannel, ChannelCap]


NotificationFormat = Literal["standard", "learncard"]
"""``standard``: the signed ANNOUNCEMENT (Standard Webhooks); ``learncard``: LearnCard's LCNNotification
with a DID-auth bearer (``delivery/notify/lcn.py``)."""


class _Strict(CamelModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Approval(_Strict):
    """Two-person approval: a dispatch reaching this many recipients needs a second
    publisher. Stored here; enforced by the dispatch use cases."""

    min_recipients: Annotated[int, Field(ge=1, le=100_000_000)]


# --- health guard overrides -------------------------------------------------------
# A tenant's own limits for the health guard (domain/dispatch_health.py); absent = CAMPAIGN_GUARD_*.

Rate = Annotated[float, Field(ge=0, le=1)]
GUARD_OVERRIDE_FIELDS = frozenset(
    {"guardMaxHardBounceRate", "guardMaxComplaintRate", "guardMaxRejectionRate"}
)


class GuardOverrides(CamelModel):
    """Rates in 0..1 above which this tenant's dispatches pause themselves; ``null`` clears one."""

    guard_max_hard_bounce_rate: Rate | None = None
    guard_max_complaint_rate: Rate | None = None
    guard_max_rejection_rate: Rate | None = None


# --- end of the health guard overrides -------------------------------------------------------------


class TenantSettings(_Strict, GuardOverrides):
    """What an admin sets on a tenant; a missing colour is the built-in default of ``Branding``."""

    name: TenantName
    logo_url: LogoUrl | None = None
    primary_color: HexColour | None = None
    text_color: HexColour | None = None
    app_origin: AppOrigin | None = None
    email_from: Sender | None = None
    frequency_caps: TenantCaps = Field(default_factory=dict)
    approval: Approval | None = None
    footer_text: FooterText | None = None
    footer_address: FooterAddress | None = None
    sender_name: SenderName | None = None
    click_tracking: bool = True
    """The email CTA links through ``/c`` (first-party click tracking); off, directly."""
    allow_critical: bool = True
    """Whether its publishers may make a campaign ``critical`` (skips quiet hours and caps)."""
    weight: Weight = DEFAULT_WEIGHT
    """Its share of the worker within a lane, against other tenants with work (domain/priority.py)."""
    notification_format: NotificationFormat | None = None
    """What its notification POSTs look like (``NOTIFICATIONS_FORMAT`` where unset)."""

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class TenantCreate(TenantSettings):
    tenant_id: TenantId


CLEARABLE_TENANT_FIELDS = GUARD_OVERRIDE_FIELDS | frozenset(
    {
        "logoUrl",
        "primaryColor",
        "textColor",
        "appOrigin",
        "emailFrom",
        "approval",
        "footerText",
        "footerAddress",
        "senderName",
        "notificationFormat",
    }
)


class TenantPatch(GuardOverrides):
    """A partial update: omitted fields are kept, ``null`` clears an optional field (``frequencyCaps``
    is cleared with ``{}``; ``name`` cannot be cleared)."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: Annotated[str, Field(min_length=1, max_length=64)]
    name: TenantName | None = None
    logo_url: LogoUrl | None = None
    primary_color: HexColour | None = None
    text_color: HexColour | None = None
    app_origin: AppOrigin | None = None
    email_from: Sender | None = None
    frequency_caps: TenantCaps | None = None
    approval: Approval | None = None
    footer_text: FooterText | None = None
    footer_address: FooterAddress | None = None
    sender_name: SenderName | None = None
    click_tracking: bool = True
    """Sent or omitted, never null: on or off."""
    allow_critical: bool = True
    weight: Weight = DEFAULT_WEIGHT
    """Sent or omitted, never null, like ``clickTracking``."""
    notification_format: NotificationFormat | None = None

    def changes(self) -> dict[str, Any]:
        """The fields the caller sent, by wire name, in wire form, with ``None`` meaning "clear"."""
        sent = self.model_fields_set - {"tenant_id"}
        return self.model_dump(mode="json", by_alias=True, include=sent)


class TenantLayout(CamelModel):
    """The email layout of a tenant, the part of its settings its own admins may edit:
    logo, colours, footer copy and the From display name. Every field optional: ``null`` clears it, and
    a cleared field renders as the built-in default (no footer line, EMAIL_FROM's name)."""

    model_config = ConfigDict(extra="forbid")

    logo_url: LogoUrl | None = None
    primary_color: HexColour | None = None
    text_color: HexColour | None = None
    footer_text: FooterText | None = None
    footer_address: FooterAddress | None = None
    sender_name: SenderName | None = None

    def changes(self) -> dict[str, Any]:
        """The fields the caller sent, by wire name, with ``None`` meaning "clear"."""
        return self.model_dump(mode="json", by_alias=True, include=self.model_fields_set - {"tenant_id"})


class LayoutPatch(TenantLayout):
    """``tenants.updateLayout``: a partial patch of one tenant's layout, nothing else of its record."""

    tenant_id: Annotated[str, Field(min_length=1, max_length=64)]


class LayoutPreviewInput(CamelModel):
    """``tenants.previewLayout``: the stored layout, or ``layout`` (a proposed patch) applied over it."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: Annotated[str, Field(min_length=1, max_length=64)]
    layout: TenantLayout | None = None


class TenantPublic(TenantSettings):
    tenant_id: str
    created_at: str
    updated_at: str


def tenant_node_properties(settings: TenantSettings) -> dict[str, Any]:
    """The node's properties: scalars flat, caps and approval as JSON (maps are no property values);
    a cleared field is ``null``, which ``SET t += $props`` removes."""
    wire = settings.wire()
    return {
        **{k: v for k, v in wire.items() if k not in ("frequencyCaps", "approval")},
        "frequencyCaps": json.dumps(wire["frequencyCaps"], separators=(",", ":"), sort_keys=True),
        "approval": None if wire["approval"] is None else json.dumps(wire["approval"], separators=(",", ":")),
    }


def tenant_from_node(node: Mapping[str, Any]) -> TenantPublic:
    """A stored Tenant node as admins read it."""
    return TenantPublic.model_validate(
        {
            "tenantId": node["tenantId"],
            "name": node["name"],
            "logoUrl": node.get("logoUrl"),
            "primaryColor": node.get("primaryColor"),
            "textColor": node.get("textColor"),
            "appOrigin": node.get("appOrigin"),
            "emailFrom": node.get("emailFrom"),
            "frequencyCaps": json.loads(node.get("frequencyCaps") or "{}"),
            "approval": json.loads(node["approval"]) if node.get("approval") else None,
            "footerText": node.get("footerText"),
            "footerAddress": node.get("footerAddress"),
            "senderName": node.get("senderName"),
            "clickTracking": node.get("clickTracking") is not False,  # absent (an older record) = on
            "allowCritical": node.get("allowCritical") is not False,  # absent = allowed
            "weight": node.get("weight") or DEFAULT_WEIGHT,
            "notificationFormat": node.get("notificationFormat"),
            **{name: node.get(name) for name in GUARD_OVERRIDE_FIELDS},
            "createdAt": node["createdAt"],
            "updatedAt": node["updatedAt"],
        }
    )
