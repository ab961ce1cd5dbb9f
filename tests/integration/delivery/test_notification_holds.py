"""Notification worker rules with real Neo4j, a real local queue and real loopback receivers: what holds a
notification back: blocked egress, a pause (before the send and while rechecked posts wait for a slot),
and a self-test delivery, which never sets notifiedAt."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, delivery_id, job_json
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.transport import make_webhook_transport
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_notification_worker
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
)
from tests.support.notification_worker import _page, parsed


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
