"""Unsubscribe tokens: the only authority the anonymous unsubscribe endpoints accept.

A token is an itsdangerous signature (HMAC-SHA256, a dedicated salt) over ``{"v": 2, "u": <id>}``, where
``u`` is the profile's ``campaignUnsubscribeId``: a random id allocated once per profile, never its
profileId, name or address. So renaming a profile or changing its email keeps its links working, and a
deleted profile's links can never act on another account (a recreated profile gets a fresh id).

Since per-organisation opt-outs a link names the tenant whose email carried it too: version 3 is
``{"v": 3, "u": <id>, "t": <tenantId>}`` and opts the person out of that tenant's email (or, when they
choose it on the page, of every tenant's). A version-2 link (sent before) names no tenant and keeps
its meaning: the person's deployment-wide opt-out.

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

import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import orjson
from itsdangerous import BadSignature, URLSafeSerializer

from campaign_engine.config import Settings
from campaign_engine.domain.errors import BadRequest

__all__ = [
    "CLICK_CONFIRM_PATH",
    "CLICK_PATH",
    "CLICK_SALT",
    "TENANT_TOKEN_VERSION",
    "TOKEN_VERSION",
    "UNSUBSCRIBE_SALT",
    "WEB_VIEW_PATH",
    "WEB_VIEW_SALT",
    "Click",
    "ClickTokens",
    "InvalidUnsubscribeToken",
    "SignedPayloads",
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
WEB_VIEW_SALT = "campaign-engine/announcement-web-view"
WEB_VIEW_VERSION = 1
WEB_VIEW_PATH = "/campaigns/view"
CLICK_SALT = "campaign-engine/announcement-email-click"
CLICK_VERSION = 1
CLICK_PATH = "/c"
CLICK_CONFIRM_PATH = "/c/go"
# A click token carries its destination URL (an app origin of up to 512 characters and the campaign's
# path), so it may be far longer than the other kinds; still bounded, and still signed plain.
_MAX_CLICK_TOKEN_CHARS = 4096
_MAX_URL_CHARS = 2048
_MAX_TOKEN_CHARS = 512  # a v2 token for a UUID is ~110 characters; anything far longer is not ours
_MAX_ID_CHARS = 128


class InvalidUnsubscribeToken(BadRequest):
    """Tampered, truncated, signed with another secret or purpose, or of a version we do not accept."""

    def __init__(self) -> None:
        super().__init__("this unsubscribe link is not valid")


class SignedPayloads:
    """Signs and reads small JSON objects under one secret and one salt (purpose): the machinery of every
    token the anonymous pages accept. A token signed for one salt never verifies under another."""

    def __init__(self, secret: str, *, salt: str, max_chars: int = _MAX_TOKEN_CHARS) -> None:
        if not secret:
            raise ValueError("an unsubscribe secret is required")
        self._serializer = URLSafeSerializer(
            secret,
            salt=salt,
            signer_kwargs={"digest_method": hashlib.sha256, "key_derivation": "hmac"},
        )
        # itsdangerous derives the signing key (an HMAC of the salt) on every signature and encodes the
        # payload through json and its Serializer classes; an email page signs hundreds (~14 µs each, half
        # of composing a message), so ``issue`` keeps the keyed HMAC and writes the token itself
        # (tests/unit/test_unsubscribe_tokens.py holds it to itsdangerous' bytes).
        self._mac = hmac.new(self._serializer.make_signer().derive_key(), digestmod=hashlib.sha256)
        self._max_chars = max_chars
        self._max_plain = max_chars - 44  # with "." and the 43-character signature

    def sign(self, obj: dict[str, Any]) -> str:
        # Signed plain: itsdangerous tries zlib on every payload and keeps the compressed form when
        # shorter, but a UUID's payload never is (not one of 300,000 random ones) and zlib.compress sets
        # up ~256 KiB of state per call (12-35 µs, more than the rest of a token). Its ``loads`` reads
        # both forms; only a payload too long to sign plain takes its rule (``dump_payload``). orjson's
        # bytes are its compact JSON's (``ensure_ascii=False``, no spaces).
        payload = _base64(orjson.dumps(obj))
        if len(payload) > self._max_plain:
            payload = self._serializer.dump_payload(obj)
        mac = self._mac.copy()
        mac.update(payload)
        return (payload + b"." + _base64(mac.digest())).decode("ascii")

    @property
    def max_plain(self) -> int:
        """The longest base64 payload signed plain (longer ones take itsdangerous' compressed form)."""
        return self._max_plain

    def mac_after(self, payload_head: bytes) -> hmac.HMAC:
        """The keyed HMAC having read ``payload_head``: a copy finishes a payload that begins with it."""
        mac = self._mac.copy()
        mac.update(payload_head)
        return mac

    def load(
        self, token: object, keys: set[str], optional: frozenset[str] = frozenset()
    ) -> dict[str, Any] | None:
        """The signed object when ``token`` is ours, well formed and has exactly ``keys`` (and perhaps
        some of ``optional``); else None."""
        if not isinstance(token, str) or not token or len(token) > self._max_chars:
            return None
        try:
            payload: Any = self._serializer.loads(token)
        except BadSignature:  # also covers BadPayload (valid signature, undecodable JSON)
            return None
        if not isinstance(payload, dict) or set(payload) - optional != keys:
            return None
        return payload


class _PrefixSigner:
    """Signs payloads that all begin with ``head`` (a multiple of 3 bytes long, so its base64 is the
    prefix of theirs): the head's encoding and its share of the HMAC are computed once. The tokens are
    the ones ``SignedPayloads.sign`` would make of the same bytes, and its ``load`` reads them."""

    def __init__(self, signed: SignedPayloads, head: bytes) -> None:
        if len(head) % 3:
            raise ValueError("the constant head must be a multiple of 3 bytes")
        self._head = _base64(head)
        self._mac = signed.mac_after(self._head)
        self._max_tail = signed.max_plain - len(self._head)

    def sign(self, rest: bytes) -> str:
        tail = _base64(rest)
        if len(tail) > self._max_tail:
            raise ValueError("the payload is too long to sign plain")
        mac = self._mac.copy()
        mac.update(tail)
        return (self._head + tail + b"." + _base64(mac.digest())).decode("ascii")


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _base64(data: bytes) -> bytes:
    """itsdangerous' ``base64_encode`` (URL-safe, unpadded) in one C call and a translate: an email
    signs two tokens (unsubscribe and web view) per message."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=")


def valid_id(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= _MAX_ID_CHARS


@dataclass(frozen=True)
class UnsubscribeLink:
    """What a verified unsubscribe token names: the person's durable id and the tenant whose email
    carried the link (None for a version-2 link, which predates per-tenant opt-outs)."""

    unsubscribe_id: str
    tenant_id: str | None


class UnsubscribeTokens:
    """Issues and reads unsubscribe tokens (version 3 naming a tenant, version 2 not) under one secret."""

    def __init__(self, secret: str) -> None:
        self._signed = SignedPayloads(secret, salt=UNSUBSCRIBE_SALT)
        self.web_view = WebViewTokens(secret)
        """The web-view tokens under the same secret (its own salt): one key to configure and rotate."""
        self.clicks = ClickTokens(secret)
        """The click tokens, likewise (a third salt)."""

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

    def read(self, token: str) -> str:
        """The ``campaignUnsubscribeId`` the token was issued for; ``InvalidUnsubscribeToken`` otherwise."""
        return self.read_link(token).unsubscribe_id

    def read_link(self, token: str) -> UnsubscribeLink:
        """The id and tenant the token was issued for; ``InvalidUnsubscribeToken`` otherwise."""
        payload = self._signed.load(token, {"v", "u"}, optional=frozenset({"t"}))
        if payload is None:
            raise InvalidUnsubscribeToken()
        version, unsubscribe_id, tenant_id = payload["v"], payload["u"], payload.get("t")
        if type(version) is not int or version not in (TOKEN_VERSION, TENANT_TOKEN_VERSION):
            raise InvalidUnsubscribeToken()
        if (version == TENANT_TOKEN_VERSION) != ("t" in payload):
            raise InvalidUnsubscribeToken()
        if not valid_id(unsubscribe_id) or (tenant_id is not None and not valid_id(tenant_id)):
            raise InvalidUnsubscribeToken()
        return UnsubscribeLink(str(unsubscribe_id), None if tenant_id is None else str(tenant_id))


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


@dataclass(frozen=True)
class Click:
    """What a verified click token names: the recipient's durable id, the campaign incarnation, the pinned
    destination, and whether it came in an admin's self-test (which redirects and records nothing)."""

    unsubscribe_id: str
    campaign_id: str
    campaign_created_at: str
    url: str
    test: bool = False


class ClickTokens:
    """Tokens of ``/c``: ``{"k": 1, "u": <campaignUnsubscribeId>, "c": <campaign id>,
    "t": <campaign createdAt>, "l": <the CTA's URL>}``, plus ``"x": 1`` in a self-test's email, under
    ``CLICK_SALT``. The URL is signed, so a token leads to that URL and nowhere else: any change to it (or
    a token re-signed under another secret or salt) does not verify. No kind verifies as another."""

    def __init__(self, secret: str) -> None:
        self._signed = SignedPayloads(secret, salt=CLICK_SALT, max_chars=_MAX_CLICK_TOKEN_CHARS)
        self._links: dict[tuple[str, str, str, bool], _PrefixSigner] = {}

    def issue(
        self, unsubscribe_id: str, *, campaign_id: str, campaign_created_at: str, url: str, test: bool = False
    ) -> str:
        if not valid_id(unsubscribe_id):
            raise ValueError("click-token ids must be 1-128 characters")
        key = (campaign_id, campaign_created_at, url, test)
        signer = self._links.get(key)
        if signer is None:
            signer = self._link(campaign_id, campaign_created_at, url, test)
            if len(self._links) >= 256:
                self._links.clear()  # crude but bounded: a walk has a link per language and sender
            self._links[key] = signer
        return signer.sign(orjson.dumps(unsubscribe_id) + b"}")

    def _link(self, campaign_id: str, created_at: str, url: str, test: bool) -> _PrefixSigner:
        """The signer of one campaign link's tokens: everything but the recipient's id is the same for
        every message of a page, so it is checked, encoded and hashed once (one more token per
        message must stay within the send's budget; checking the URL alone cost more than signing)."""
        if not (valid_id(campaign_id) and valid_id(created_at)):
            raise ValueError("click-token ids must be 1-128 characters")
        if not _web_url(url):
            raise ValueError("a click token pins an http(s) URL of at most 2048 characters")
        fixed: dict[str, Any] = {"k": CLICK_VERSION, "c": campaign_id, "t": created_at, "l": url}
        if test:
            fixed["x"] = 1
        head = orjson.dumps(fixed)[:-1] + b","
        # JSON allows spaces between members: pad the constant part to a multiple of 3 bytes, so its
        # base64 is a prefix of every token's and the recipient's id is encoded and hashed alone.
        head += b" " * (-(len(head) + len(b'"u":')) % 3) + b'"u":'
        return _PrefixSigner(self._signed, head)

    def read(self, token: object) -> Click | None:
        """What the token names, or None for anything but a valid click token."""
        payload = self._signed.load(token, {"k", "u", "c", "t", "l"}, optional=frozenset({"x"}))
        if payload is None or type(payload["k"]) is not int or payload["k"] != CLICK_VERSION:
            return None
        unsubscribe_id, campaign_id, created_at, url = (payload[k] for k in ("u", "c", "t", "l"))
        if not (valid_id(unsubscribe_id) and valid_id(campaign_id) and valid_id(created_at)):
            return None
        if not _web_url(url) or payload.get("x", 1) != 1:
            return None
        return Click(str(unsubscribe_id), str(campaign_id), str(created_at), str(url), test="x" in payload)


def _web_url(url: object) -> bool:
    """An absolute http(s) URL with a host and nothing that could break a ``Location`` header."""
    if not isinstance(url, str) or not url or len(url) > _MAX_URL_CHARS:
        return False
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return False
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


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
