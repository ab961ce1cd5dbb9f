"""LearnCard's receiver format: the ``LCNNotification`` body and the DID-auth bearer that signs for it.

In ``learncard`` format (``NOTIFICATIONS_FORMAT``, or a tenant's ``notificationFormat``) every
notification POST (campaign, self-test, guardian copy) is LearnCard's ``LCNNotification`` of type
``ANNOUNCEMENT``: ``to {profileId, did}`` (the profile's stored DID, else LearnCard's did:web alias
``did:web:<DOMAIN_NAME>:users:<profileId>``), ``from {did}`` (the engine's), ``message {title, body}``,
``data.metadata`` with the ids a LearnCard inbox deduplicates by (``campaignId``, ``campaignCreatedAt``,
``campaignTestId``) and the ones this engine's receivers need (dispatch, delivery, variant, locale,
audience), and ``sent``. It carries ``Authorization: Bearer <JWT>`` and no Standard Webhooks headers.

The JWT is a DID-auth presentation as LearnCard's ``getDidAuthVp({proofFormat: 'jwt'})`` makes one:
EdDSA, ``iss`` = ``vp.holder`` = the engine's DID, ``kid`` its key. It names the receiver's origin as
``aud`` and expires, so it is reused for every POST to that origin for ``REUSE_SECONDS`` (signing one
per POST would cost the worker more than the POST) and is never logged.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from urllib.parse import quote, urlsplit

from campaign_engine.did.engine import EngineDid
from campaign_engine.did.jwt import sign_jwt
from campaign_engine.domain.notification import AnnouncementMetadata

__all__ = ["REUSE_SECONDS", "BearerTokens", "lcn_body", "learncard_did"]

REUSE_SECONDS = 60
_LIFETIME = 2 * REUSE_SECONDS  # a token reused near the end of its window still has a window to live
_MAX_HELD = 1024  # origins whose token is held; past it the oldest are forgotten


def learncard_did(profile_id: str, domain: str) -> str:
    """LearnCard's did:web alias of a profile, ``did:web:<domain>:users:<profileId>``."""
    return f"did:web:{quote(domain.strip().lower(), safe='')}:users:{quote(profile_id, safe='')}"


def lcn_body(
    *,
    profile_id: str,
    did: str,
    sender_did: str,
    title: str,
    body: str,
    metadata: AnnouncementMetadata,
    sent: str,
) -> bytes:
    """The LCNNotification's bytes; ``metadata`` is the standard format's, without its nulls."""
    document = {
        "type": "ANNOUNCEMENT",
        "to": {"profileId": profile_id, "did": did},
        "from": {"did": sender_did},
        "message": {"title": title, "body": body},
        "data": {"metadata": metadata.model_dump(mode="json", by_alias=True, exclude_none=True)},
        "sent": sent,
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


class BearerTokens:
    """One DID-auth JWT per receiver origin per ``REUSE_SECONDS``, shared by every thread."""

    def __init__(self, engine: EngineDid, *, wall_clock: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._clock = wall_clock
        self._lock = threading.Lock()
        self._held: dict[str, tuple[float, str]] = {}
        self.signed = 0  # tokens signed so far (the bench reports it)

    def for_url(self, url: str) -> str:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}".lower()
        now = self._clock()
        with self._lock:
            held = self._held.get(origin)
            if held is not None and now < held[0] + REUSE_SECONDS:
                return held[1]
        token = self._sign(origin, int(now))
        with self._lock:
            if len(self._held) >= _MAX_HELD:
                self._held.clear()
            self._held[origin] = (now, token)
            self.signed += 1
        return token

    def _sign(self, origin: str, now: int) -> str:
        did = self._engine.did
        claims = {
            "iss": did,
            "sub": did,
            "aud": origin,
            "nbf": now,
            "iat": now,
            "exp": now + _LIFETIME,
            "jti": f"urn:uuid:{uuid.uuid4()}",
            "vp": {
                "@context": ["https://www.w3.org/2018/credentials/v1"],
                "type": ["VerifiablePresentation"],
                "holder": did,
            },
        }
        return sign_jwt(claims, self._engine.key, self._engine.kid)
