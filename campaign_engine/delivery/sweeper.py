"""The sweeper (every minute): re-arm dispatches whose page job was lost, and start long-delayed waves.

A dispatch is *stuck* when it is still ``sending``, has no wave scheduled in the graph, and neither
progressed, failed (a job still being retried) nor was re-armed within the stuck window (the wave
delay SQS can hold plus a page budget).
That covers a first page whose enqueue failed after the dispatch committed, a successor lost after
its cursor CAS, and messages that expired or dead-lettered. Waves longer than SQS's 900 s delay cap
are stored as ``nextPageAt`` by the page worker and enqueued here once due.

Re-arming sends a page job at the dispatch's *current* cursor. If the original job was only late, the
two race and the cursor CAS keeps one chain, so a spurious re-arm is harmless.

Re-arms are bounded: each one without progress since counts as a failed attempt at the page
(``pageFailures``, see ``dispatch_cursor.record_failure``), so a page job that is lost, times out or
dead-letters again and again ends ``failed`` with a ``lastError`` instead of being re-armed forever.
The last allowed failure fails the Dispatch *before* any enqueue; an ordinary re-arm is counted in the
mark written after its enqueue, so a queue that refuses the send costs no attempt.

Email claims abandoned by a killed worker (claimed longer than ``uncertain_after_seconds`` ago, no
outcome) are never re-sent; the sweep makes them ``uncertain`` and counts them once on their Dispatch
(``cypher/delivery/email_abandoned.cypher``), where an operator sees and lists them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.delivery.dispatch_cursor import record_failure
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.priority import job_lane
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import Queue, QueueError

__all__ = ["SweepResult", "stuck_window_seconds", "sweep"]

log = logging.getLogger(__name__)

_BATCH = 500

_DUE = "sweeper_due"  # cypher/delivery/sweeper_due.cypher

# Only if nothing moved since the sweep read it: a page that ran meanwhile keeps its own schedule.
_MARK = "sweeper_mark"  # cypher/delivery/sweeper_mark.cypher


@dataclass
class SweepResult:
    rearmed: list[str] = field(default_factory=list)
    waves: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Dispatches whose re-arm could not be enqueued (tried again next sweep)."""
    exhausted: list[str] = field(default_factory=list)
    """Dispatches that reached the failure limit: now ``failed``, never re-armed again."""
    abandoned: dict[str, int] = field(default_factory=dict)
    """Dispatch id -> email claims this sweep counted ``uncertain`` (abandoned past the horizon)."""
    scheduled: dict[str, str] = field(default_factory=dict)
    """Schedule id -> what this sweep decided for it (``sending``, ``missed``, ``cancelled``, ...)."""
    feedback_expired: int = 0
    """Webhook dedup records older than ``CAMPAIGN_FEEDBACK_DEDUP_DAYS`` this sweep deleted."""
    events_expired: int = 0
    """Delivered events and attempts older than ``CAMPAIGN_EVENT_RETENTION_DAYS`` this sweep deleted."""
    webhooks: list[str] = field(default_factory=list)
    """Event-webhook endpoints this sweep enqueued a relay job for."""
    late: list[str] = field(default_factory=list)
    """Dispatches this sweep found behind their deadline (``dispatch.late`` raised, once each)."""


def stuck_window_seconds(*, delay_seconds: int, page_budget_seconds: int) -> int:
    """How long a ``sending`` dispatch may sit untouched: the queued wave delay plus a page's budget."""
    return min(delay_seconds, 900) + page_budget_seconds


def sweep(
    graph: Graph,
    dispatch_queue: Queue,
    *,
    now: datetime,
    stuck_after_seconds: int,
    max_page_failures: int = 5,
    uncertain_after_seconds: int | None = None,
) -> SweepResult:
    """One pass. ``max_page_failures`` is ``CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES`` (its default here too);
    ``uncertain_after_seconds`` is ``CAMPAIGN_EMAIL_UNCERTAIN_AFTER_SECONDS`` (None: not counted)."""
    stamp = format_ts(now)
    stuck_error = (
        f"page_stuck: no progress for {stuck_after_seconds} s (job lost, timed out or dead-lettered)"
    )
    stuck_before = format_ts(now - timedelta(seconds=stuck_after_seconds))

    def read(tx: Tx) -> list[dict[str, Any]]:
        return [r.data() for r in tx.run(statement(_DUE), now=stamp, stuckBefore=stuck_before, limit=_BATCH)]

    result = SweepResult()
    if uncertain_after_seconds is not None:
        before = format_ts(now - timedelta(seconds=uncertain_after_seconds))
        while True:
            counted = graph.write(_count_abandoned, before=before, now=stamp)
            for dispatch_id, n in counted:
                result.abandoned[dispatch_id] = result.abandoned.get(dispatch_id, 0) + n
                log.warning("sweeper.email_claims_abandoned dispatch_id=%s count=%d", dispatch_id, n)
            if sum(n for _, n in counted) < _BATCH:
                break
    for row in graph.read(read):
        job = PageJob(
            dispatch_id=row["dispatchId"],
            campaign_id=row["campaignId"],
            campaign_created_at=row["campaignCreatedAt"],
            channel=row["channel"],
            cursor=row["cursor"],
            lane=job_lane(row["priority"], row["tenantId"], row["weight"]),
        )
        stuck = not row["wave"]
        if stuck:
            verdict = graph.write(
                record_failure,
                job,
                error=stuck_error,
                max_failures=max_page_failures,
                now=stamp,
                only_if_final=True,
                graph=graph,
            )
            if verdict is None:
                continue  # a page ran since the read: not stuck after all
            if verdict.failed:
                log.error(
                    "sweeper.dispatch_failed dispatch_id=%s failures=%d", job.dispatch_id, verdict.failures
                )
                result.exhausted.append(job.dispatch_id)
                continue
        try:
            send_pages(dispatch_queue, [job])
        except QueueError:
            log.warning("sweeper.enqueue_failed dispatch_id=%s", job.dispatch_id)
            result.failed.append(job.dispatch_id)
            continue
        # Marked after the enqueue: a crash in between re-arms again next minute (the CAS absorbs it).
        graph.write(_mark, dispatch_id=job.dispatch_id, cursor=job.cursor or "", now=stamp, failed=int(stuck))
        (result.waves if row["wave"] else result.rearmed).append(job.dispatch_id)
        log.info("sweeper.enqueued dispatch_id=%s wave=%s", job.dispatch_id, row["wave"])
    return result


def _mark(tx: Tx, *, dispatch_id: str, cursor: str, now: str, failed: int) -> None:
    tx.run(statement(_MARK), dispatchId=dispatch_id, cursor=cursor, now=now, failed=failed).consume()


def _count_abandoned(tx: Tx, *, before: str, now: str) -> list[tuple[str, int]]:
    rows = tx.run(statement("email_abandoned"), before=before, now=now, limit=_BATCH)
    return [(str(row["dispatchId"]), int(row["n"])) for row in rows]
