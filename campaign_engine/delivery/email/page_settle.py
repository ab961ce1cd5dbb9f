"""The walk's last step for a page: record each outcome and move the cursor in one transaction.

Throttled: the cursor moves only over the settled prefix before the first throttled recipient, the
provider-wide cooldown opens for the longest Retry-After (or the back-off) and the page is retried when
it closes; ``max_deferrals`` deferrals in a row fail the Dispatch. Otherwise a full page schedules the
next wave (or the next pass of a walk with deferred recipients) and a short page completes. Claims
never sent (the page before them was throttled) are given back here too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import timedelta

from campaign_engine.delivery.dispatch_cursor import defer
from campaign_engine.delivery.email.page_tx import ClaimedPage, PageTransactions
from campaign_engine.delivery.email.provider import SendResult
from campaign_engine.delivery.email.walk_outcome import EmailPageOutcome, Outcome, tally
from campaign_engine.delivery.readiness import page_delay
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.types import Clock, format_ts, parse_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.observability import metrics
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import MAX_DELAY_SECONDS, Queue, QueueError

__all__ = ["PageSettler"]

log = logging.getLogger("campaign_engine.delivery.email.page_walk")  # the walk's lines, as before


class PageSettler:
    def __init__(
        self,
        *,
        graph: Graph,
        tx: PageTransactions,
        dispatch_queue: Queue,
        clock: Clock,
        page_size: int,
        delay_seconds: int,
        throttle_backoff_seconds: int,
        max_deferrals: int,
    ) -> None:
        self._graph = graph
        self._tx = tx
        self._pages = dispatch_queue
        self._clock = clock
        self._page_size = page_size
        self._delay = delay_seconds
        self._backoff = throttle_backoff_seconds
        self._max_deferrals = max_deferrals

    def retry_in(self, results: Sequence[SendResult]) -> int | None:
        """The longest Retry-After among throttled results, else the back-off."""
        throttled = [r for r in results if r.outcome == "throttled"]
        if not throttled:
            return None
        hints = [r.retry_after_seconds for r in throttled if r.retry_after_seconds is not None]
        return math.ceil(max(hints)) if hints else self._backoff

    def settle(self, page: ClaimedPage, results: list[SendResult]) -> Outcome:
        """Record the outcomes and move the cursor, in one transaction. A throttled page schedules its
        own retry; after a plain page the caller enqueues the successor unless it walks on itself."""
        job = page.job
        now = self._clock()
        stamp = format_ts(now)
        throttled = [r for r in results if r.outcome == "throttled"]
        problems = [r for r in results if r.outcome in ("uncertain", "rejected")]
        last_error = f"{problems[-1].outcome}: {problems[-1].reason}" if problems else None
        full = page.read >= self._page_size
        retry_in = self.retry_in(results)
        if retry_in is not None:
            first = min(r.key for r in throttled)
            before = sorted(c.profile_id for c in page.claimed if c.profile_id < first)
            # Unclaimed members between the prefix and the first throttled one are re-read next time
            # and skipped again: the cursor may only cover recipients whose fate is settled.
            cursor = before[-1] if before else job.cursor
            retry_at = format_ts(now + timedelta(seconds=retry_in))
            reason = next((r.reason for r in throttled if r.reason), None)
            verdict = self._graph.write(
                self._tx.record_and_defer,
                page,
                results,
                cursor=cursor,
                retry_at=retry_at,
                reason=reason or "throttled",
                last_error=last_error,
                now=stamp,
            )
            self._log(job, results)
            metrics.deliveries("email", tally(results))  # committed: the Dispatch counted them too
            if verdict is None:
                return "lost_race"
            if verdict.failed:
                log.error(
                    "email.dispatch_failed dispatch_id=%s deferrals=%d", job.dispatch_id, verdict.deferrals
                )
                return "failed"
            if retry_in <= MAX_DELAY_SECONDS:
                self.enqueue(job.model_copy(update={"cursor": cursor}), delay=retry_in)
            return "throttled"
        cursor = page.last if page.read else job.cursor
        done = not full
        delay = page_delay(self._delay, sent=len(page.claimed), paced=page.wave_delay)
        long_gap = not done and delay > MAX_DELAY_SECONDS
        next_at = format_ts(now + timedelta(seconds=delay)) if long_gap else None
        step = self._graph.write(
            self._tx.record_and_advance,
            page,
            results,
            cursor=cursor,
            last_error=last_error,
            done=done,
            next_page_at=next_at,
            now=stamp,
            pause=delay,
        )
        self._log(job, results)
        metrics.deliveries("email", tally(results))  # committed: the Dispatch counted them too
        if not step.won:
            return "lost_race"
        metrics.page_walked("email")
        if step.next_pass_at is not None:  # members not yet ready: the next pass starts at the first
            wait = max(0, math.ceil((parse_ts(step.next_pass_at) - now).total_seconds()))
            if wait <= MAX_DELAY_SECONDS:  # else the sweeper enqueues it once nextPageAt is due
                self.enqueue(job.model_copy(update={"cursor": None}), delay=wait)
            return "waiting"
        if step.completed:
            return "completed"
        if long_gap:
            return "waiting"
        return "next"

    def wait_for_cooldown(self, job: PageJob, until: str) -> EmailPageOutcome:
        """The provider's cooldown is open: defer this page to its end without claiming anyone."""
        now = self._clock()
        wait = max(0, math.ceil((parse_ts(until) - now).total_seconds()))
        verdict = self._graph.write(
            defer,
            job,
            cursor=job.cursor,
            retry_at=until,
            reason="provider_cooldown",
            max_deferrals=self._max_deferrals,
            now=format_ts(now),
        )
        if verdict is None:
            return EmailPageOutcome("lost_race", reason="provider_cooldown")
        if verdict.failed:
            return EmailPageOutcome("failed", reason="provider_cooldown")
        if wait <= MAX_DELAY_SECONDS:
            self.enqueue(job, delay=wait)
        log.info("email.page_deferred dispatch_id=%s wait=%d", job.dispatch_id, wait)
        return EmailPageOutcome("throttled", retry_in_seconds=wait, reason="provider_cooldown")

    def release(self, page: ClaimedPage, committed: Future[None] | None) -> None:
        """Give back claims that were never sent (the page before them was throttled), once they are
        committed: a claim that never committed has nothing to give back."""
        if committed is not None and committed.exception() is not None:
            return
        rows = [SendResult(c.profile_id, "throttled", reason="not_sent") for c in page.claimed]
        if rows:
            self._graph.write(self._tx.record, page, rows, now=format_ts(self._clock()))

    def enqueue(self, job: PageJob, *, delay: int) -> None:
        try:  # the graph holds this step (``nextPageAt``): if this fails the sweeper enqueues it when due
            send_pages(self._pages, [job], delay_seconds=delay)
        except QueueError:
            log.warning("email.successor_enqueue_failed dispatch_id=%s", job.dispatch_id)

    def _log(self, job: PageJob, results: Sequence[SendResult]) -> None:
        counts = tally(results)
        log.info(
            "email.page dispatch_id=%s claimed=%d emailed=%d throttled=%d rejected=%d uncertain=%d",
            job.dispatch_id,
            len(results),
            counts["accepted"],
            counts["throttled"],
            counts["rejected"],
            counts["uncertain"],
        )
