"""Notification worker rules with real Neo4j, a real local queue and real loopback receivers: only a positive
acknowledgement sets notifiedAt, a redelivered acknowledged delivery is a duplicate, an outcome write
whose commit was cut off is rerun and counted once, a negative answer is rejected, not retried."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from campaign_engine.campaigns.audience import members as audience
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.domain.audience import ProfileIdsSource
from campaign_engine.domain.dispatch import delivery_id
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.wiring import build_notification_worker
from tests.support.bolt_cut import bolt_cutter
from tests.support.delivery import (
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    notified,
)
from tests.support.notification_worker import _page, parsed


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


def test_a_person_removed_while_their_post_is_in_flight_is_not_counted(
    base_settings: Settings, graph: Graph, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """removeAudience commits (from the receiver's thread) while the worker waits on p2's POST: the
    acknowledgement write, which rechecks membership under the profile lock removeAudience also takes,
    sets no notifiedAt for p2, counts only p1, and logs p2 as not counted."""
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    settings = delivery_settings(base_settings)
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    policy = Policy(now=StepClock()(), adult_age=18, domain=settings.domain_name)
    removed: list[int] = []

    def remove_p2(count: int) -> None:
        if count == 1:  # the first POST is in: the recheck has passed for the whole batch
            source = ProfileIdsSource(type="profileIds", profileIds=["p2"])
            removed.append(
                audience.remove_audience(graph, campaign_id="c1", source=source, policy=policy).removed
            )

    receiver.on_post = remove_p2
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1", "p2"], webhook=f"{server.url}/hook", tenants=["default"])
        dispatch_id = _page(settings, graph, queues)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        try:
            with caplog.at_level(logging.INFO, logger="campaign_engine.delivery.notify.outcomes"):
                result = worker.handle_batch(parsed(queues.delivery.receive(max_messages=10)))
        finally:
            worker.close()
    assert removed == [1] and len(receiver.received) == 2
    assert sorted(result.verdicts.values()) == ["positive", "positive"]
    assert notified(graph, "c1") == ["p1"]
    assert get_dispatch(graph, dispatch_id).acknowledged == 1
    (record,) = [r for r in caplog.records if r.getMessage() == "notify.not_counted"]
    assert record.__dict__["profileIds"] == ["p2"] and record.__dict__["reason"] == "not_member"
