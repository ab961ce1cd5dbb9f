"""The Dispatch record's cursor protocol, shared by the notify and email page workers.

A page job reads the Dispatch and the Campaign (``read_guard``), decides whether it may run at all
(``gate`` for stale or early jobs, ``guard_reason`` for the campaign), and at the end
moves the cursor with a compare-and-set from the value it read (``advance``). Only the holder of that
cursor may move it, schedule a successor or finish the walk, so two chains collapse into one. Outcome
counters (emailed, rejected, ...) always count, because those messages really went out or really were
refused, whoever wins the cursor.

Retries are bounded (``record_failure``): ``pageFailures`` counts consecutive failed attempts at the
page after the current cursor (a job that raised, a re-arm by the sweeper without progress since), a
won ``advance`` resets it, and at the limit the Dispatch becomes ``failed`` instead of being retried
forever. A failure never moves the cursor, so ``campaigns.resumeDispatch`` resumes exactly there.

Back-pressure is bounded the same way (``defer``): an email page that is throttled, or finds the
provider's cooldown open, is rescheduled (``nextPageAt``) and counted in ``emailDeferrals``; a page that
ends without back-pressure resets it, and the ``CAMPAIGN_EMAIL_MAX_DEFERRALS``-th deferral in a row fails
the Dispatch (resumable like any failure).

A walk that dies between its CAS and its successor's enqueue (``kill -9``, a Lambda timeout, a queue
that refused the send) would leave the Dispatch waiting for the sweeper's stuck window. Each cursor move
records the queue message whose walk made it (``cursorMessageId``); when that very message comes back
(redelivered after its visibility timeout, or retried), it finds the cursor moved by itself and enqueues
the successor again (``resend_lost_successor``), paced by what is left of the wave delay. Only the
message that moved the cursor last does this, so a late duplicate of an older page never forks the
chain; a successor that did go out meanwhile races the resent one and the CAS keeps one chain.

Each write locks the Dispatch (``SET d.casLock``) *before* it reads status and cursor: under
read-committed isolation, a check made before taking the lock could pass in two transactions at once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.domain.dispatch import PageJob, send_blocked
from campaign_engine.domain.types import parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import MAX_DELAY_SECONDS, Queue

__all__ = [
    "Deferral",
    "PageFailure",
    "advance",
    "defer",
    "gate",
    "guard_reason",
    "read_guard",
    "record_failure",
    "resend_lost_successor",
    "stop",
]

log = logging.getLogger(__name__)

# replan=skip on the statements every page runs: unique-key seeks, a plan statistics cannot improve,
# and a send moves the statistics fast enough that Neo4j would otherwise replan (and JIT-compile) them.
_READ_GUARD = "dispatch_read_guard"  # cypher/delivery/dispatch_read_guard.cypher

_STOP = "dispatch_stop"  # cypher/delivery/dispatch_stop.cypher

_ADVANCE = "dispatch_advance"  # cypher/delivery/dispatch_advance.cypher

_COUNTERS = ("emailed", "rejected", "uncertain", "throttled")

# Back-pressure: counters always count; the holder of the cursor moves it (over the prefix the provider
# took), schedules the retry in the graph and counts the deferral; the last allowed one fails the walk.
_DEFER = "dispatch_defer"  # cypher/delivery/dispatch_defer.cypher

# The lock first, then the check (module docstring): the count belongs to the holder of the cursor.
_FAILURES = "dispatch_page_failures"  # cypher/delivery/dispatch_page_failures.cypher

_COUNT_FAILURE = "dispatch_count_failure"  # cypher/delivery/dispatch_count_failure.cypher

_FAIL = "dispatch_fail"  # cypher/delivery/dispatch_fail.cypher


@dataclass(frozen=True)
class PageFailure:
    failures: int
    """Consecutive failed attempts at this page, the one just recorded included."""
    failed: bool
    """The limit was reached: the Dispatch is now ``failed`` and must not be retried."""
    reason: str | None = None
    """The ``lastError`` written when ``failed``."""


@dataclass(frozen=True)
class Deferral:
    deferrals: int
    """Back-pressure deferrals of this walk in a row, this one included."""
    failed: bool
    """The limit was reached: the Dispatch is now ``failed`` (``lastError`` says why)."""


def read_guard(tx: Tx, job: PageJob) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    record = tx.run(statement(_READ_GUARD), dispatchId=job.dispatch_id, campaignId=job.campaign_id).single()
    assert record is not None
    dispatch, campaign = record["dispatch"], record["campaign"]
    return (None if dispatch is None else dict(dispatch), None if campaign is None else dict(campaign))


def gate(dispatch: Mapping[str, Any] | None, job: PageJob, *, now: str) -> str | None:
    """Why this job must do nothing at all (``None``: go on to the campaign guard)."""
    if dispatch is None or dispatch.get("status") != "sending":
        return "not_sending"
    if (dispatch.get("cursor") or "") != (job.cursor or ""):
        return "cursor_moved"  # a duplicate of a page already done
    next_page_at = dispatch.get("nextPageAt")
    if next_page_at and now < next_page_at:
        return "wave_not_due"
    return None


def resend_lost_successor(
    dispatch: Mapping[str, Any] | None, job: PageJob, pages: Queue, *, wave_delay: int, now: datetime
) -> bool:
    """Enqueue the successor of ``job``'s walk again if ``job`` came back in the very message that moved
    the cursor last (module docstring): its walk may have died before enqueueing it. True when it did.

    Not when the graph already holds the next step (``nextPageAt``: a wave beyond the queue's delay
    cap, the next pass, a deferral), which the sweeper enqueues. The delay is what is left of the wave
    delay since that move: a page that sent nobody was followed at once, so this may pace a little
    more than the lost successor would have, never less. Raises ``QueueError`` if the send fails: the
    message is retried, and still matches."""
    if dispatch is None or job.message_id is None or dispatch.get("cursorMessageId") != job.message_id:
        return False
    if dispatch.get("status") != "sending" or dispatch.get("nextPageAt"):
        return False
    due = parse_ts(str(dispatch["lastProgressAt"])) + timedelta(seconds=wave_delay)
    delay = min(MAX_DELAY_SECONDS, max(0, math.ceil((due - now).total_seconds())))
    successor = job.model_copy(update={"cursor": dispatch.get("cursor")})
    send_pages(pages, [successor], delay_seconds=delay)
    log.warning("dispatch.successor_resent dispatch_id=%s delay=%d", job.dispatch_id, delay)
    return True


def guard_reason(
    dispatch: Mapping[str, Any], campaign: Mapping[str, Any] | None, job: PageJob, *, now: str
) -> str | None:
    """Why this page must not send (``None``: go). Pure, so the rule reads in one place."""
    if campaign is None or campaign.get("createdAt") != job.campaign_created_at:
        return "campaign_gone"
    if dispatch.get("campaignCreatedAt") != job.campaign_created_at:
        return "campaign_gone"
    return send_blocked(campaign, channels=[job.channel], missing="channel_removed", now=now)


def stop(tx: Tx, job: PageJob, *, status: str, reason: str, now: str, graph: Graph | None = None) -> None:
    """End the walk (``stopped`` or ``failed``) if this job still holds the cursor; a failed walk is a
    ``dispatch.failed`` event (with ``graph``, for the event webhooks)."""
    stopped = tx.run(
        statement(_STOP),
        dispatchId=job.dispatch_id,
        cursor=job.cursor or "",
        status=status,
        reason=reason,
        now=now,
    ).single()
    if stopped is not None and status == "failed":
        record_dispatch_events(tx, graph, "dispatch.failed", [job.dispatch_id], now=now)


def record_failure(
    tx: Tx,
    job: PageJob,
    *,
    error: str,
    max_failures: int,
    now: str,
    only_if_final: bool = False,
    graph: Graph | None = None,
) -> PageFailure | None:
    """Count one failed attempt at ``job``'s page; the ``max_failures``-th in a row fails the Dispatch.

    ``None`` when the job no longer holds the cursor (a page ran or the walk ended meanwhile): nothing
    is counted. The cursor never moves here. ``only_if_final`` writes nothing unless this failure is
    the last allowed one: the sweeper counts an ordinary re-arm in its mark, after the enqueue.
    """
    record = tx.run(statement(_FAILURES), dispatchId=job.dispatch_id, cursor=job.cursor or "").single()
    if record is None:
        return None
    failures = int(record["failures"]) + 1
    if failures < max_failures:
        if not only_if_final:
            tx.run(
                statement(_COUNT_FAILURE), dispatchId=job.dispatch_id, failures=failures, now=now
            ).consume()
        return PageFailure(failures=failures, failed=False)
    where = f"after cursor '{job.cursor}'" if job.cursor else "at the start"
    reason = (
        f"page_failures: the {job.channel} page {where} failed {failures} times in a row "
        f"(last: {error}); fix the cause, then resume with campaigns.resumeDispatch"
    )
    tx.run(statement(_FAIL), dispatchId=job.dispatch_id, failures=failures, reason=reason, now=now).consume()
    record_dispatch_events(tx, graph, "dispatch.failed", [job.dispatch_id], now=now)
    return PageFailure(failures=failures, failed=True, reason=reason)


def advance(
    tx: Tx,
    job: PageJob,
    *,
    cursor: str | None,
    enqueued: int,
    done: bool,
    now: str,
    next_page_at: str | None,
    counters: Mapping[str, int] | None = None,
    last_error: str | None = None,
    pause: int = 0,
) -> bool:
    """The CAS from the cursor this job read. True when this job won (and may schedule or finish).
    ``pause``: the wave delay the walk keeps after this page; a page that sent records it on the
    Dispatch (``waveDelayUsed``), so the forecast's measured rate takes off the pauses it really made."""
    counts: dict[str, Any] = {name: (counters or {}).get(name, 0) for name in _COUNTERS}
    record = tx.run(
        statement(_ADVANCE),
        dispatchId=job.dispatch_id,
        expected=job.cursor or "",
        cursor=cursor,
        messageId=job.message_id,
        enqueued=enqueued,
        done=done,
        now=now,
        nextPageAt=next_page_at,
        lastError=last_error,
        pause=pause,
        **counts,
    ).single()
    return record is not None


