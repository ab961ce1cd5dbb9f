"""The per-profile call limit shared by every API process, kept in the graph.

Why the graph: it is already the one store every API process (and every Lambda) reaches, it is durable,
and a uniqueness constraint on ``RateBucket.key`` makes ``MERGE`` + increment one atomic write. A
per-process counter would multiply the limit by the number of processes; adding Redis would add a
component to run for one counter. The price is one small write per limited call.

Shape: a fixed one-minute window per profile, ``(:RateBucket {key: "<profileId>|<minute>", count,
expiresAt})``. Fixed windows allow a burst of up to twice the limit across a minute boundary; that is
acceptable for abuse protection and keeps each call a single statement. Expiry is cheap and bounded:
whenever a call creates a new bucket, the same process deletes up to ``SWEEP`` expired buckets through
the ``rate_bucket_expires`` index (best effort; a failed sweep only delays cleanup).

Fail closed: if the store cannot answer, the call is refused with ``ServiceUnavailable``. The query
runs as an auto-commit statement with a short retry on transient errors only, so an unreachable
graph fails the call quickly instead of waiting out the driver's 30 s transaction retry budget.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from neo4j import exceptions as neo4j_errors

from campaign_engine.domain.errors import ServiceUnavailable, TooManyRequests
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.graph import Graph

__all__ = ["SWEEP", "GraphRateLimiter"]

log = logging.getLogger(__name__)

SWEEP = 100
_ATTEMPTS = 3

_HIT = """
MERGE (b:RateBucket {key: $key})
  ON CREATE SET b.count = 0, b.expiresAt = $expiresAt
SET b.count = b.count + 1
RETURN b.count AS count
"""

_SWEEP = """
MATCH (b:RateBucket) WHERE b.expiresAt < $now
WITH b LIMIT $limit
DELETE b
"""


class GraphRateLimiter:
    """``RateLimiter`` (api/context.py) over shared per-minute counters in the graph."""

    def __init__(self, graph: Graph, *, limit_per_minute: int, clock: Clock) -> None:
        self._graph = graph
        self._limit = limit_per_minute
        self._clock = clock

    def hit(self, profile_id: str) -> None:
        now = self._clock()
        minute = int(now.timestamp() // 60)
        count = self._count(f"{profile_id}|{minute}", expires_at=format_ts(now + timedelta(minutes=2)))
        if count == 1:
            self._sweep(format_ts(now))
        if count > self._limit:
            raise TooManyRequests(f"rate limit of {self._limit} calls per minute exceeded; retry shortly")

    def _count(self, key: str, *, expires_at: str) -> int:
        for attempt in range(_ATTEMPTS):
            try:
                with self._graph.driver.session(database=self._graph.database) as session:
                    record = session.run(_HIT, key=key, expiresAt=expires_at).single()
                    assert record is not None
                    return int(record["count"])
            except neo4j_errors.TransientError:
                if attempt + 1 == _ATTEMPTS:
                    break
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
                raise ServiceUnavailable("the rate-limit store is unavailable; try again later") from exc
        raise ServiceUnavailable("the rate-limit store is busy; try again later")

    def _sweep(self, now: str) -> None:
        try:
            with self._graph.driver.session(database=self._graph.database) as session:
                session.run(_SWEEP, now=now, limit=SWEEP).consume()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError):
            log.info("rate_limit.sweep_skipped")
