"""The sender is the tenant: a notification's ``sender`` is the campaign tenant's display name, the
deployment's NOTIFICATIONS_SENDER only where the tenant has no record. Real Neo4j, the local queue and a
loopback receiver."""

from __future__ import annotations

import json
from pathlib import Path

from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.domain.tenant import TenantCreate
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import create_tenant
from campaign_engine.queue.port import Received
from campaign_engine.wiring import build_notification_worker, build_page_worker
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    start_dispatch,
)


def test_a_notification_carries_its_tenants_name_as_sender(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = delivery_settings(base_settings, notifications_sender="The Platform")
    river = TenantCreate.model_validate({"tenantId": "river", "name": "Riverside School"})
    create_tenant(graph, data=river, now=NOW, audit=None)
    tenants_of(graph, settings).invalidate()
    queues = local_queues(tmp_path / "q.sqlite3")
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    with ThreadServer(receiver.app()) as server:
        for campaign, tenant in (("n-river", "river"), ("n-unknown", "no-record")):
            make_campaign(graph, campaign, tenant_id=tenant)
            add_members(graph, campaign, [f"{tenant}-member"], webhook=f"{server.url}/hook", tenants=[tenant])
            start_dispatch(graph, queues.dispatch, campaign)
        pages = build_page_worker(settings, graph, queues, clock=StepClock())
        for message in queues.dispatch.receive(max_messages=10):
            pages.handle_page(parse_job(message.body))  # type: ignore[arg-type]
        batch = queues.delivery.receive(max_messages=10)
        worker = build_notification_worker(settings, graph, clock=StepClock())
        try:
            items = [Received(m, parse_job(m.body)) for m in batch]
            worker.handle_batch([i for i in items if isinstance(i.job, DeliveryJob)])  # type: ignore[misc]
        finally:
            worker.close()
    senders = {json.loads(r["body"])["recipient"]: json.loads(r["body"])["sender"] for r in receiver.received}
    assert senders == {"river-member": "Riverside School", "no-record-member": "The Platform"}
