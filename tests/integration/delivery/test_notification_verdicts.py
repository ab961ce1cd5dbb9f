"""Notification worker rules with real Neo4j, a real local queue and real loopback receivers: each sender
result maps to its verdict, the hot statements seek unique keys and never scan, and the default
receiver must be one egress allows at start."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

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
from campaign_engine.domain.dispatch import delivery_id
from campaign_engine.domain.frequency_cap import ChannelCap, FrequencyCaps, cap_params
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.wiring import build_notification_worker
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    notified,
)
from tests.support.notification_worker import _page, parsed
from tests.support.plans import operators


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