def defer(
    tx: Tx,
    job: PageJob,
    *,
    cursor: str | None,
    retry_at: str,
    reason: str,
    max_deferrals: int,
    now: str,
    enqueued: int = 0,
    counters: Mapping[str, int] | None = None,
    last_error: str | None = None,
) -> Deferral | None:
    """Back-pressure CAS from the cursor this job read: move to ``cursor`` (the prefix the provider
    took), wait in the graph until ``retry_at`` and count the deferral. None when this job lost."""
    counts: dict[str, Any] = {name: (counters or {}).get(name, 0) for name in _COUNTERS}
    where = f"after cursor '{cursor}'" if cursor else "at the start"
    failure = (
        f"back_pressure: the {job.channel} page {where} was deferred {max_deferrals} times in a row "
        f"(last: {reason}); resume with campaigns.resumeDispatch once the provider accepts mail again"
    )
    record = tx.run(
        statement(_DEFER),
        dispatchId=job.dispatch_id,
        expected=job.cursor or "",
        cursor=cursor,
        messageId=job.message_id,
        enqueued=enqueued,
        now=now,
        nextPageAt=retry_at,
        maxDeferrals=max_deferrals,
        failure=failure,
        lastError=last_error,
        **counts,
    ).single()
    if record is None:
        return None
    return Deferral(deferrals=int(record["deferrals"]), failed=bool(record["failed"]))
