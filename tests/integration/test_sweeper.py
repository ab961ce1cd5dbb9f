"""The sweeper re-arms a `sending` dispatch untouched for longer than the stuck window, and only that."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from campaign_engine.campaigns.dispatch import get_dispatch
from campaign_engine.delivery.sweeper import SweepResult, sweep
from campaign_engine.delivery.wiring import Queues
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph
from tests.support.delivery import NOW, add_members, local_queues, make_campaign, start_dispatch

WINDOW = 300


def _sweep(graph: Graph, queues: Queues, offset_seconds: int) -> SweepResult:
    return sweep(
        graph, queues.dispatch, now=NOW + timedelta(seconds=offset_seconds), stuck_after_seconds=WINDOW
    )


def test_stuck_dispatch_is_rearmed_at_its_cursor_and_a_fresh_one_is_not(graph: Graph, tmp_path: Path) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    for campaign_id in ("stuck", "fresh"):
        make_campaign(graph, campaign_id)
        add_members(graph, campaign_id, ["p1", "p2"])
    stuck = start_dispatch(graph, queues.dispatch, "stuck").dispatch_id
    later = NOW + timedelta(seconds=WINDOW - 10)
    fresh = start_dispatch(graph, queues.dispatch, "fresh", now=later).dispatch_id
    # Both first page jobs are lost (received and dropped); the stuck one also got a page in.
    for message in queues.dispatch.receive(max_messages=10):
        queues.dispatch.delete(message.receipt)
    graph.run("MATCH (d:Dispatch {id: $id}) SET d.cursor = 'p1'", id=stuck)

    within = _sweep(graph, queues, WINDOW - 1)
    assert within.rearmed == [] and queues.dispatch.receive(max_messages=10) == []

    result = _sweep(graph, queues, WINDOW + 1)
    assert result.rearmed == [stuck] and result.waves == [] and result.failed == []
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    assert (job.dispatch_id, job.cursor, job.campaign_id) == (stuck, "p1", "stuck")
    assert get_dispatch(graph, fresh).status == "sending"

    # Re-armed counts as touched: the next sweep within the window leaves it alone.
    again = _sweep(graph, queues, WINDOW + 2)
    assert again.rearmed == []
