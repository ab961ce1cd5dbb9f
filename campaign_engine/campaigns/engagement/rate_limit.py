"""The per-profile call limit shared by every API process, kept in the graph.

Why the graph: it is already the one store every API process (and every Lambda) reaches, it is durable,
and a uniqueness constraint on ``RateBucket.key`` makes ``MERGE`` + increment one atomic write. A
per-process counter would multiply the limit by the number of processes; adding Redis would add a
component to run for one counter. The price is one small write per limited call.

Shape: a fixed one-minute window per profile, ``(:RateBucket {key: "<profileId>|<minute>", count,
expiresAt})``. Fixed windows allow a burst of up to twice the limit across a minute boundary; that is
acceptable for abuse protection and keeps each call a single statement. Expiry is cheap and bounded:
a batch that creates a new bucket also deletes up to ``SWEEP`` expired buckets through the
``rate_bucket_expires`` index, at most once every ``SWEEP_EVERY`` of the process (best effort; a failed
sweep only delays cleanup). Nearly every batch of an app's traffic creates a bucket (a person calls a
few times a minute), and a sweep per batch was a second write transaction on every call's path; a
process thus deletes up to ``SWEEP`` buckets a second, more than it creates below 60,000 people a minute.

Batched: concurrent calls in one process share one statement (``graph/coalesce.py``). The batch sums the
hits per bucket, adds them in one ``MERGE`` per bucket (buckets in key order, so two processes' batches
cannot deadlock on each other) and hands each call its own position in the count: the k-th of n hits on
a bucket that ends at C saw ``C - n + k``, exactly what n separate statements would have returned.

Fail closed: if the store cannot answer, the call is refused with ``ServiceUnavailable``. Which driver
failures mean "cannot answer" and how long to retry them is ``Graph``'s one rule (graph/graph.py): the
API's graph gives up on an unreachable store within about a second.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from campaign_engine.domain.errors import ServiceUnavailable, TooManyRequests
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.coalesce import Coalescer
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph

__all__ = ["SWEEP", "SWEEP_EVERY", "GraphRateLimiter"]

log = logging.getLogger(__name__)

SWEEP = 1000
SWEEP_EVERY = timedelta(seconds=1)

_HIT = "rate_limit_hit"  # cypher/engagement/rate_limit_hit.cypher

_SWEEP = "rate_limit_sweep"  # cypher/engagement/rate_limit_sweep.cypher


@dataclass(frozen=True)
class _Hit:
    key: str  # "<profileId>|<minute>"


class GraphRateLimiter:
    """``RateLimiter`` (api/context.py) over shared per-minute counters in the graph."""

    def __init__(self, graph: Graph, *, limit_per_minute: int, clock: Clock) -> None:
        self._graph = graph
        self._limit = limit_per_minute
        self._clock = clock
        self._count = Coalescer(self._count_batch, name="rate-limit", max_batch=256)
        self._next_sweep: datetime | None = None  # only the batch thread reads and writes it

    def hit(self, profile_id: str) -> None:
        self._check(self._count(self._hit(profile_id)))

    async def hit_async(self, profile_id: str) -> None:
        self._check(await self._count.submit(self._hit(profile_id)))

    def _hit(self, profile_id: str) -> _Hit:
        return _Hit(f"{profile_id}|{int(self._clock().timestamp() // 60)}")

    def _check(self, count: int) -> None:
        if count > self._limit:
            raise TooManyRequests(f"rate limit of {self._limit} calls per minute exceeded; retry shortly")

    def close(self) -> None:
        self._count.close()

    def _count_batch(self, hits: list[_Hit]) -> list[int]:
        now = self._clock()
        per_bucket = Counter(hit.key for hit in hits)
        buckets = [{"key": key, "hits": n} for key, n in sorted(per_bucket.items())]
        totals = self._add(buckets, expires_at=format_ts(now + timedelta(minutes=2)))
        born = any(totals[key] == n for key, n in per_bucket.items())
        if born and (self._next_sweep is None or now >= self._next_sweep):  # tidy old ones, now and then
            self._next_sweep = now + SWEEP_EVERY
            self._sweep(format_ts(now))
        seen: Counter[str] = Counter()
        counts = []
        for hit in hits:
            seen[hit.key] += 1
            counts.append(totals[hit.key] - per_bucket[hit.key] + seen[hit.key])
        return counts

    def _add(self, buckets: list[dict[str, object]], *, expires_at: str) -> dict[str, int]:
        # One auto-commit statement: a count applied twice after a cut-off answer refuses a call early.
        rows = self._graph.run_autocommit(statement(_HIT), buckets=buckets, expiresAt=expires_at)
        return {row["key"]: int(row["count"]) for row in rows}

    def _sweep(self, now: str) -> None:
        try:
            self._graph.run(statement(_SWEEP), now=now, limit=SWEEP)
        except ServiceUnavailable:
            log.info("rate_limit.sweep_skipped")  # best effort: a failed sweep only delays cleanup
