"""Bounded retries: a page that keeps failing fails its Dispatch; an admin resumes it from its cursor.

Real Neo4j, real local queues, the real job table and notification worker, the reference inbox. The
only fake is at the ``Queue`` port: a delivery queue whose sends fail on a script (a page job that
cannot enqueue its deliveries fails as a whole and must not move the cursor).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from campaign_engine.campaigns.definitions import set_status
from campaign_engine.campaigns.deletion import delete_campaign
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import settle
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import Queue
from campaign_engine.wiring import Queues, build_job_table, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
    notified,
    refusing_deliveries,
    start_dispatch,
)
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    email_settings,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin

WINDOW = 300  # the stuck window with delivery_settings: wave delay 0 + CAMPAIGN_DISPATCH_STUCK_SECONDS


def _local(queue: Queue) -> LocalQueue:
    assert isinstance(queue, LocalQueue)
    return queue


def _settings(base: Settings, **overrides: Any) -> Settings:
    return delivery_settings(base, **{"campaign_dispatch_max_page_failures": 3, **overrides})


def _dispatch_node(graph: Graph, dispatch_id: str) -> dict[str, Any]:
    [row] = graph.run("MATCH (d:Dispatch {id: $id}) RETURN d {.*} AS d", id=dispatch_id)
    return dict(row["d"])


def _resume(api: TrpcClient, dispatch_id: str) -> Any:
    return api.mutate("campaigns.resumeDispatch", {"dispatchId": dispatch_id}, as_=ADMIN_ID, admin=True)


def _fail_dispatch(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> None:
    """Run the dispatch queue's page jobs through the job table while every delivery send is refused,
    until the limit fails their Dispatch."""
    refusing = refusing_deliveries(queues, [False] * 100)
    table = build_job_table(settings, graph, refusing, clock=clock)
    try:
        for _ in range(settings.campaign_dispatch_max_page_failures):
            settle(table, queues.dispatch, queues.dispatch.receive(max_messages=10))
    finally:
        table.close()


def test_a_page_that_keeps_failing_fails_its_dispatch_and_is_not_rearmed(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = _settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)  # the bound, not the DLQ, ends it
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1", "p2"])
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id
    clock = StepClock(NOW + timedelta(seconds=1000))  # long after the last progress (at NOW)
    refusing = refusing_deliveries(queues, [False] * 10)
    table = build_job_table(settings, graph, refusing, clock=clock)
    try:
        for attempt in (1, 2):
            kept = settle(table, queues.dispatch, queues.dispatch.receive(max_messages=10))
            assert len(kept) == 1  # Retry: the job stays on the queue
            assert _dispatch_node(graph, dispatch_id)["pageFailures"] == attempt
        # A job still being retried is not stuck, though its dispatch made no progress for ages.
        busy = run_sweep(
            settings, graph, queues.dispatch, clock=lambda: clock.now + timedelta(seconds=WINDOW - 1)
        )
        assert busy.rearmed == [] and busy.exhausted == []

        assert settle(table, queues.dispatch, queues.dispatch.receive(max_messages=10)) == []  # Dead
    finally:
        table.close()

    record = get_dispatch(graph, dispatch_id)
    assert record.status == "failed" and record.page_failures == 3
    assert record.last_error is not None
    assert "failed 3 times in a row" in record.last_error and "QueueError" in record.last_error
    assert "resumeDispatch" in record.last_error
    assert (record.cursor, record.pages, record.enqueued) == (None, 0, 0)  # a failed page never moves it
    assert _local(queues.dispatch).depth() == 0 and _local(queues.dispatch).dead_letters() == []
    later = run_sweep(settings, graph, queues.dispatch, clock=lambda: NOW + timedelta(days=1))
    assert later.rearmed == [] and later.exhausted == [] and _local(queues.dispatch).depth() == 0


def test_progress_between_failures_resets_the_count(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = _settings(base_settings, campaign_dispatch_page_size=2)
    members = [f"p{i}" for i in range(5)]
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)
    make_campaign(graph, "c1")
    # Pages p0-p1 and p2-p3 each fail twice, then go through: 4 failures in all, never 3 in a row.
    flaky = refusing_deliveries(queues, [False, False, True, False, False])
    with inbox_server(tmp_path) as inbox:
        add_members(graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id
        worker = build_worker(settings, graph, queues=flaky, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, flaky)
        finally:
            worker.close()
        assert all(len(inbox_records(inbox.url, p)) == 1 for p in members)

    record = get_dispatch(graph, dispatch_id)
    assert record.status == "completed" and record.last_error is None and record.page_failures == 0
    assert (record.pages, record.enqueued, record.acknowledged) == (3, 5, 5)
    assert notified(graph, "c1") == members


def test_resume_continues_from_the_cursor_and_completes_exactly_once(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = _settings(base_settings, campaign_dispatch_page_size=2, campaign_dispatch_max_page_failures=2)
    members = [f"p{i}" for i in range(5)]
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)
    make_campaign(graph, "c1")
    clock = StepClock()
    # The first page goes through; the second fails twice, the limit.
    failing = refusing_deliveries(queues, [True, False, False])
    with inbox_server(tmp_path) as inbox:
        add_members(graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id
        worker = build_worker(settings, graph, queues=failing, clock=clock, sweep_every=None)
        try:
            drain(worker.handle, failing)
        finally:
            worker.close()
        failed = get_dispatch(graph, dispatch_id)
        assert (failed.status, failed.cursor, failed.pages, failed.acknowledged) == ("failed", "p1", 1, 2)
        assert (
            run_sweep(settings, graph, queues.dispatch, clock=lambda: NOW + timedelta(days=1)).rearmed == []
        )

        with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
            resumed = ok(_resume(api, dispatch_id))
            assert (resumed["status"], resumed["cursor"], resumed["pageFailures"]) == ("sending", "p1", 0)
            assert resumed.get("lastError") is None
            [past] = resumed["pastErrors"]
            assert (
                "failed 2 times in a row" in past
                and failed.last_error is not None
                and failed.last_error in past
            )

            worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
            try:
                drain(worker.handle, queues)
            finally:
                worker.close()
            assert all(len(inbox_records(inbox.url, p)) == 1 for p in members)  # nobody twice, nobody missed

            again = _resume(api, dispatch_id)
            assert error_code(again) == "CONFLICT" and "completed" in again.json()["error"]["message"]

    record = get_dispatch(graph, dispatch_id)
    assert record.status == "completed" and record.page_failures == 0
    assert (record.pages, record.enqueued, record.acknowledged, record.rejected) == (3, 5, 5, 0)
    assert notified(graph, "c1") == members
    assert _local(queues.dispatch).depth() == 0 and _local(queues.delivery).depth() == 0


def test_resume_refuses_what_it_must_not_resume_and_writes_nothing(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = _settings(base_settings, campaign_dispatch_max_page_failures=1)
    queues = local_queues(tmp_path / "q.sqlite3")
    clock = StepClock()
    for campaign_id in ("paused", "newer", "recreated", "gone", "stopped"):
        make_campaign(graph, campaign_id)
        add_members(graph, campaign_id, ["p1"])
    failed = {
        cid: start_dispatch(graph, queues.dispatch, cid).dispatch_id
        for cid in ("paused", "newer", "recreated", "gone")
    }
    _fail_dispatch(settings, graph, queues, clock)
    assert {get_dispatch(graph, d).status for d in failed.values()} == {"failed"}
    delete_campaign(graph, campaign_id="gone")  # takes its Dispatches along
    make_campaign(graph, "gone")
    stopped = start_dispatch(graph, queues.dispatch, "stopped").dispatch_id
    sending = start_dispatch(graph, queues.dispatch, "stopped").dispatch_id  # supersedes the first
    for message in queues.dispatch.receive(max_messages=10):
        queues.dispatch.delete(message.receipt)

    set_status(graph, campaign_id="paused", status="paused", now=NOW)
    newest = start_dispatch(graph, queues.dispatch, "newer").dispatch_id
    graph.run(
        "MATCH (d:Dispatch {id: $id}) SET d.campaignCreatedAt = 'an-earlier-incarnation'",
        id=failed["recreated"],
    )
    expected = {
        failed["paused"]: ("CONFLICT", "not_live"),
        failed["newer"]: ("CONFLICT", newest),
        failed["recreated"]: ("CONFLICT", "earlier incarnation"),
        stopped: ("CONFLICT", "dispatch again"),
        sending: ("CONFLICT", "still sending"),
        failed["gone"]: ("NOT_FOUND", failed["gone"]),
        "dsp_unknown": ("NOT_FOUND", "dsp_unknown"),
    }
    before = {d: _dispatch_node(graph, d) for d in expected if expected[d][0] == "CONFLICT"}
    depth = _local(queues.dispatch).depth()
    with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
        for dispatch_id, (code, words) in expected.items():
            answer = _resume(api, dispatch_id)
            assert error_code(answer) == code, (dispatch_id, answer.text)
            assert words in answer.json()["error"]["message"], answer.text
        assert error_code(_resume(api, "")) == "BAD_REQUEST"
        denied = api.mutate("campaigns.resumeDispatch", {"dispatchId": failed["paused"]}, as_="someone")
        assert error_code(denied) in ("FORBIDDEN", "UNAUTHORIZED")
    # Nothing half-written: every Dispatch exactly as before (the lock too: rolled back), nothing enqueued.
    assert {d: _dispatch_node(graph, d) for d in before} == before
    assert _local(queues.dispatch).depth() == depth


def test_email_pages_count_failures_too_and_resume_after_the_fix(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    members = ["p1", "p2", "p3"]
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
    clock = StepClock()
    with PostmarkStandin() as postmark:
        good = email_settings(
            base_settings, postmark.url, postmark.token, campaign_dispatch_max_page_failures=2
        )
        # A transactional stream is refused before any claim, on every attempt.
        wrong = good.model_copy(update={"postmark_broadcast_stream": "outbound"})
        worker = build_worker(wrong, graph, queues=queues, clock=clock, sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        record = get_dispatch(graph, dispatch_id)
        assert record.status == "failed" and record.last_error is not None
        assert "email page at the start failed 2 times" in record.last_error
        assert "ProviderConfigError" in record.last_error
        assert (record.emailed, postmark.batch_calls) == (0, 0)

        with api_client(good, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
            ok(api.mutate("campaigns.resumeDispatch", {"dispatchId": dispatch_id}, as_=ADMIN_ID, admin=True))
        worker = build_worker(good, graph, queues=queues, clock=clock, sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        assert accepted_to(postmark) == [address_of(p) for p in members]
    record = get_dispatch(graph, dispatch_id)
    assert (record.status, record.emailed, record.page_failures) == ("completed", 3, 0)
