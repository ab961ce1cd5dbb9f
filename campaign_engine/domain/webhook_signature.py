"""Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256, ``v1,<base64>``.

The signed content is ``"{webhook-id}.{webhook-timestamp}.{body}"``. The secret is written the
standard way, ``whsec_<base64>``, and signs with its decoded bytes (at least 24, the spec's minimum). Any
other spelling is refused: a plain text secret would be read as base64 by an official Standard Webhooks
library and key a different HMAC, so a receiver using one could never verify us.
``webhook-id`` is the delivery id and stays stable across retries; the timestamp is fresh on every
attempt and bounds replays to the tolerance window.

Pure functions: the caller passes ``now`` (unix seconds), so tests need no clock tricks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "MIN_SECRET_BYTES",
    "secret_bytes",
    "sign",
    "signed_headers",
    "verify",
]

DEFAULT_TOLERANCE_SECONDS = 300
MIN_SECRET_BYTES = 24  # Standard Webhooks: secrets are 24 to 64 random bytes
_PREFIX = "whsec_"
_VERSION = "v1"


def secret_bytes(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret; ``ValueError`` (never echoing it) if it is unusable."""
    if not secret:
        raise ValueError("webhook secret is empty")
    if not secret.startswith(_PREFIX):
        raise ValueError(
            "webhook secret must be a Standard Webhooks secret: whsec_ followed by the base64 of"
            f" {MIN_SECRET_BYTES}+ random bytes"
        )
    try:
        key = base64.b64decode(secret[len(_PREFIX) :], validate=True)
    except binascii.Error:
        # ``from None``: the decoder's message could quote part of the secret.
        raise ValueError("webhook secret starts with whsec_ but the rest is not valid base64") from None
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"webhook secret holds {len(key)} key bytes; at least {MIN_SECRET_BYTES} are needed")
    return key


def _digest(key: bytes, *, msg_id: str, timestamp: str, body: bytes) -> str:
    content = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    return base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


def sign(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value for one attempt: ``v1,<base64 HMAC-SHA256>``."""
    return f"{_VERSION},{_digest(secret_bytes(secret), msg_id=msg_id, timestamp=str(timestamp), body=body)}"


def verify(
    secret: str,
    *,
    msg_id: str,
    timestamp: str,
    signature_header: str,
    body: bytes,
    now: int,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """True when ``timestamp`` is within ``tolerance`` of ``now`` and any ``v1`` signature matches.

    The header may carry several space-separated signatures (secret rotation); other versions are
    skipped. Comparison is constant time. ``body`` must be the raw request bytes.
    """
    # int() would accept " 12", "+12" and "1_2": only plain digits name one signed string.
    if not msg_id or not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return False
    if abs(now - int(timestamp)) > tolerance:
        return False
    expected = _digest(secret_bytes(secret), msg_id=msg_id, timestamp=timestamp, body=body).encode()
    matched = False
    for candidate in signature_header.split():
        version, sep, value = candidate.partition(",")
        if sep and version == _VERSION and value.isascii():
            # No early exit: every candidate costs the same whether or not an earlier one matched.
            matched |= hmac.compare_digest(expected, value.encode())
    return matched


def signed_headers(secret: str | Sequence[str], *, msg_id: str, body: bytes, now: int) -> dict[str, str]:
    """The three Standard Webhooks headers for one POST of ``body`` at ``now`` (unix seconds).

    Several secrets (a rotation's overlap) give one space-separated signature each, as the spec allows:
    a receiver holding either verifies."""
    keys = (secret,) if isinstance(secret, str) else secret
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(now),
        "webhook-signature": " ".join(sign(k, msg_id=msg_id, timestamp=now, body=body) for k in keys),
    }
