"""LearnCard's format at the reference inbox: an ``LCNNotification`` with the sender's DID-auth bearer.

A LearnCard inbox (lca-api's ``notifications.sendNotification``) takes an ``LCNNotification`` and
authenticates its sender by ``Authorization: Bearer <DID-auth JWT>``: the presentation's signature
verifies against the sender's DID document and its holder is one of the DIDs it is configured to trust
(their ``AUTHORIZED_DIDS``); no challenge (``nonce``) is asked of an authorized sender, so one token
serves many POSTs until it expires. This inbox does the same, and answers ``true`` as theirs does:

- ``iss`` must be a trusted DID (``INBOX_AUTHORIZED_DIDS``; unset, the engine's own), checked before
  any DID document is fetched, so a stranger cannot make the inbox fetch; then the EdDSA signature
  verifies with one of that DID's authentication keys (``did/jwt.py``, its document fetched once and
  cached by ``DidResolver``), ``exp``/``nbf`` hold, ``vp.holder`` = ``iss``, and the notification's
  ``from.did`` is that DID (its deduplication key cannot be written in another sender's name);
- a token that passed is remembered until it expires (at most ``HELD_SECONDS``, as long as the resolver
  keeps a key, and ``MAX_HELD`` tokens): the same bytes verify the same way, so a reused token costs a
  dictionary lookup and an expiry check instead of a signature check per POST;
- the body is stored under LearnCard's deduplication key: sender DID, recipient, ``campaignId``,
  ``campaignCreatedAt`` and ``campaignTestId``. The recipient is ``to.profileId``, which the listing
  and the bench read as they read the standard format's ``recipient`` (the engine derives ``to.did``
  from the profile, so the two name the same person).

Refusals: a bad, expired or untrusted token is 401, a bad body 400, both ``{"sent": false}`` with
nothing stored. No token, key or DID-document content is ever logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from campaign_engine.config import Settings
from campaign_engine.did.engine import default_did
from campaign_engine.did.jwt import KeySource, issuer_of, verify_jwt
from campaign_engine.did.keys import DidError
from campaign_engine.did.resolver import resolver_for
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.types import parse_ts
from campaign_engine.inbox.store import InboxStore

__all__ = [
    "HELD_SECONDS",
    "MAX_HELD",
    "LcnNotification",
    "LearnCardAcceptance",
    "SenderCheck",
    "sender_check_for",
]

log = logging.getLogger(__name__)

HELD_SECONDS = 300.0  # a verified token is trusted again for at most this long (the resolver's key TTL)
MAX_HELD = 1024  # verified tokens remembered; past it the oldest are forgotten (and verified again)
_TRUE = b"true"
_WIRE = ConfigDict(extra="ignore", frozen=True)
_Id = Annotated[str, Field(min_length=1, max_length=200)]
_Did = Annotated[str, Field(min_length=5, max_length=2_000, pattern=r"^did:")]


class LcnTo(CamelModel):
    model_config = _WIRE
    profile_id: _Id
    did: _Did


class LcnFrom(CamelModel):
    model_config = _WIRE
    did: _Did


class LcnMessage(CamelModel):
    model_config = _WIRE
    title: str = Field(max_length=1_000)
    body: str = Field(max_length=50_000)


class LcnMetadata(CamelModel):
    """The deduplication key's part of ``data.metadata``; the engine's other ids are kept in the row."""

    model_config = _WIRE
    campaign_id: _Id
    campaign_created_at: str
    campaign_test_id: _Id | None = None  # an empty one would collide with the real send's key

    @field_validator("campaign_created_at")
    @classmethod
    def _fixed_width_ts(cls, value: str) -> str:
        try:
            parse_ts(value)
        except ValueError as exc:
            raise ValueError("must be a UTC timestamp like 2026-01-02T03:04:05.000006Z") from exc
        return value


class LcnData(CamelModel):
    model_config = _WIRE
    metadata: LcnMetadata


class LcnNotification(CamelModel):
    model_config = _WIRE
    type: Literal["ANNOUNCEMENT"]
    to: LcnTo
    sender: LcnFrom = Field(alias="from")
    message: LcnMessage
    data: LcnData
    sent: str = Field(min_length=1, max_length=64)


class SenderCheck:
    """The DID a bearer token authenticates, or ``DidError``; verified tokens held until they expire."""

    def __init__(
        self,
        keys: KeySource,
        authorized: Iterable[str],
        *,
        wall_clock: Callable[[], float] = time.time,
        leeway: float = 30,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._on_close = on_close  # releases the resolver's sockets
        self._keys = keys
        self._authorized = frozenset(authorized)
        self._clock = wall_clock
        self._leeway = leeway
        self._lock = threading.Lock()
        self._held: OrderedDict[str, tuple[str, float]] = OrderedDict()  # token -> (DID, trusted until)
        self.verified = 0  # signatures checked (the rest were held tokens): the bench reports it

    def sender_of(self, token: str) -> str:
        now = self._clock()
        with self._lock:
            held = self._held.get(token)
            if held is not None and now < held[1]:
                return held[0]
        did = issuer_of(token)
        if did not in self._authorized:
            raise DidError("the token's issuer is not an authorized sender")
        claims = verify_jwt(token, self._keys, leeway=self._leeway, require_exp=True, now=now).claims
        vp = claims.get("vp")
        if not isinstance(vp, dict) or vp.get("holder") != did:
            raise DidError("the presentation's holder is not its issuer")
        until = min(float(claims["exp"]) + self._leeway, now + HELD_SECONDS)
        with self._lock:
            self.verified += 1
            self._held[token] = (did, until)
            while len(self._held) > MAX_HELD:
                self._held.popitem(last=False)
        return did

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()


def sender_check_for(settings: Settings) -> SenderCheck:
    """The inbox process's check: ``INBOX_AUTHORIZED_DIDS`` (unset: the engine's DID, ``CAMPAIGN_DID`` or
    ``did:web:<DOMAIN_NAME>``), their documents resolved under the deployment's egress rules (``make
    dev``'s engine document is the API's ``/.well-known/did.json`` on loopback: local development)."""
    named = settings.inbox_authorized_dids.replace(",", " ").split()
    authorized = named or [(settings.campaign_did or "").strip() or default_did(settings.domain_name)]
    resolver = resolver_for(settings)
    return SenderCheck(resolver, authorized, on_close=resolver.close)


class LearnCardAcceptance:
    """One LearnCard POST: authenticate, validate, store. Returns (status, JSON answer)."""

    def __init__(self, check: SenderCheck, store: InboxStore) -> None:
        self._check = check
        self._store = store

    async def accept(self, body: bytes, authorization: bytes) -> tuple[int, bytes]:
        scheme, _, token = authorization.decode("latin-1").partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise DidError("not a bearer token")
            did = self._check.sender_of(token.strip())
        except DidError as exc:  # its message holds no token
            log.warning("inbox.rejected reason=bearer", extra={"detail": str(exc)})
            return _refusal(401, "unauthorized")
        try:
            notification = LcnNotification.model_validate_json(body)
        except ValidationError as exc:
            log.warning("inbox.rejected reason=payload")
            # loc + msg only: pydantic's "input" would echo the sender's data back.
            return _refusal(
                400, "invalid payload", [{"path": list(e["loc"]), "message": e["msg"]} for e in exc.errors()]
            )
        if notification.sender.did != did:
            log.warning("inbox.rejected reason=sender")
            return _refusal(401, "unauthorized")
        meta = notification.data.metadata
        is_new = await asyncio.wrap_future(
            self._store.submit_row(
                sender=did,
                recipient=notification.to.profile_id,
                campaign_id=meta.campaign_id,
                campaign_created_at=meta.campaign_created_at,
                test_id=meta.campaign_test_id or "",
                payload=body.decode(),
            )
        )
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "inbox.stored",
                extra={"campaignId": meta.campaign_id, "profileId": notification.to.profile_id,
                       "format": "learncard", "duplicate": not is_new},
            )  # fmt: skip
        return 200, _TRUE


def _refusal(status: int, error: str, issues: list[dict[str, Any]] | None = None) -> tuple[int, bytes]:
    """The standard format's refusal shape, ``{"sent": false, ...}``, which the worker reads as final."""
    content: dict[str, Any] = {"sent": False, "error": error}
    if issues is not None:
        content["issues"] = issues
    return status, json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
