"""Notification worker rules with real Neo4j, a real local queue and real loopback receivers."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.frequency_cap import notify_recheck_query
from campaign_engine.delivery.notify.sender import (
    Answered,
    Blocked,
    Outgoing,
    PostResult,
    Skipped,
    TimedOut,
    Unreachable,
    Unreadable,
)
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.domain.dispatch import DeliveryJob, delivery_id, job_json, parse_job
from campaign_engine.domain.frequency_cap import ChannelCap, FrequencyCaps, cap_params
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.transport import make_webhook_transport
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.queue.port import Received, ReceivedMessage
from campaign_engine.wiring import Queues, build_notification_worker, build_page_worker
from tests.support.bolt_cut import bolt_cutter
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    notified,
    start_dispatch,
)
from tests.support.plans import operators


def parsed(messages: Sequence[ReceivedMessage]) -> list[Received[DeliveryJob]]:
    """What the job table hands the worker: each body parsed once."""
    items = []
    for message in messages:
        job = parse_job(message.body)
        assert isinstance(job, DeliveryJob)
        items.append(Received(message, job))
    return items


def _page(settings: Settings, graph: Graph, queues: Queues) -> str:
    started = start_dispatch(graph, queues.dispatch)
    worker = build_page_worker(settings, graph, queues, clock=StepClock())
    for message in queues.dispatch.receive(max_messages=10):
        job = parse_job(message.body)
        worker.handle_page(job)  # type: ignore[arg-type]
        queues.dispatch.delete(message.receipt)
    return started.dispatch_id


def test_only_a_positive_acknowledgement_sets_notified(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    receiver = ScriptedReceiver(
        [
            (204, b"", None),
            (200, b"true", "text/plain"),
            (200, b'{"status":"ok"}', "application/json"),
            (500, b'{"sent":true}', "application/json"),
            3.0,
            (200, b'{"data":{"sent":true}}', "application/json"),
        ]
    )
    settings = delivery_settings(base_settings, campaign_webhook_timeout_seconds=0.5)
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)
    make_campaign(graph, "c1", channels=["notify", "inApp"])
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        for attempt in range(5):  # 204, text, {"status":"ok"}, 500, timeout: all uncertain
            batch = queues.delivery.receive(max_messages=10)
            assert batch, (attempt, receiver.received, queues.delivery.depth())
            result = worker.handle_batch(parsed(batch))
            assert [m.message_id for m in result.retry] == [batch[0].message_id], attempt
            queues.delivery.change_visibility(batch[0].receipt, timeout_seconds=0)  # as the runner's back-off
            assert notified(graph, "c1") == []
        result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        assert len(result.done) == 1 and notified(graph, "c1") == ["p1"]
        worker.close()
    ids = {r["headers"]["webhook-id"] for r in receiver.received}
    assert ids == {
        delivery_id(
            campaign_id="c1",
            campaign_created_at=json.loads(receiver.received[0]["body"])["metadata"]["campaignCreatedAt"],
            profile_id="p1",
        )
    }  # stable across retries
    assert json.loads(receiver.received[-1]["body"])["metadata"]["campaignHasInApp"] is True
    assert get_dispatch(graph, dispatch_id).acknowledged == 1


def test_a_redelivered_acknowledged_delivery_is_a_duplicate_not_a_suppression(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """A message the queue hands out again after its acknowledgement was recorded (a worker died
    before deleting it, a visibility timeout ran out) is settled: no second POST, and the Dispatch
    counts the recipient once (it counted it as suppressed too, so settled > enqueued)."""
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3", max_receives=10)
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        try:
            batch = queues.delivery.receive(max_messages=10)
            assert list(worker.handle_batch(parsed(batch)).verdicts.values()) == ["positive"]
            again = worker.handle_batch(parsed(batch))  # the same message, handed out again
        finally:
            worker.close()
    assert list(again.verdicts.values()) == ["duplicate"] and len(again.done) == 1
    assert len(receiver.received) == 1
    record = get_dispatch(graph, dispatch_id)
    assert (record.enqueued, record.acknowledged, record.suppressed) == (1, 1, 0)


@pytest.mark.parametrize("landed", [True, False], ids=["commit_landed", "commit_lost"])
def test_an_outcome_write_whose_commit_was_cut_off_is_rerun_and_counted_once(
    base_settings: Settings, graph: Graph, tmp_path: Path, landed: bool
) -> None:
    """The receivers answered, the outcome write sent COMMIT and its connection died (Neo4j killed or
    restarted). Only this worker's memory knows the answers, so it re-runs the write once the graph
    answers and each outcome counts once, landed or not, without a second POST. (Before, the batch
    raised and sat out the queue's visibility timeout with its acknowledgements unrecorded.)"""
    receiver = ScriptedReceiver(
        [(200, b'{"sent":true}', "application/json"), (400, b'{"sent":false}', "application/json")]
    )
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server, bolt_cutter(settings.neo4j_uri) as cutter:
        add_members(graph, "c1", ["p1", "p2"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        cut_graph = open_graph(settings.model_copy(update={"neo4j_uri": cutter.uri}), unavailable_wait=10)
        worker = build_notification_worker(settings, cut_graph, clock=StepClock())
        # Both POSTs in: every read before them (recheck, pause gate) is done; the next COMMIT is the write.
        receiver.on_post = lambda count: cutter.cut_commit(1, landed=landed) if count == 2 else None
        try:
            result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        finally:
            worker.close()
            cut_graph.close()
    assert cutter.cuts == 1
    assert sorted(result.verdicts.values()) == ["negative", "positive"] and len(result.done) == 2
    assert len(receiver.received) == 2
    assert len(notified(graph, "c1")) == 1
    record = get_dispatch(graph, dispatch_id)
    assert (record.enqueued, record.acknowledged, record.rejected, record.suppressed) == (2, 1, 1, 0)


def test_negative_answer_is_rejected_not_retried(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    receiver = ScriptedReceiver([(400, b'{"sent":false}', "application/json")])
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        worker.close()
    assert len(result.done) == 1 and result.retry == []
    assert notified(graph, "c1") == []
    assert get_dispatch(graph, dispatch_id).rejected == 1


def test_blocked_egress_never_notifies(base_settings: Settings, graph: Graph, tmp_path: Path) -> None:
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(base_settings, campaign_allow_private_webhooks=False)
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        transport = make_webhook_transport(
            allow_private=False, rules=DestinationRules.of(local_development=True)
        )
        worker = build_notification_worker(settings, graph, transport=transport, clock=StepClock())
        result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        worker.close()
    assert result.verdicts and set(result.verdicts.values()) == {"blocked"}
    assert receiver.received == [] and notified(graph, "c1") == []
    assert get_dispatch(graph, dispatch_id).rejected == 1


def test_pause_stops_unsent_deliveries(base_settings: Settings, graph: Graph, tmp_path: Path) -> None:
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1", "p2"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        worker.close()
    assert len(result.done) == 2 and receiver.received == []
    assert get_dispatch(graph, dispatch_id).suppressed == 2


def test_self_test_delivery_never_sets_notified(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    created_at = make_campaign(graph, "c1", channels=["notify", "inApp"], status="draft")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "admin-1", [], webhook=None)
        graph.run(
            "MERGE (p:Profile {profileId: 'admin-1'}) SET p.notificationsWebhook = $u", u=f"{server.url}/hook"
        )
        job = DeliveryJob(
            delivery_id=delivery_id(
                campaign_id="c1", campaign_created_at=created_at, profile_id="admin-1", test_id="t1"
            ),
            campaign_id="c1",
            campaign_created_at=created_at,
            profile_id="admin-1",
            campaign_test_id="t1",
        )
        queues.delivery.send_batch([job_json(job)])
        worker = build_notification_worker(settings, graph, clock=StepClock())
        result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        worker.close()
    assert set(result.verdicts.values()) == {"positive"}
    metadata = json.loads(receiver.received[0]["body"])["metadata"]
    assert metadata["campaignTestId"] == "t1" and metadata["campaignHasInApp"] is False
    assert notified(graph, "c1") == []


def test_a_pause_stops_rechecked_posts_still_waiting_for_a_slot(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """One POST slot, three rechecked deliveries: the first hangs while the campaign is paused, and the
    two waiting behind it are never posted (the gate re-reads the campaign before each POST)."""
    receiver = ScriptedReceiver([1.0, (200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(
        base_settings, campaign_webhook_concurrency=1, campaign_webhook_timeout_seconds=5.0
    )
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1", "p2", "p3"], webhook=f"{server.url}/hook")
        dispatch_id = _page(settings, graph, queues)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        batch = queues.delivery.receive(max_messages=10)
        assert len(batch) == 3
        with ThreadPoolExecutor(1) as pool:
            handled = pool.submit(worker.handle_batch, parsed(batch))
            deadline = time.monotonic() + 5
            while not receiver.received and time.monotonic() < deadline:
                time.sleep(0.01)
            definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW)
            result = handled.result(timeout=10)
        worker.close()
    assert len(receiver.received) == 1
    assert sorted(result.verdicts.values()) == ["positive", "suppressed", "suppressed"]
    assert len(notified(graph, "c1")) == 1
    record = get_dispatch(graph, dispatch_id)
    assert (record.acknowledged, record.suppressed) == (1, 2)


class FakeSender:
    """A ``WebhookSender`` answering each recipient's POST from a table; records what it was given."""

    def __init__(self, results: dict[str, PostResult]) -> None:
        self.results = results
        self.posted: list[Outgoing] = []
        self.closed = False

    def post_all(self, items: Sequence[Outgoing]) -> list[PostResult]:
        self.posted += items
        return [self.results[json.loads(item.body)["recipient"]] for item in items]

    def close(self) -> None:
        self.closed = True


def test_each_sender_result_maps_to_its_verdict(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """The worker's verdicts from the port's result types alone: only an acknowledged answer notifies,
    a blocked destination or a stopped campaign is final, everything unsure goes back for retry."""
    results: dict[str, PostResult] = {
        "p1": Answered(200, b'{"sent":true}', "application/json"),
        "p2": Blocked("destination address is private"),
        "p3": Unreachable("ConnectError"),
        "p4": Unreadable("ResponseTooLarge"),
        "p5": TimedOut(),
        "p6": Skipped(retry=False),
        "p7": Skipped(retry=True),
    }
    expected = {
        "p1": "positive",
        "p2": "blocked",
        "p3": "uncertain",
        "p4": "uncertain",
        "p5": "uncertain",
        "p6": "suppressed",
        "p7": "uncertain",
    }
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    created_at = make_campaign(graph, "c1")
    add_members(graph, "c1", sorted(results), webhook="http://inbox.test/hook")
    dispatch_id = _page(settings, graph, queues)
    sender = FakeSender(results)
    worker = NotificationWorker(
        graph=graph,
        sender=sender,
        clock=StepClock(),
        sender_name=settings.notifications_sender,
        default_webhook=None,
        adult_age=18,
    )
    result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
    worker.close()

    ids = {p: delivery_id(campaign_id="c1", campaign_created_at=created_at, profile_id=p) for p in results}
    assert {p: result.verdicts[ids[p]] for p in results} == expected
    assert len(result.retry) == 4 and len(result.done) == 3
    assert notified(graph, "c1") == ["p1"]
    record = get_dispatch(graph, dispatch_id)
    assert (record.acknowledged, record.rejected, record.suppressed) == (1, 1, 1)
    assert {item.campaign for item in sender.posted} == {("c1", created_at)}  # each POST asks the gate
    assert sender.closed  # the worker owns the sender it was given


_HOT = {
    "notify_recheck": notify_recheck_query(capped=False),
    "notify_recheck_capped": notify_recheck_query(capped=True),  # with CAMPAIGN_FREQUENCY_CAPS
    "notify_record": statement("notify_record"),
}


@pytest.mark.parametrize("name", sorted(_HOT))
def test_hot_statements_seek_unique_keys_and_never_scan(graph: Graph, name: str) -> None:
    """They run with replan=skip, so the plan they get first must be the one statistics cannot improve:
    unique-key seeks for campaign and profile, expansions between bound nodes, no scans."""
    caps: FrequencyCaps = {"*": {"notify": ChannelCap.model_validate({"max": 1, "windowSeconds": 60})}}
    plan = graph.driver.execute_query(
        "EXPLAIN " + _HOT[name],
        {
            "jobs": [],
            "acks": [],
            "now": "2026-01-01T00:00:00.000Z",
            **cap_params(caps, "notify", now=NOW),
            **policy_params(NOW, 18),
        },
        database_=graph.database,
    ).summary.plan
    ops = operators(plan)
    assert "CYPHER replan=skip" in _HOT[name]
    assert sum(op.startswith("NodeUniqueIndexSeek") for op in ops) == 2, ops
    assert not any("Scan" in op for op in ops), ops


@pytest.mark.parametrize(
    ("url", "updates", "refused"),
    [
        ("http://inbox.example.org/api/notifications/send", {}, "only https"),
        ("https://inbox.example.org:8443/api/notifications/send", {}, "the receiver.s port"),
        ("https://inbox.example.org:8443/x", {"campaign_egress_ports": frozenset({8443})}, None),
        ("https://inbox.example.org/x", {}, None),
        ("http://127.0.0.1:8025/x", {"campaign_local_development": True}, None),  # make dev's inbox
    ],
)
def test_the_default_receiver_must_be_one_egress_allows_at_start(
    base_settings: Settings, graph: Graph, url: str, updates: dict[str, object], refused: str | None
) -> None:
    values: dict[str, object] = {"campaign_local_development": False, "notifications_webhook_url": url}
    settings = delivery_settings(base_settings, **{**values, **updates})
    if refused is None:
        build_notification_worker(settings, graph, clock=StepClock()).close()
        return
    with pytest.raises(ConfigError, match=f"NOTIFICATIONS_WEBHOOK_URL: {refused}"):
        build_notification_worker(settings, graph, clock=StepClock())
