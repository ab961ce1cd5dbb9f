"""The page worker: walk a dispatch's audience one keyset page at a time, enqueueing deliveries.

Order of a page, each step load-bearing (docs/architecture.md "Delivery pipeline"):

1. Guard: the Dispatch is ``sending`` at this job's cursor, and the campaign is the same incarnation,
   live, in window and still has the channel. Otherwise record why (status ``stopped``) and stop
   (``page_opening.py``, as the email walk opens).
2. Read members with ``profileId > cursor`` in order, rechecking eligibility in the same query.
3. Enqueue one delivery per eligible recipient (deterministic delivery id).
4. Compare-and-set the cursor from the value read in 1. Enqueue happens *before* the CAS, so a crash
   re-sends at most one page (duplicate over drop). The loser of a CAS race enqueues no successor and
   writes no finish, so two chains collapse into one.
5. Full page -> schedule the next one after the wave delay, or at once when this page sent nobody
   (``readiness.page_delay``: waves pace sends, not reads; SQS delays stop at 900 s; longer gaps are
   stored as ``nextPageAt`` for the sweeper); short page -> ``completed``, unless members were not yet
   ready (per-recipient time, quiet hours: ``delivery/readiness.py``): then the next pass starts from
   the beginning at the earliest instant one of them is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from campaign_engine.delivery.approval_reach import over_reach, pause_over_reach
from campaign_engine.delivery.health_guard import HealthGuard, pause, paused, system_audit
from campaign_engine.delivery.page_opening import ClosedPage, PageWatch, open_page
from campaign_engine.delivery.readiness import PageTally, advance_pass, page_delay, readiness_params
from campaign_engine.delivery.test_wave_page import WaveFilter
from campaign_engine.domain.dispatch import DeliveryJob, PageJob, delivery_id, job_json
from campaign_engine.domain.priority import campaign_lane
from campaign_engine.domain.types import Clock, format_ts, parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.routing import routed_query
from campaign_engine.graph.rules.segment import SegmentCache
from campaign_engine.graph.rules.segment_statements import segment_query
from campaign_engine.observability import metrics
from campaign_engine.queue.lanes import queue_lane, send_pages
from campaign_engine.queue.port import MAX_DELAY_SECONDS, Queue

__all__ = ["PageOutcome", "PageWorker"]

log = logging.getLogger(__name__)

_ROUTED_FROM = 100  # members a guardian's job names (DeliveryJob.routed_from holds up to 1000)

Outcome = Literal["next", "completed", "stopped", "stale", "lost_race", "waiting", "paused"]


@dataclass(frozen=True)
class PageOutcome:
    outcome: Outcome
    enqueued: int = 0
    reason: str | None = None
    deferred: int = 0
    """Members of this page not yet ready (per-recipient time, quiet hours): a later pass sends them."""


class PageWorker:
    def __init__(
        self,
        *,
        graph: Graph,
        delivery_queue: Queue,
        dispatch_queue: Queue,
        clock: Clock,
        page_size: int,
        delay_seconds: int,
        adult_age: int,
        guard: HealthGuard | None = None,
        watch: PageWatch | None = None,
    ) -> None:
        self._watch = watch  # told each Dispatch a page opens on (page_opening.py)
        self._graph = graph
        self._guard = guard  # asked before every page: the receivers' rejection rate
        self._deliveries = delivery_queue
        self._pages = dispatch_queue
        self._clock = clock
        self._page_size = page_size
        self._delay = delay_seconds
        self._adult_age = adult_age
        self._page_query = statement("dispatch_page")
        self._segments = SegmentCache()  # a live segment compiles once per walk

    def handle_page(self, job: PageJob) -> PageOutcome:
        """Process one page job. Raises ``QueueError`` when enqueueing fails: the job must be retried."""
        opened = open_page(self._graph, job, clock=self._clock, dispatch_queue=self._pages,
                           wave_delay=self._delay, watch=self._watch)  # fmt: skip
        if isinstance(opened, ClosedPage):
            if opened.outcome == "stopped":
                log.info("dispatch.stopped dispatch_id=%s reason=%s", job.dispatch_id, opened.reason)
            return PageOutcome(opened.outcome, reason=opened.reason)
        now, stamp, dispatch, campaign = opened.now, opened.stamp, opened.dispatch, opened.campaign
        breach = None if self._guard is None else self._guard.breach(dispatch, campaign)
        if breach is not None:
            audit = system_audit(job, campaign, at=stamp)  # drawn outside: a re-run writes the same entry
            done = self._graph.write(
                pause, job, breach, audit=audit, campaign=campaign, now=stamp, graph=self._graph
            )
            if done:
                paused(job, breach)
            return PageOutcome("paused" if done else "lost_race", reason=breach.message)
        readiness = readiness_params(dispatch, campaign, now=now)

        read, last, eligible, tally, segmented, routed = self._graph.read(
            self._read_page, job, campaign=campaign, now=now, readiness=readiness
        )
        wave = WaveFilter.of(campaign)  # an undecided test wave: its members now, the rest at decideAt
        if wave is not None:  # routed guardians wait for the rest pass (an experiment is refused there)
            eligible, waiting = wave.split(eligible)
            tally, routed = wave.tally(tally, waiting), []
        recipients: list[tuple[str, list[str] | None]] = [(pid, None) for pid in eligible] + routed
        bodies = [
            job_json(
                DeliveryJob(
                    delivery_id=delivery_id(
                        campaign_id=job.campaign_id,
                        campaign_created_at=job.campaign_created_at,
                        profile_id=profile_id,
                    ),
                    dispatch_id=job.dispatch_id,
                    campaign_id=job.campaign_id,
                    campaign_created_at=job.campaign_created_at,
                    profile_id=profile_id,
                    paged_member=(segmented and via is None) or None,
                    routed_from=via,
                )
            )
            for profile_id, via in recipients
        ]
        reach = over_reach(dispatch, len(bodies))  # an approval covers the reach it showed
        if reach is not None:
            done = pause_over_reach(
                self._graph, job, dispatch=dispatch, campaign=campaign, reach=reach, now=stamp
            )
            return PageOutcome("paused" if done else "lost_race", reason="approval_exceeded")
        # Deliveries and successor wait in the lane this page read (a priority or weight changed mid-send
        # applies from here on; domain/priority.py). Sent before the CAS: a crash re-sends, never skips.
        lane = campaign_lane(campaign)
        self._deliveries.send_batch(bodies, lane=queue_lane(lane))

        full = read >= self._page_size
        cursor = last if read else job.cursor
        delay = page_delay(self._delay, sent=len(bodies), paced=dispatch.get("waveDelaySeconds"))
        long_gap = full and delay > MAX_DELAY_SECONDS
        next_at = format_ts(now + timedelta(seconds=delay)) if long_gap else None
        step = self._graph.write(
            advance_pass,
            job,
            tally=tally,
            cursor=cursor,
            enqueued=len(bodies),
            done=not full,
            now=stamp,
            next_page_at=next_at,
            graph=self._graph,
            hold_until=None if wave is None else wave.decide_at,
            pause=delay,
        )
        if not step.won:
            log.info("dispatch.page_lost_race dispatch_id=%s", job.dispatch_id)
            return PageOutcome("lost_race", enqueued=len(bodies), deferred=tally.deferred)
        metrics.page_walked("notify")  # the CAS won: the Dispatch counted this page
        if step.next_pass_at is not None:
            self._next_pass(job, at=step.next_pass_at, now=now)
            return PageOutcome("waiting", enqueued=len(bodies), deferred=tally.deferred)
        if step.completed:
            log.info("dispatch.completed dispatch_id=%s", job.dispatch_id)
            return PageOutcome("completed", enqueued=len(bodies), deferred=tally.deferred)
        if not long_gap:
            successor = job.model_copy(update={"cursor": cursor, "lane": lane})
            # If this send fails the job is retried, and its retry sends the successor again: the
            # cursor was moved by this very message (``resend_lost_successor``).
            send_pages(self._pages, [successor], delay_seconds=delay)
        return PageOutcome("next", enqueued=len(bodies), deferred=tally.deferred)

    def _next_pass(self, job: PageJob, *, at: str, now: datetime) -> None:
        """The walk wrapped: a job for the next pass if the queue can hold the wait, else the sweeper
        enqueues it when ``nextPageAt`` is due (it re-arms a lost one the same way)."""
        wait = max(0, math.ceil((parse_ts(at) - now).total_seconds()))
        log.info("dispatch.next_pass dispatch_id=%s at=%s", job.dispatch_id, at)
        if wait <= MAX_DELAY_SECONDS:
            send_pages(self._pages, [job.model_copy(update={"cursor": None})], delay_seconds=wait)

    def _read_page(
        self, tx: Tx, job: PageJob, *, campaign: Mapping[str, Any], now: datetime, readiness: dict[str, Any]
    ) -> tuple[int, str | None, list[str], PageTally, bool, list[tuple[str, list[str] | None]]]:
        """(members read, the last of them, the ids to send to now, what waits for a later pass, whether
        a live segment drew them, the guardians routed to now with the members routed to them). The
        segment is evaluated again on every page: later waves reach whoever matches by then. A campaign
        routing minors to guardians reads the same page's guardians in a second
        statement (``guardian_page.cypher``); any other runs the page statement alone."""
        segment = self._segments.get(tx, dispatch_id=job.dispatch_id, campaign=campaign)
        params = {
            "campaignId": job.campaign_id,
            "cursor": job.cursor or "",
            "limit": self._page_size,
            "now": format_ts(now),
            **readiness,
            **policy_params(now, self._adult_age),
            **(segment.params(now) if segment else {}),
        }
        row = tx.run(
            self._page_query if segment is None else segment_query("dispatch_page", segment), **params
        ).single(strict=True)
        tally = PageTally(deferred=row["deferred"], missed=row["missed"], ready_at=row["readyAt"])
        routed: list[tuple[str, list[str] | None]] = []
        if campaign.get("minors") == "guardians" and row["read"]:
            extra = tx.run(routed_query("guardian_page", segment), **params).single(strict=True)
            # A job names at most _ROUTED_FROM of them: the recheck needs one granted link among them.
            routed = [(str(pid), [str(v) for v in via[:_ROUTED_FROM]]) for pid, via in extra["routed"]]
            tally = tally.plus(deferred=extra["deferred"], missed=extra["missed"], ready_at=extra["readyAt"])
        return row["read"], row["last"], row["eligible"], tally, segment is not None, routed
