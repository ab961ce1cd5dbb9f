"""Who on a page may receive now, and walking the audience again for those who may not yet.

Readiness is computed in Python and used in Cypher. Per page, ``readiness_params`` gives the page
statements (``dispatch_page.cypher``, ``email_page.cypher`` in ``cypher/delivery/``) a map from every
zone of the tz database to the instant its recipients may receive (``domain/schedule.py:ready_map``: the
per-recipient wave, then quiet hours) plus one instant for a missing or unknown zone. A page looks each
member's zone up in that map, in the statement it already runs: no per-recipient round trip. The map
is built once per distinct schedule, rules and minute (about 600 zones, a few ms) and cached; quiet
hours start and end on whole minutes, so every moment of a minute reads the same map. A Dispatch with
neither a per-recipient time nor quiet hours gets an empty map: every member is ready, as before.

Members not yet ready are read (the cursor moves) but neither sent nor claimed; each page counts them
(``deferred``) and the earliest instant among them. ``advance_pass`` wraps ``dispatch_cursor.advance``:
when a walk reaches the end of the audience with members deferred, the Dispatch does not complete; its
cursor goes back to the start, ``pass`` + 1, and ``nextPageAt`` is the earliest instant seen, which the
sweeper enqueues when due. Each later pass re-reads the membership index (a pass per distinct ready
instant at most) and sends to those now ready; members already notified or claimed are skipped by the
page's own rules. ``deferred`` and ``missed`` count the current pass (reset when it starts at the
first page), so when a walk completes they count what the last pass saw. ``missed`` applies to
per-recipient schedules only: a recipient ready more than ``maxLateSeconds`` before the pass began (the
machine was down) is never sent; measured from the pass's start, so a pass's own pace misses nobody.
Quiet hours alone never miss anyone: deferred, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from campaign_engine.delivery.dispatch_cursor import advance
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.priority import skips_pacing_rules
from campaign_engine.domain.schedule import QuietHours, known_zone, parse_wall_clock, ready_map
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_dispatch_events

__all__ = ["PageTally", "PassStep", "advance_pass", "page_delay", "readiness_params", "tally_page"]

_UTC = ZoneInfo("UTC")


def page_delay(wave_delay: int, *, sent: int, paced: int | None = None) -> int:
    """The pause before the next page: the wave delay after a page that sent (or claimed) anyone, none
    after a page that only read. Waves pace sends, not reads: a pass of a per-recipient schedule reads
    the whole audience to find one zone's recipients, and pacing its empty pages by the wave delay
    would stretch a pass past ``maxLateSeconds`` and miss the recipients it was walking towards.
    ``paced``: the Dispatch's ``waveDelaySeconds``, shorter to meet its deadline (``deadline.py``); a
    pause only ever shortens, so the rate never rises above what the forecast assumed."""
    if not sent:
        return 0
    return wave_delay if paced is None else min(wave_delay, int(paced))


def readiness_params(
    dispatch: Mapping[str, Any], campaign: Mapping[str, Any], *, now: datetime
) -> dict[str, Any]:
    """The page statements' ``$readyAt``, ``$fallbackReadyAt`` and ``$staleBefore`` (they compare with
    their own ``$now``, the page's stored-format instant)."""
    definition = json.loads(campaign.get("definition") or "{}")
    # A critical send skips quiet hours (domain/priority.py); a per-recipient send time still holds.
    window = None if skips_pacing_rules(definition.get("priority")) else definition.get("quietHours")
    local_time = dispatch.get("sendLocalTime")
    stamp = format_ts(now)
    if local_time is None and window is None:
        return {"readyAt": {}, "fallbackReadyAt": "", "staleBefore": None}
    start = dispatch.get("startedAt") or stamp
    by_zone, fallback = _ready_map(
        minute=now.replace(second=0, microsecond=0),
        start=start,
        local_time=local_time,
        zone=definition.get("timeZone"),
        quiet=(window["start"], window["end"]) if window else None,
    )
    # Per-recipient schedules: a recipient ready more than maxLateSeconds before this pass began (the
    # machine was down) is missed, not sent; stale news is worse than none. Measured from the pass's
    # start, so the pace of a pass's own pages never makes anyone stale.
    late = dispatch.get("maxLateSeconds")
    stale = None
    if local_time is not None and late is not None:
        began = (
            parse_ts(dispatch["passStartedAt"])
            if dispatch.get("cursor") and dispatch.get("passStartedAt")
            else now
        )
        stale = format_ts(began - timedelta(seconds=int(late)))
    return {"readyAt": by_zone, "fallbackReadyAt": fallback, "staleBefore": stale}


@lru_cache(maxsize=64)
def _ready_map(
    *, minute: datetime, start: str, local_time: str | None, zone: str | None, quiet: tuple[str, str] | None
) -> tuple[dict[str, str], str]:
    rule = None if quiet is None else QuietHours(*(datetime.strptime(t, "%H:%M").time() for t in quiet))
    by_zone, fallback = ready_map(
        now=minute.astimezone(UTC),
        start=parse_ts(start),
        local_time=None if local_time is None else parse_wall_clock(local_time),
        fallback=(known_zone(zone) if zone else None) or _UTC,
        quiet=rule,
    )
    return {name: format_ts(at) for name, at in by_zone.items()}, format_ts(fallback)


@dataclass(frozen=True)
class PageTally:
    """What a page left for later: members not yet ready, the earliest of their instants, and members
    whose instant is past the schedule's ``maxLateSeconds`` (never sent)."""

    deferred: int = 0
    missed: int = 0
    ready_at: str | None = None

    def plus(self, *, deferred: int, missed: int, ready_at: str | None) -> PageTally:
        """This page's tally with a second read's over the same page (routed guardians)."""
        instants = [t for t in (self.ready_at, ready_at) if t is not None]
        return PageTally(self.deferred + deferred, self.missed + missed, min(instants) if instants else None)


@dataclass(frozen=True)
class PassStep:
    won: bool
    """This job held the cursor (as ``advance``'s answer)."""
    completed: bool = False
    next_pass_at: str | None = None
    """Set when the walk wrapped: the next pass starts from the beginning at this instant."""


# Under the Dispatch lock, for the holder of the cursor only; a pass starts at the empty cursor.
_TALLY = "readiness_tally"  # cypher/delivery/readiness_tally.cypher


def tally_page(tx: Tx, job: PageJob, tally: PageTally, *, now: str) -> Any:
    """Count a page's deferred and missed members on its Dispatch if ``job`` holds the cursor
    (None otherwise): (deferred this pass, earliest instant among them)."""
    return tx.run(
        statement(_TALLY),
        dispatchId=job.dispatch_id,
        expected=job.cursor or "",
        deferred=tally.deferred,
        missed=tally.missed,
        readyAt=tally.ready_at,
        now=now,
    ).single()


_WRAP = "readiness_wrap"  # cypher/delivery/readiness_wrap.cypher


def advance_pass(
    tx: Tx,
    job: PageJob,
    *,
    tally: PageTally,
    cursor: str | None,
    enqueued: int,
    done: bool,
    now: str,
    next_page_at: str | None,
    counters: Mapping[str, int] | None = None,
    last_error: str | None = None,
    graph: Graph | None = None,
    hold_until: str | None = None,
    pause: int = 0,
) -> PassStep:
    """``advance``, counting this page's deferred members; the end of a walk that deferred someone
    starts the next pass instead of completing. With ``graph``, completing records ``dispatch.completed``
    for the event webhooks in this transaction. ``hold_until``: an undecided test wave's decision time
    (``test_wave_page.py``); the end of the pass then never completes, it waits for that pass."""
    # A page with nothing deferred in the middle of a pass changes no count: the ordinary path (no
    # readiness rules) pays the tally on a walk's first and last page only.
    quiet_page = tally == PageTally() and bool(job.cursor) and not done
    record = None if quiet_page else tally_page(tx, job, tally, now=now)
    wrap = done and record is not None and (int(record["deferred"]) > 0 or hold_until is not None)
    next_pass_at = None
    if wrap and record is not None:
        times = [str(t) for t in (record["at"], hold_until) if t is not None]
        next_pass_at = min(times)
    won = advance(
        tx,
        job,
        cursor=None if wrap else cursor,
        enqueued=enqueued,
        done=done and not wrap,
        now=now,
        next_page_at=next_pass_at or next_page_at,
        counters=counters,
        last_error=last_error,
        pause=pause,
    )
    if won and wrap:
        tx.run(statement(_WRAP), dispatchId=job.dispatch_id).consume()
    if won and done and not wrap:
        record_dispatch_events(tx, graph, "dispatch.completed", [job.dispatch_id], now=now)
    return PassStep(won=won, completed=won and done and not wrap, next_pass_at=next_pass_at if won else None)
