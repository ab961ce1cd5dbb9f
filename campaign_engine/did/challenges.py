"""DID-auth challenges: single-use nonces this deployment issued to a DID, kept in the graph so every API
process and Lambda shares them.

``issue`` stores ``amount`` (1-100) random nonces bound to the DID with an expiry of ``TTL``; a DID holds
at most ``MAX_OUTSTANDING`` unused ones (issuing more retires its oldest), so a caller cannot grow the
graph by asking again and again. ``consume`` uses one atomically: the challenge node's write lock is
taken before it is read (``did_challenge_consume.cypher``), so of two concurrent uses exactly one wins.
A used or expired challenge stays until the reaper deletes it (expired ones, bounded per call, run as
challenges are issued). Nonces are never logged, and the graph keeps only their hashes.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import datetime, timedelta

from neo4j.exceptions import ClientError

from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph

__all__ = ["MAX_AMOUNT", "MAX_NONCE_CHARS", "MAX_OUTSTANDING", "TTL", "consume", "issue"]

log = logging.getLogger(__name__)

TTL = timedelta(minutes=30)  # a client holds a batch of ~95 and uses one per request; a 401 refills
MAX_AMOUNT = 100  # per call, as LearnCard's brain-service allows
MAX_OUTSTANDING = 500  # unused, unexpired challenges per DID: five full refills
MAX_NONCE_CHARS = 128  # ours are 32; a longer one was never issued and is not looked up
REAP_LIMIT = 1000  # expired challenges deleted per issue call

_ISSUE = "did_challenges_issue"  # cypher/did/did_challenges_issue.cypher
_CONSUME = "did_challenge_consume"  # cypher/did/did_challenge_consume.cypher
_REAP = "did_challenges_reap"  # cypher/did/did_challenges_reap.cypher


def _key(did: str, nonce: str) -> str:
    """What the graph keeps of a challenge: a hash of the DID and nonce, so no graph read, dump or driver
    debug line holds a nonce someone could still use."""
    return hashlib.sha256(f"{did}|{nonce}".encode()).hexdigest()


def issue(graph: Graph, *, did: str, amount: int, now: datetime) -> list[str]:
    """``amount`` new challenges for ``did``, stored before they are returned."""
    if not 1 <= amount <= MAX_AMOUNT:
        raise ValueError(f"amount must be 1-{MAX_AMOUNT}")
    nonces = [secrets.token_urlsafe(24) for _ in range(amount)]
    graph.run(
        statement(_ISSUE),
        did=did,
        keys=[_key(did, nonce) for nonce in nonces],
        now=format_ts(now),
        expiresAt=format_ts(now + TTL),
        cap=MAX_OUTSTANDING,
    )
    reap(graph, now=now)
    return nonces


def consume(graph: Graph, *, did: str, nonce: str, now: datetime) -> bool:
    """True when ``nonce`` was issued to ``did``, is unexpired and had not been used: it is used now."""
    if not nonce or len(nonce) > MAX_NONCE_CHARS:
        return False
    try:
        rows = graph.run(statement(_CONSUME), key=_key(did, nonce), now=format_ts(now))
    except ClientError as exc:  # the reaper deleted it while this waited for its lock: long expired
        if "EntityNotFound" in (exc.code or ""):
            return False
        raise
    return bool(rows and rows[0]["used"] == 1)


def reap(graph: Graph, *, now: datetime) -> int:
    """Delete up to ``REAP_LIMIT`` expired challenges; best effort (a failure only delays cleanup)."""
    try:
        rows = graph.run(statement(_REAP), now=format_ts(now), limit=REAP_LIMIT)
    except Exception:  # the issue already committed; the next issue reaps again
        log.info("did.challenges_reap_skipped")
        return 0
    return int(rows[0]["reaped"]) if rows else 0
