"""How every page job of a walk opens, notify and email alike: read, gate, guard, decide.

Both walks start a page with the same steps, in the same order, each load-bearing
(``dispatch_cursor.py``): read the Dispatch and the campaign (``read_guard``); a job that must do
nothing at all (``gate``: not sending, a duplicate, a wave not due) ends here, unless it is the very
message that moved the cursor last, which enqueues its lost successor again; a campaign that may no
longer send (``guard_reason``) stops the walk; a test wave whose decision is due is decided, and the
Dispatch and campaign are read again, since the rest pass starts on this page. What follows (the
health guard, the page read or claim) differs by channel and stays in each walk.

A page that opens hands the Dispatch it read to ``watch`` (the wiring gives the deadline's live check,
``campaigns/sending/deadline_watch.py:note_late``): the walk already holds the progress the live estimate
is computed from, so a send that fell behind its deadline is announced at its next page, not at the
next sweep. It costs one comparison per page; a failing check is logged and left to the sweep.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from campaign_engine.delivery.dispatch_cursor import (
    gate,
    guard_reason,
    read_guard,
    resend_lost_successor,
    stop,
)
from campaign_engine.delivery.test_wave_page import decide_on_time
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Queue

__all__ = ["ClosedPage", "OpenPage", "PageWatch", "open_page"]

log = logging.getLogger(__name__)

PageWatch = Callable[[Mapping[str, Any], datetime], object]
"""Told each Dispatch a page opened on, with the page's instant (the deadline's live check)."""


@dataclass(frozen=True)
class OpenPage:
    """A page job that may go on: the moment it opened at, and what it read then."""

    now: datetime
    stamp: str
    dispatch: dict[str, Any]
    campaign: dict[str, Any]


@dataclass(frozen=True)
class ClosedPage:
    """A page job that ends at its opening: its successor resent (``next``), nothing to do
    (``waiting``, ``stale``), or the walk stopped (``stopped``, already written)."""

    outcome: Literal["next", "waiting", "stale", "stopped"]
    reason: str


def open_page(
    graph: Graph,
    job: PageJob,
    *,
    clock: Clock,
    dispatch_queue: Queue,
    wave_delay: int,
    watch: PageWatch | None = None,
) -> OpenPage | ClosedPage:
    now = clock()
    stamp = format_ts(now)
    dispatch, campaign = graph.read(read_guard, job)
    skip = gate(dispatch, job, now=stamp)
    if skip == "cursor_moved" and resend_lost_successor(
        dispatch, job, dispatch_queue, wave_delay=wave_delay, now=now
    ):
        return ClosedPage("next", "successor_resent")
    if skip is not None:
        return ClosedPage("waiting" if skip == "wave_not_due" else "stale", skip)
    assert dispatch is not None
    reason = guard_reason(dispatch, campaign, job, now=stamp)
    if reason is not None:
        graph.write(stop, job, status="stopped", reason=reason, now=stamp, graph=graph)
        return ClosedPage("stopped", reason)
    assert campaign is not None
    if decide_on_time(graph, dispatch_id=job.dispatch_id, campaign=campaign, now=stamp):
        dispatch, campaign = graph.read(read_guard, job)  # the rest pass starts on this page
        # A campaign deleted in between raises here and the job is retried: its retry finds it gone.
        assert dispatch is not None
        assert campaign is not None
    if watch is not None:
        try:
            watch(dispatch, now)
        except Exception:  # the sweep judges it again: a page is never held up by its announcement
            log.warning("dispatch.late_check_failed dispatch_id=%s", job.dispatch_id, exc_info=True)
    return OpenPage(now=now, stamp=stamp, dispatch=dispatch, campaign=campaign)
