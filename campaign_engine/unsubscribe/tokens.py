"""Unsubscribe tokens: the only authority the anonymous unsubscribe endpoints accept.

A token is an itsdangerous signature (HMAC-SHA256, a dedicated salt) over ``{"v": 2, "u": <id>}``, where
``u`` is the profile's ``campaignUnsubscribeId``: a random id allocated once per profile, never its
profileId, name or address. So renaming a profile or changing its email keeps its links working, and a
deleted profile's links can never act on another account (a recreated profile gets a fresh id).

Since per-organisation opt-outs a link names the tenant whose email carried it too: version 3 is
``{"v": 3, "u": <id>, "t": <tenantId>}`` and opts the person out of that tenant's email (or, when they
choose it on the page, of every tenant's). A version-2 link (sent before) names no tenant and keeps
its meaning: the person's deployment-wide opt-out.

A link also names the campaign whose email carried it, so the opt-out is counted for that campaign
(getStats' ``unsubscribed``, the recipients export): version 4 is ``{"v": 4, "t": <tenantId>, "c":
<campaign storage id>, "a": <its createdAt>, "u": <id>}``. The campaign is signed with the rest, so
nobody can make an opt-out count for a campaign of their choosing, and its incarnation (``createdAt``)
keeps a link of a deleted campaign from counting for one recreated under the same id. A version-3 link
(sent before) keeps working and counts for no campaign.

Tokens do not expire: a link in an old email must still work after the campaign is archived or deleted.
Rotating ``CAMPAIGN_UNSUBSCRIBE_SECRET`` therefore invalidates every link already sent; do it only when
the secret leaked. Version 1 tokens (legacy) and unknown versions are refused. A token grants exactly one
power, opting its profile out of announcement email, and it must never be logged.

Web-view tokens (``WebViewTokens``) use the same secret under their own salt: they name
the same durable id plus a campaign and grant reading that campaign's email as that recipient got it.

Click tokens (``ClickTokens``) are the third kind, under a third salt: they name the same
durable id, a campaign incarnation (storage id and ``createdAt``) and the CTA's destination URL, which
they pin: ``/c`` redirects only to the URL the token was signed for.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import orjson

from campaign_engine.config import Settings
from campaign_engine.domain.errors import BadRequest
from campaign_engine.unsubscribe.click_tokens import CLICK_PATH, ClickTokens
from campaign_engine.unsubscribe.signing import PrefixSigner, SignedPayloads, valid_id

__all__ = [
    "CAMPAIGN_TOKEN_VERSION",
    "TENANT_TOKEN_VERSION",
    "TOKEN_VERSION",
    "UNSUBSCRIBE_SALT",
    "WEB_VIEW_PATH",
    "WEB_VIEW_SALT",
    "InvalidUnsubscribeToken",
    "LinkCampaign",
    "UnsubscribeLink",
    "UnsubscribeTokens",
    "WebViewTokens",
    "click_url",
    "list_unsubscribe_headers",
    "unsubscribe_url",
    "web_view_url",
]

UNSUBSCRIBE_SALT = "campaign-engine/announcement-unsubscribe"
TOKEN_VERSION = 2
TENANT_TOKEN_VERSION = 3
CAMPAIGN_TOKEN_VERSION = 4
WEB_VIEW_SALT = "campaign-engine/announcement-web-view"
WEB_VIEW_VERSION = 1
WEB_VIEW_PATH = "/campaigns/view"


class InvalidUnsubscribeToken(BadRequest):
    """Tampered, truncated, signed with another secret or purpose, or of a version we do not accept."""

    def __init__(self) -> None:
        super().__init__("this unsubscribe link is not valid")


@dataclass(frozen=True)
class LinkCampaign:
    """The campaign incarnation whose email carried a link: its storage id and ``createdAt``."""

    campaign_id: str
    created_at: str


@dataclass(frozen=True)
class UnsubscribeLink:
    """What a verified unsubscribe token names: the person's durable id, the tenant whose email
    carried the link (None for a version-2 link, which predates per-tenant opt-outs) and its campaign
    (None before version 4)."""

    unsubscribe_id: str
    tenant_id: str | None
    campaign: LinkCampaign | None = None


class UnsubscribeTokens:
    """Issues and reads unsubscribe tokens (version 4 naming a tenant and a campaign, version 3 a
    tenant, version 2 neither) under one secret."""

    def __init__(self, secret: str) -> None:
        self._signed = SignedPayloads(secret, salt=UNSUBSCRIBE_SALT)
        self.web_view = WebViewTokens(secret)
        """The web-view tokens under the same secret (its own salt): one key to configure and rotate."""
        self.clicks = ClickTokens(secret)
        """The click tokens, likewise (a third salt)."""
        self._campaign_heads: dict[tuple[str, str, str], PrefixSigner] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> UnsubscribeTokens:
        settings.require_unsubscribe()
        assert settings.campaign_unsubscribe_secret is not None  # checked by require_unsubscribe
        return cls(settings.campaign_unsubscribe_secret.get_secret_value())

    def issue(self, unsubscribe_id: str, tenant_id: str | None = None) -> str:
        """A link for the email of ``tenant_id`` (version 3); without one, a version-2 link (tests, and
        the shape links sent before per-tenant opt-outs have)."""
        if not valid_id(unsubscribe_id):
            raise ValueError("unsubscribe id must be 1-128 characters")
        if tenant_id is None:
            return self._signed.sign({"v": TOKEN_VERSION, "u": unsubscribe_id})
        if not valid_id(tenant_id):
            raise ValueError("tenant id must be 1-128 characters")
        return self._signed.sign({"v": TENANT_TOKEN_VERSION, "u": unsubscribe_id, "t": tenant_id})

    def issue_for_campaign(self, unsubscribe_id: str, tenant_id: str, campaign: LinkCampaign) -> str:
        """A version-4 link: the email of ``campaign`` in ``tenant_id``. Everything but the recipient's
        id is the same for a whole page, so that part is encoded and hashed once (``PrefixSigner``). A
        link too long to sign plain (ids far past any real one) names no campaign (version 3)."""
        if not valid_id(unsubscribe_id):
            raise ValueError("unsubscribe id must be 1-128 characters")
        key = (tenant_id, campaign.campaign_id, campaign.created_at)
        signer = self._campaign_heads.get(key)
        if signer is None:
            if not all(valid_id(v) for v in (tenant_id, campaign.campaign_id, campaign.created_at)):
                return self.issue(unsubscribe_id, tenant_id)
            fixed = {"v": CAMPAIGN_TOKEN_VERSION, "t": tenant_id, "c": campaign.campaign_id}
            head = orjson.dumps({**fixed, "a": campaign.created_at})[:-1] + b","
            # JSON allows spaces between members: pad to a multiple of 3 bytes (PrefixSigner's rule).
            head += b" " * (-(len(head) + len(b'"u":')) % 3) + b'"u":'
            signer = PrefixSigner(self._signed, head)
            if len(self._campaign_heads) >= 256:
                self._campaign_heads.clear()  # bounded: a walk sends one campaign at a time
            self._campaign_heads[key] = signer
        try:
            return signer.sign(orjson.dumps(unsubscribe_id) + b"}")
        except ValueError:
            return self.issue(unsubscribe_id, tenant_id)

    def read(self, token: str) -> str:
        """The ``campaignUnsubscribeId`` the token was issued for; ``InvalidUnsubscribeToken`` otherwise."""
        return self.read_link(token).unsubscribe_id

    def read_link(self, token: str) -> UnsubscribeLink:
        """The id and tenant the token was issued for; ``InvalidUnsubscribeToken`` otherwise."""
        payload = self._signed.load(token, {"v", "u"}, optional=_OPTIONAL_KEYS)
        if payload is None:
            raise InvalidUnsubscribeToken()
        version, unsubscribe_id, tenant_id = payload["v"], payload["u"], payload.get("t")
        if type(version) is not int or _KEYS_OF.get(version) != set(payload) - {"v", "u"}:
            raise InvalidUnsubscribeToken()
        if not all(valid_id(payload[k]) for k in payload if k != "v"):
            raise InvalidUnsubscribeToken()
        campaign = None
        if version == CAMPAIGN_TOKEN_VERSION:
            campaign = LinkCampaign(str(payload["c"]), str(payload["a"]))
        return UnsubscribeLink(str(unsubscribe_id), None if tenant_id is None else str(tenant_id), campaign)


_OPTIONAL_KEYS = frozenset({"t", "c", "a"})
# The keys each accepted version carries besides "v" and "u" (version 1 and unknown ones: refused).
_KEYS_OF: dict[int, set[str]] = {
    TOKEN_VERSION: set(),
    TENANT_TOKEN_VERSION: {"t"},
    CAMPAIGN_TOKEN_VERSION: {"t", "c", "a"},
}


class WebViewTokens:
    """Tokens of ``/campaigns/view``: ``{"w": 1, "u": <campaignUnsubscribeId>, "c": <campaign id>}`` under
    ``WEB_VIEW_SALT``. They grant reading one campaign's email as one recipient's variant, nothing more;
    never expiring, like unsubscribe links. Neither kind verifies as the other: the salts differ (so do
    the signing keys derived from them) and so do the payload keys."""

    def __init__(self, secret: str) -> None:
        self._signed = SignedPayloads(secret, salt=WEB_VIEW_SALT)

    def issue(self, unsubscribe_id: str, campaign_id: str) -> str:
        if not valid_id(unsubscribe_id) or not valid_id(campaign_id):
            raise ValueError("web-view ids must be 1-128 characters")
        return self._signed.sign({"w": WEB_VIEW_VERSION, "u": unsubscribe_id, "c": campaign_id})

    def read(self, token: object) -> tuple[str, str] | None:
        """(campaignUnsubscribeId, campaign id), or None for anything but a valid web-view token."""
        payload = self._signed.load(token, {"w", "u", "c"})
        if payload is None or type(payload["w"]) is not int or payload["w"] != WEB_VIEW_VERSION:
            return None
        if not valid_id(payload["u"]) or not valid_id(payload["c"]):
            return None
        return str(payload["u"]), str(payload["c"])


def click_url(domain_name: str, token: str) -> str:
    """The tracked CTA link: ``/c`` on our own domain, which redirects to the URL the token pins."""
    return f"{_origin(domain_name)}{CLICK_PATH}?token={quote(token, safe='')}"


def unsubscribe_url(domain_name: str, token: str) -> str:
    """The link for ``List-Unsubscribe`` and the email footer (the page renders a form on GET)."""
    return f"{_origin(domain_name)}/campaigns/unsubscribe?token={quote(token, safe='')}"


def web_view_url(domain_name: str, token: str) -> str:
    """The link to the recipient's web view of one campaign's email."""
    return f"{_origin(domain_name)}{WEB_VIEW_PATH}?token={quote(token, safe='')}"


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _origin(domain_name: str) -> str:
    """https, except for a loopback ``DOMAIN_NAME`` (``make dev`` serves plain http on 127.0.0.1): a link
    in an email caught in development must open, and no deployment mails from a loopback name."""
    host = (urlsplit(f"//{domain_name}").hostname or "").lower()
    return ("http://" if host in _LOOPBACK else "https://") + domain_name


def list_unsubscribe_headers(url: str) -> dict[str, str]:
    """RFC 8058 headers for ``unsubscribe_url``'s link; the sender's DKIM signature must cover both."""
    return {
        "List-Unsubscribe": f"<{url}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }
