"""Click tokens (``/c``): the third kind of anonymous token, under a third salt. They name the
recipient's durable id, a campaign incarnation (storage id and ``createdAt``) and the CTA's destination
URL, which they pin: ``/c`` redirects only to the URL the token was signed for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from campaign_engine.unsubscribe.signing import PrefixSigner, SignedPayloads, valid_id

__all__ = ["CLICK_CONFIRM_PATH", "CLICK_PATH", "CLICK_SALT", "Click", "ClickTokens"]

CLICK_SALT = "campaign-engine/announcement-email-click"
CLICK_VERSION = 1
CLICK_PATH = "/c"
CLICK_CONFIRM_PATH = "/c/go"
# A click token carries its destination URL (an app origin of up to 512 characters and the campaign's
# path), so it may be far longer than the other kinds; still bounded, and still signed plain.
_MAX_CLICK_TOKEN_CHARS = 4096
_MAX_URL_CHARS = 2048


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
        self._links: dict[tuple[str, str, str, bool], PrefixSigner] = {}

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

    def _link(self, campaign_id: str, created_at: str, url: str, test: bool) -> PrefixSigner:
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
        return PrefixSigner(self._signed, head)

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
