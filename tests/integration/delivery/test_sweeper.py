"""The sweeper re-arms a `sending` dispatch untouched for longer than the stuck window, and only that;
re-arms without progress in between are failed attempts, and the limit fails the dispatch."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.delivery.sweeper import SweepResult, sweep
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Lane, Queue, QueueError, ReceivedMessage
from campaign_engine.wiring import Queues
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


class _RefusingQueue:
    """The ``Queue`` port of a queue that is down: every call fails as the adapters fail."""

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        raise QueueError("queue unreachable (test)")

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        raise QueueError("queue unreachable (test)")

    def delete(self, receipt: str) -> None:
        raise QueueError("queue unreachable (test)")

    def delete_batch(self, receipts: Sequence[str]) -> None:
        raise QueueError("queue unreachable (test)")

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        raise QueueError("queue unreachable (test)")


def test_rearms_without_progress_are_bounded_and_then_the_dispatch_fails(
    graph: Graph, tmp_path: Path
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1", "p2"])
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id

    def lose_page_jobs() -> None:  # received and never settled, or dead-lettered: gone either way
        for message in queues.dispatch.receive(max_messages=10):
            queues.dispatch.delete(message.receipt)

    def sweep_at(seconds: int, queue: Queue = queues.dispatch) -> SweepResult:
        at = NOW + timedelta(seconds=seconds)
        return sweep(graph, queue, now=at, stuck_after_seconds=WINDOW, max_page_failures=3)

    lose_page_jobs()
    # A queue that refuses the re-arm costs no attempt: the next sweep simply tries again.
    assert sweep_at(WINDOW + 1, _RefusingQueue()).failed == [dispatch_id]
    for attempt in (1, 2):
        assert sweep_at(attempt * (WINDOW + 1)).rearmed == [dispatch_id]
        assert get_dispatch(graph, dispatch_id).page_failures == attempt
        lose_page_jobs()

    final = sweep_at(3 * (WINDOW + 1))
    assert final.rearmed == [] and final.exhausted == [dispatch_id]
    assert queues.dispatch.receive(max_messages=10) == []  # failed before any enqueue
    record = get_dispatch(graph, dispatch_id)
    assert (record.status, record.page_failures, record.cursor, record.pages) == ("failed", 3, None, 0)
    assert record.last_error is not None
    assert "failed 3 times in a row" in record.last_error and "page_stuck" in record.last_error
    later = sweep_at(86_400)
    assert later.rearmed == [] and later.exhausted == [] and queues.dispatch.receive(max_messages=10) == []
