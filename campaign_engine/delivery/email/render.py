"""Announcement email rendering: tenant branding, the campaign's copy, the CTA link and the unsubscribe link.

Admin-authored text is never trusted as HTML: Jinja2 autoescapes the HTML part, the body keeps its line
breaks as ``<br>`` after escaping, and only https images are embedded. Links must be http(s) so that
no ``javascript:`` URL can reach an ``href``.

The CTA URL and branding come from the tenant records (``graph/tenant_directory.py``), in the shapes of
``CAMPAIGN_APP_ORIGINS`` / ``CAMPAIGN_TENANTS``, the settings that seeded them. They are resolved and
validated before the worker takes any claim, so a misconfigured tenant fails loudly (``EmailConfigError``)
instead of burning claims on emails that cannot be built.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.locale import direction
from campaign_engine.unsubscribe.footer import footer_for

__all__ = [
    "DEFAULT_BRANDING",
    "Branding",
    "EmailConfigError",
    "EmailCopyLike",
    "RenderedEmail",
    "branding_for",
    "cta_url_for",
    "render_email",
]

_HEX_COLOUR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

_env = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)


class EmailConfigError(BadRequest):
    """The tenant's origin or branding is missing or malformed; fix the settings before dispatching."""


class EmailCopyLike(Protocol):
    """The email copy of a campaign, as the campaign model carries it (camelCase, as on the wire)."""

    @property
    def subject(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def ctaLabel(self) -> str: ...
    @property
    def heroImageUrl(self) -> str | None: ...


@dataclass(frozen=True)
class Branding:
    """How a tenant's emails look, its layout: a value the renderer takes, built from the
    tenant record. Colours are ``#rgb``/``#rrggbb``; the logo must be https; footer copy and the sender
    name are plain text, escaped like every other copy."""

    name: str
    primary_colour: str = "#1f6feb"
    text_colour: str = "#1f2328"
    logo_url: str | None = None
    footer_text: str | None = None
    footer_address: str | None = None
    sender_name: str | None = None
    """The From display name; ``compose.py`` pairs it with the tenant's address."""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise EmailConfigError("tenant branding needs a name")
        for label, colour in (("primaryColor", self.primary_colour), ("textColor", self.text_colour)):
            if not _HEX_COLOUR.match(colour):
                raise EmailConfigError(f"tenant branding {label} must be a hex colour like #1f6feb")
        if self.logo_url is not None and not _is_https_url(self.logo_url):
            raise EmailConfigError("tenant branding logoUrl must be an https URL")


DEFAULT_BRANDING = Branding(name="Announcements")


@dataclass(frozen=True)
class RenderedEmail:
    subject: str
    html: str
    text: str


def render_email(
    *,
    copy: EmailCopyLike,
    branding: Branding,
    cta_url: str,
    unsubscribe_url: str | None,
    lang: str = "en",
    web_view_url: str | None = None,
) -> RenderedEmail:
    """Render both parts in language ``lang`` (its ``lang`` and ``dir`` on the root: a right-to-left
    language is laid out mirrored; the footer in it when the unsubscribe page speaks it). Without an
    unsubscribe link (the web view) the footer says where to find it. Raises EmailConfigError when a
    link is not http(s)."""
    for label, url in (("CTA", cta_url), ("unsubscribe", unsubscribe_url), ("web-view", web_view_url)):
        if url is not None and not _is_web_url(url):
            raise EmailConfigError(f"the {label} link must be an http(s) URL")
    footer = footer_for(lang)
    hero = copy.heroImageUrl if copy.heroImageUrl and _is_https_url(copy.heroImageUrl) else None
    body_lines = copy.body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    context = {
        "subject": copy.subject,
        "title": copy.title,
        "body_html": Markup("<br>\n").join(escape(line) for line in body_lines),
        "body_text": "\n".join(body_lines),
        "cta_label": copy.ctaLabel,
        "cta_url": cta_url,
        "hero_url": hero,
        "unsubscribe_url": unsubscribe_url,
        "web_view_url": web_view_url,
        "footer": footer,
        "footer_received": footer.received.format(name=branding.name),
        "brand": branding,
        "lang": lang,
        "direction": direction(lang),
        "align": "right" if direction(lang) == "rtl" else "left",
    }
    return RenderedEmail(
        subject=" ".join(copy.subject.split()),  # no CR/LF may reach a header
        html=_env.get_template("email.html").render(context),
        text=_env.get_template("email.txt").render(context),
    )


def cta_url_for(
    *, origins: Mapping[str, str], tenant_id: str | None, default_tenant: str, campaign_id: str
) -> str:
    """The tenant app's campaign page, tagged for analytics. Campaigns without a tenant use the default."""
    tenant = tenant_id or default_tenant
    origin = origins.get(tenant)
    if not isinstance(origin, str) or not origin:
        raise EmailConfigError(
            f"tenant {tenant!r} has no appOrigin: set it with tenants.update"
            " (CAMPAIGN_APP_ORIGINS only seeds it)"
        )
    _check_origin(origin, tenant)
    cid = quote(campaign_id, safe="")
    return f"{origin}/m/{cid}?utm_source=email&utm_campaign={cid}"


def branding_for(tenants: Mapping[str, Any], tenant_id: str | None, default_tenant: str) -> Branding:
    """The tenant's branding; an unknown tenant gets the default tenant's, else the built-in default.

    A tenant entry is ``{"name", "logoUrl"?, "primaryColor"?, "textColor"?, "footerText"?,
    "footerAddress"?, "senderName"?}``; a malformed entry raises
    EmailConfigError rather than silently sending unbranded mail.
    """
    for candidate in (tenant_id or default_tenant, default_tenant):
        entry = tenants.get(candidate)
        if entry is not None:
            return _branding_from(entry, candidate)
    return DEFAULT_BRANDING


def _branding_from(entry: Any, tenant: str) -> Branding:
    if not isinstance(entry, Mapping):
        raise EmailConfigError(f"CAMPAIGN_TENANTS entry for {tenant!r} must be an object")
    fields: dict[str, Any] = {"name": entry.get("name", tenant)}
    for wire, attr in (
        ("primaryColor", "primary_colour"),
        ("textColor", "text_colour"),
        ("logoUrl", "logo_url"),
        ("footerText", "footer_text"),
        ("footerAddress", "footer_address"),
        ("senderName", "sender_name"),
    ):
        if entry.get(wire) is not None:
            fields[attr] = entry[wire]
    if not all(isinstance(v, str) for v in fields.values()):
        raise EmailConfigError(f"CAMPAIGN_TENANTS entry for {tenant!r} must hold strings")
    return Branding(**fields)


def _check_origin(origin: str, tenant: str) -> None:
    problem = f"CAMPAIGN_APP_ORIGINS[{tenant!r}] must be exactly scheme://host[:port]"
    if any(ch.isspace() or ord(ch) < 32 for ch in origin):
        raise EmailConfigError(problem)
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise EmailConfigError(problem) from exc
    host = parts.hostname
    if (
        parts.scheme not in ("https", "http")
        or not host
        or parts.username is not None
        or parts.password is not None
        or "@" in parts.netloc
        or parts.path
        or parts.query
        or parts.fragment
        or origin.endswith(("?", "#"))
    ):
        raise EmailConfigError(problem)
    if parts.scheme == "http" and not _is_loopback(host):
        raise EmailConfigError(f"CAMPAIGN_APP_ORIGINS[{tenant!r}] must use https (http only for loopback)")


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host) in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
    except ValueError:
        return False


def _is_https_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.hostname) and not any(ch.isspace() for ch in url)


def _is_web_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("https", "http") and bool(parts.hostname) and not any(ch.isspace() for ch in url)
