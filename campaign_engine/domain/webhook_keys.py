"""A receiver's own signing secrets: generated, rotated with an overlap, sealed at rest.

A profile with its own ``notificationsWebhook`` holds a key ring: the current ``whsec_`` secret and,
during a rotation's overlap, the previous one with the moment it stops signing. Every POST carries one
``v1,`` signature per live secret (Standard Webhooks allows several, space-separated), so a receiver can
switch secrets without a gap. The ring is stored sealed (Fernet: AES-128-CBC + HMAC-SHA256) under
``CAMPAIGN_SECRETS_KEY``, so a graph dump alone never reveals a secret; several comma-separated keys
let that key rotate too (the first seals, any opens).

No I/O: callers pass ``now`` (unix seconds).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from campaign_engine.domain.webhook_signature import secret_bytes

__all__ = ["KeyRing", "RingUnreadable", "SecretBox", "generate_secret"]

_SECRET_BYTES = 32  # within Standard Webhooks' 24 to 64
_OPENED_CACHE = 4096  # rings opened per process: most batches go to the same few receivers


def generate_secret() -> str:
    """A fresh ``whsec_`` secret of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


@dataclass(frozen=True)
class KeyRing:
    """``current`` always signs; each of ``previous`` (secret, until) signs while ``now < until``."""

    current: str
    previous: tuple[tuple[str, int], ...] = ()

    def signing(self, now: int) -> tuple[str, ...]:
        return (self.current, *(secret for secret, until in self.previous if now < until))

    def rotated(self, new: str, *, now: int, overlap_seconds: int) -> KeyRing:
        """``new`` signs from now on; the current secret keeps signing for ``overlap_seconds``."""
        kept = tuple((s, u) for s, u in self.previous if now < u)
        if overlap_seconds > 0:
            kept = ((self.current, now + overlap_seconds), *kept)
        return KeyRing(new, kept)

    def _json(self) -> bytes:
        return json.dumps({"current": self.current, "previous": [list(p) for p in self.previous]}).encode()

    @classmethod
    def _from_json(cls, raw: bytes) -> KeyRing:
        data = json.loads(raw)
        return cls(str(data["current"]), tuple((str(s), int(u)) for s, u in data["previous"]))


class RingUnreadable(Exception):
    """A sealed ring that no configured key opens (a missing or changed ``CAMPAIGN_SECRETS_KEY``)."""


class SecretBox:
    """Seals and opens key rings under the settings' key(s); opened rings are cached by ciphertext."""

    def __init__(self, keys: str) -> None:
        """``keys``: one Fernet key or several comma-separated (the first seals). ``ValueError`` (never
        quoting a key) if one is malformed."""
        try:
            fernets = [Fernet(key.strip().encode()) for key in keys.split(",") if key.strip()]
        except ValueError:
            raise ValueError("must be Fernet keys: url-safe base64 of 32 random bytes each") from None
        if not fernets:
            raise ValueError("must name at least one key")
        self._fernet = MultiFernet(fernets)
        self._opened: OrderedDict[str, KeyRing] = OrderedDict()
        self._lock = threading.Lock()  # the worker's delivery threads share one box

    def seal(self, ring: KeyRing) -> str:
        for secret in (ring.current, *(s for s, _ in ring.previous)):
            secret_bytes(secret)  # never seal what could not sign
        return self._fernet.encrypt(ring._json()).decode()

    def open(self, sealed: str) -> KeyRing:
        with self._lock:
            ring = self._opened.get(sealed)
            if ring is not None:
                self._opened.move_to_end(sealed)
                return ring
        try:
            ring = KeyRing._from_json(self._fernet.decrypt(sealed.encode()))
        except (InvalidToken, ValueError, KeyError, TypeError):
            raise RingUnreadable("sealed receiver secrets that CAMPAIGN_SECRETS_KEY does not open") from None
        with self._lock:
            self._opened[sealed] = ring
            if len(self._opened) > _OPENED_CACHE:
                self._opened.popitem(last=False)
        return ring
