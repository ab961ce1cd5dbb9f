"""What the health-guard tests share: the Postmark webhook's credentials and its documented bounce and
complaint records, the pages and deliveries a worker runs, feedback posted to the API, and the pause
counters and events read back."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import REGISTRY

from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.wiring import Queues
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient
from tests.support.delivery import (
    NOW,
)

USER, PASSWORD = "postmark", "pm-webhook-password-0123456789"
PAGE = 100

# Postmark's documented bounce and spam complaint records
# (as tests/support/postmark_feedback.py).
BOUNCE: dict[str, Any] = {
    "RecordType": "Bounce", "MessageStream": "broadcast", "Type": "HardBounce", "TypeCode": 1,
    "Name": "Hard bounce", "Tag": "Test", "ServerID": 23, "Description": "unknown user",
    "Details": "Test bounce details", "From": "news@campaigns.test",
    "BouncedAt": "2026-03-01T12:00:00Z", "DumpAvailable": False, "Inactive": True, "CanActivate": True,
    "Subject": "Test subject",
}  # fmt: skip
COMPLAINT: dict[str, Any] = {
    **BOUNCE, "RecordType": "SpamComplaint", "Type": "SpamComplaint", "TypeCode": 512,
    "Name": "Spam complaint", "CanActivate": False,
}  # fmt: skip


def _subscribe(graph: Graph, settings: Settings) -> None:
    subscribers_for(graph).invalidate()
    create_endpoint(
        graph, settings.secret_box(), tenant_id="default", url="https://hooks.invalid/events", events=["*"],
        description=None, now=NOW, audit=None,
    )  # fmt: skip


def _pages(worker: LocalWorker, queues: Queues, count: int) -> None:
    """Walk ``count`` page jobs, one at a time (the next one is queued by the page before it)."""
    for _ in range(count):
        messages = queues.dispatch.receive(max_messages=1)
        assert messages, "no page job queued"
        worker.handle(queues.dispatch, messages)


def _deliveries(worker: LocalWorker, queues: Queues) -> None:
    while messages := queues.delivery.receive(max_messages=10):
        worker.handle(queues.delivery, messages)


def _feedback(api: TrpcClient, base: dict[str, Any], messages: list[dict[str, Any]], first_id: int) -> None:
    for offset, message in enumerate(messages):
        body = {**base, "ID": first_id + offset, "MessageID": message["MessageID"], "Email": message["To"]}
        answer = api.http.post("/webhooks/postmark", json=body, auth=(USER, PASSWORD))
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"] == "applied"


def _pauses(channel: str, rate: str) -> float:
    labels = {"channel": channel, "rate": rate}
    return REGISTRY.get_sample_value("campaign_engine_dispatch_guard_pauses_total", labels) or 0.0


def _events(graph: Graph, kind: str) -> list[dict[str, Any]]:
    rows = graph.run(
        "MATCH (b:WebhookBatch) UNWIND range(0, size(b.types) - 1) AS i WITH b, i WHERE b.types[i] = $t"
        " RETURN b.bodies[i] AS body ORDER BY b.orderKeys[i]",
        t=kind,
    )
    return [json.loads(row["body"]) for row in rows]


def _resume(api: TrpcClient, dispatch_id: str) -> Any:
    return api.mutate("campaigns.resumeDispatch", {"dispatchId": dispatch_id}, as_=ADMIN_ID, admin=True)


def _members(count: int) -> list[str]:
    return [f"p{n:05d}" for n in range(count)]
