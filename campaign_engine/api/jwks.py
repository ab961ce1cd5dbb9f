"""The identity provider's key set (``AUTH_JWKS_URL``): fetched rarely, whatever tokens arrive.

Anyone can forge a token naming a ``kid`` we do not hold, so such tokens must not be able to make us
fetch the key set on demand: it is fetched at most once per ``AUTH_JWKS_MIN_REFRESH_SECONDS``
(``TokenVerifier`` in ``api/auth.py`` asks it for the key of each RS256 token it has not verified before).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from campaign_engine.domain.errors import ServiceUnavailable, Unauthorized

__all__ = ["JwksKeys"]

log = logging.getLogger(__name__)

_RETRY_UNLOADED_SECONDS = 5.0  # while no key set is held: one fetch attempt per this long, at most


class JwksKeys:
    """The identity provider's signing keys, fetched at most once per ``min_refresh_seconds``.

    The held set serves every token for that long. After it, the next token refreshes it: one caller
    fetches (under the lock), a caller whose ``kid`` is held goes on with the held keys meanwhile, and
    callers with an unknown ``kid`` wait for that one fetch instead of starting their own. So a burst of
    forged ``kid``s costs at most one fetch per interval, never one per request, and a key rotated in
    at the provider is picked up within the interval. A failed fetch keeps the held keys and counts as
    the interval's attempt. While no set is held (start, provider down) callers get SERVICE_UNAVAILABLE
    and attempts are spaced by a few seconds instead, so recovery does not wait a whole interval.
    """

    def __init__(
        self,
        url: str,
        *,
        min_refresh_seconds: float,
        timeout: float = 5,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        # PyJWKClient only fetches and parses here; its own caches are off, the timing is ours.
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=timeout)
        self._interval = min_refresh_seconds
        self._monotonic = monotonic
        self._keys: dict[str, jwt.PyJWK] = {}  # replaced whole, never mutated: read without the lock
        self._loaded_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = threading.Lock()

    def key_for(self, kid: str | None) -> jwt.PyJWK:
        """The key named ``kid``; ``Unauthorized`` if the set has none, ``ServiceUnavailable`` if no set
        is held at all (the token may be fine)."""
        # A fresh set is the answer. Past the interval one caller fetches; a caller holding its key does
        # not queue behind that fetch, the others wait for its result.
        if not self._fresh() and self._lock.acquire(blocking=not (kid and kid in self._keys)):
            try:
                self._refresh_if_due()
            finally:
                self._lock.release()
        key = self._keys.get(kid) if kid else None  # read after the freshness check: never an older set
        if key is not None:
            return key
        if self._loaded_at is None:
            raise ServiceUnavailable("the identity provider's key set is unreachable")
        raise Unauthorized("invalid token")

    def _fresh(self) -> bool:
        loaded = self._loaded_at
        return loaded is not None and self._monotonic() - loaded < self._interval

    def _refresh_if_due(self) -> None:
        """Fetch unless the last attempt is recent; the caller holds the lock."""
        now = self._monotonic()
        spacing = self._interval if self._loaded_at is not None else _RETRY_UNLOADED_SECONDS
        if self._attempted_at is not None and now - self._attempted_at < min(spacing, self._interval):
            return
        self._attempted_at = now
        try:
            keys = _rs256_signing_keys(self._client.fetch_data())
        # Unreachable, cut off mid-body, not JSON, or no usable signing key.
        except (jwt.PyJWTError, ValueError, OSError) as exc:
            log.warning("auth.jwks_refresh_failed error=%s", type(exc).__name__)
            return
        self._keys = keys
        self._loaded_at = now


def _rs256_signing_keys(document: object) -> dict[str, jwt.PyJWK]:
    """The RS256 signing keys of a fetched key set, by ``kid``. Any other member (an EC or HMAC key, one
    for encryption, one without a ``kid``, a malformed one) is skipped with a warning: verifying a token
    that names it must be a clean 401, never a 500. Raises ``ValueError`` when none is left."""
    members = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(members, list):
        raise ValueError("the key set has no 'keys' list")
    keys: dict[str, jwt.PyJWK] = {}
    for index, member in enumerate(members):
        reason = _unusable(member)
        if reason is None:
            try:
                key = jwt.PyJWK(member, algorithm="RS256")
            except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
                reason = f"malformed ({type(exc).__name__})"
            else:
                if isinstance(key.key, rsa.RSAPublicKey):
                    keys[member["kid"]] = key
                    continue
                reason = "not an RSA public key"
        log.warning("auth.jwks_key_skipped index=%d reason=%s", index, reason)
    if not keys:
        raise ValueError("the key set holds no usable RS256 signing key")
    return keys


def _unusable(member: object) -> str | None:
    if not isinstance(member, dict):
        return "not a JSON object"
    if not isinstance(member.get("kid"), str) or not member["kid"]:
        return "no kid"
    if member.get("use", "sig") != "sig":
        return "not a signing key"
    if member.get("kty") != "RSA" or member.get("alg", "RS256") != "RS256":
        return "not an RS256 key"
    return None
