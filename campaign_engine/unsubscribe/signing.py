"""The signing every anonymous token shares (unsubscribe, web view, click): small JSON objects under one
secret and a salt per purpose, written without itsdangerous' per-call overhead and read by it."""

from __future__ import annotations

import binascii
import hashlib
import hmac
from typing import Any

import orjson
from itsdangerous import BadSignature, URLSafeSerializer

__all__ = ["PrefixSigner", "SignedPayloads", "valid_id"]

_MAX_TOKEN_CHARS = 512  # a v2 token for a UUID is ~110 characters; anything far longer is not ours
_MAX_ID_CHARS = 128


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


class PrefixSigner:
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
