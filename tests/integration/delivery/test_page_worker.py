"""Page worker rules against real Neo4j and the real local queue: each test fails without its rule."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery import dispatch_cursor
from campaign_engine.delivery.email import page_tx
from campaign_engine.delivery.notify.page_walk import PageOutcome
from campaign_engine.delivery.sweeper import sweep
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Queue, QueueError
from campaign_engine.wiring import Queues, build_page_worker, build_worker
from tests.support.delivery import (
    NOW,
    ScriptedQueue,
    StepClock,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.plans import operators


def _jobs(queue: Queue) -> list[PageJob]:
    out = []
    for message in queue.receive(max_messages=10):
        job = parse_job(message.body)
        assert isinstance(job, PageJob)
        out.append(job)
    return out


def _delivery_profiles(queue: Queue) -> list[str]:
    found: list[str] = []
    while batch := queue.receive(max_messages=10):
        found += [parse_job(m.body).profile_id for m in batch]  # type: ignore[union-attr]
        for m in batch:
            queue.delete(m.receipt)
    return sorted(found)


def _start(graph: Graph, queues: Queues, members: list[str]) -> PageJob:
    make_campaign(graph, "c1")
    add_members(graph, "c1", members, webhook="http://127.0.0.1:9/hook")
    start_dispatch(graph, queues.dispatch)
    (job,) = _jobs(queues.dispatch)
    return job


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def test_cursor_commits_only_after_enqueue(base_settings: Settings, graph: Graph, queues: Queues) -> None:
    job = _start(graph, queues, ["p1", "p2", "p3"])
    flaky = ScriptedQueue(queues.delivery)
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    worker = build_page_worker(
        settings, graph, Queues(dispatch=queues.dispatch, delivery=flaky), clock=StepClock()
    )
    flaky.fail = True
    with pytest.raises(QueueError):
        worker.handle_page(job)
    assert get_dispatch(graph, job.dispatch_id).cursor is None  # nothing skipped
    flaky.fail = False
    assert worker.handle_page(job).outcome == "next"  # the redelivered job redoes the page
    assert get_dispatch(graph, job.dispatch_id).cursor == "p2"
    assert _delivery_profiles(queues.delivery) == ["p1", "p2"]


def test_a_successor_refused_after_the_cas_is_sent_by_the_retry_of_the_same_message(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    # The window a kill -9 can also land in: the cursor is committed, the successor is not enqueued.
    make_campaign(graph, "c1")
    add_members(graph, "c1", [f"p{i}" for i in range(5)], webhook="http://127.0.0.1:9/hook")
    start_dispatch(graph, queues.dispatch)
    flaky = ScriptedQueue(queues.dispatch, script=[False])  # refuses the first send: page 1's successor
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    worker = build_worker(
        settings,
        graph,
        queues=Queues(dispatch=flaky, delivery=queues.delivery),
        clock=StepClock(),
        sweep_every=None,
    )
    (message,) = flaky.receive(max_messages=10)
    job = parse_job(message.body)
    worker.handle(flaky, [message])  # the page is walked, the send raises: Retry, the message is kept
    assert get_dispatch(graph, job.dispatch_id).cursor == "p1"

    (again,) = flaky.receive(max_messages=10)  # the retry (no back-off in these settings)
    assert again.message_id == message.message_id
    worker.handle(flaky, [again])  # sends the successor again, at the cursor it moved
    while pages := flaky.receive(max_messages=10):
        worker.handle(flaky, pages)
    record = get_dispatch(graph, job.dispatch_id)
    assert (record.status, record.pages, record.enqueued) == ("completed", 3, 5)
    assert _delivery_profiles(queues.delivery) == [f"p{i}" for i in range(5)]  # page 1 was not redone


def test_only_the_message_that_moved_the_cursor_last_sends_its_successor_again(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    job = _start(graph, queues, [f"p{i}" for i in range(6)])
    worker = build_page_worker(
        delivery_settings(base_settings, campaign_dispatch_page_size=2), graph, queues, clock=StepClock()
    )
    first = job.received_in("m-1")
    assert worker.handle_page(first).outcome == "next"
    (successor,) = _jobs(queues.dispatch)
    # A copy of the first message before its successor ran: that successor may have been lost.
    assert worker.handle_page(first) == PageOutcome("next", reason="successor_resent")
    (resent,) = _jobs(queues.dispatch)
    assert resent.cursor == successor.cursor == "p1"
    # Both walk page 2: the CAS keeps one chain, and the loser, finding the cursor moved by another
    # message, sends nothing: the chains collapse instead of forking again.
    outcomes = [
        worker.handle_page(j).outcome for j in (successor.received_in("m-2"), resent.received_in("m-3"))
    ]
    assert outcomes == ["next", "stale"]
    assert worker.handle_page(first).outcome == "stale"  # no longer the last to move it
    assert [j.cursor for j in _jobs(queues.dispatch)] == ["p3"]
    assert get_dispatch(graph, job.dispatch_id).pages == 2


def test_two_chains_collapse_to_one(base_settings: Settings, graph: Graph, queues: Queues) -> None:
    job = _start(graph, queues, [f"p{i}" for i in range(6)])
    worker = build_page_worker(
        delivery_settings(base_settings, campaign_dispatch_page_size=2), graph, queues, clock=StepClock()
    )
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def run() -> None:
        barrier.wait()
        outcomes.append(worker.handle_page(job).outcome)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("next") == 1, outcomes
    assert len(_jobs(queues.dispatch)) == 1  # losers enqueue no successor
    assert get_dispatch(graph, job.dispatch_id).pages == 1


def test_pause_stops_the_walk_with_a_reason(base_settings: Settings, graph: Graph, queues: Queues) -> None:
    job = _start(graph, queues, ["p1", "p2"])
    definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW)
    worker = build_page_worker(delivery_settings(base_settings), graph, queues, clock=StepClock())
    assert worker.handle_page(job).outcome == "stopped"
    progress = get_dispatch(graph, job.dispatch_id)
    assert (progress.status, progress.last_error) == ("stopped", "not_live")
    assert _delivery_profiles(queues.delivery) == []


def test_jobs_of_a_deleted_and_recreated_campaign_do_nothing(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    job = _start(graph, queues, ["p1", "p2"])
    deletion.delete_campaign(graph, campaign_id="c1")
    make_campaign(graph, "c1", now=NOW + timedelta(seconds=5))
    add_members(graph, "c1", ["p1", "p2"])
    worker = build_page_worker(delivery_settings(base_settings), graph, queues, clock=StepClock())
    assert worker.handle_page(job).outcome == "stale"
    # Even a forged job for a live dispatch id must match the incarnation.
    assert _delivery_profiles(queues.delivery) == []


def test_waves_use_the_configured_delay(base_settings: Settings, graph: Graph, queues: Queues) -> None:
    job = _start(graph, queues, ["p1", "p2", "p3"])
    worker = build_page_worker(
        delivery_settings(base_settings, campaign_dispatch_page_size=2, campaign_dispatch_delay_seconds=60),
        graph,
        queues,
        clock=StepClock(),
    )
    assert worker.handle_page(job).outcome == "next"
    assert _jobs(queues.dispatch) == []  # the next wave is delayed 60 s on the queue, not visible yet


def test_gaps_beyond_the_sqs_cap_wait_in_the_graph_for_the_sweeper(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    job = _start(graph, queues, ["p1", "p2", "p3"])
    clock = StepClock()
    settings = delivery_settings(
        base_settings, campaign_dispatch_page_size=2, campaign_dispatch_delay_seconds=3600
    )
    worker = build_page_worker(settings, graph, queues, clock=clock)
    assert worker.handle_page(job).outcome == "next"
    assert get_dispatch(graph, job.dispatch_id).next_page_at == "2026-03-01T13:00:00.000000Z"
    assert (
        sweep(graph, queues.dispatch, now=NOW + timedelta(minutes=59), stuck_after_seconds=4000).waves == []
    )
    due = sweep(graph, queues.dispatch, now=NOW + timedelta(minutes=61), stuck_after_seconds=4000)
    assert due.waves == [job.dispatch_id]
    (successor,) = _jobs(queues.dispatch)
    clock.now = NOW + timedelta(minutes=61)
    assert successor.cursor == "p2" and worker.handle_page(successor).outcome == "completed"
    assert get_dispatch(graph, job.dispatch_id).status == "completed"


def test_page_query_is_an_ordered_index_seek(graph: Graph) -> None:
    text = statement("dispatch_page")
    with graph.driver.session(database=graph.database) as session:
        plan = (
            session.run(
                "EXPLAIN " + text, campaignId="c", cursor="", limit=10, adultDob="2000-01-01", dobPattern=".*"
            )
            .consume()
            .plan
        )
    # Below the LIMIT: a relationship-index seek on (campaignId, profileId) read in index order, and no
    # sort, so a page costs the members it reads.
    limit = _find(plan, "Limit")  # type: ignore[arg-type]
    below = operators(limit)
    assert any("RelationshipIndexSeek" in op for op in below), below
    assert not any(op.startswith(("Sort", "PartialSort", "Top")) for op in below), below


# Statements every page of a walk runs, with the unique-key seeks each plan must be (they run with
# replan=skip: the plan they get first, on any statistics, is the one they keep).
_PER_PAGE = {
    "read_guard": (dispatch_cursor._READ_GUARD, 3),  # the Dispatch, the Campaign, its Tenant (the lane)
    "advance": (dispatch_cursor._ADVANCE, 1),
    "email_claim_guard": (page_tx._GUARD, 3),
}


@pytest.mark.parametrize("name", sorted(_PER_PAGE))
def test_per_page_statements_seek_unique_keys_and_never_replan(graph: Graph, name: str) -> None:
    name_of, seeks = _PER_PAGE[name]
    text = statement(name_of)
    plan = graph.driver.execute_query("EXPLAIN " + text, database_=graph.database).summary.plan
    ops = operators(plan)
    assert "CYPHER replan=skip" in text
    assert sum(op.startswith("NodeUniqueIndexSeek") for op in ops) == seeks, ops
    assert not any("Scan" in op for op in ops), ops


def _find(node: dict[str, Any], prefix: str) -> dict[str, Any]:
    if str(node["operatorType"]).startswith(prefix):
        return node
    for child in node.get("children", []):
        try:
            return _find(child, prefix)
        except LookupError:
            continue
    raise LookupError(prefix)
