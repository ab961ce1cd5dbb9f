"""POST /webhooks/postmark against the real app and graph, replaying Postmark's documented record
shapes: hard bounces suppress, a record applies once (replayed, or twice at once), its identity
is forgotten after the dedup window, soft bounces suppress after the limit."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.feedback.postmark import parse_postmark
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from campaign_engine.wiring import run_sweep
from tests.support.api import TrpcClient
from tests.support.concurrency import at_once
from tests.support.delivery import StepClock
from tests.support.plans import operators
from tests.support.postmark_feedback import (
    BOUNCE,
    applied,
    record,
    suppressions,
)


@pytest.mark.parametrize(
    ("bounce_type", "inactive"),
    [("HardBounce", False), ("BadEmailAddress", False), ("ManuallyDeactivated", False), ("SoftBounce", True)],
)
def test_hard_bounces_suppress_the_address(
    api: TrpcClient, graph: Graph, bounce_type: str, inactive: bool
) -> None:
    assert (
        applied(api, record(BOUNCE, Type=bounce_type, Inactive=inactive, Email="John@Example.COM"))
        == "applied"
    )
    assert suppressions(graph) == {"john@example.com": "hard_bounce"}  # one normal form: lowercased


def test_a_replayed_record_applies_once(api: TrpcClient, graph: Graph, clock: StepClock) -> None:
    soft = record(BOUNCE, Type="SoftBounce", Inactive=False, ID=1001)
    assert applied(api, soft) == "applied"
    for _ in range(3):  # the provider retrying one record is never three soft bounces
        clock.now += timedelta(minutes=1)
        assert applied(api, soft) == "duplicate"
    assert suppressions(graph) == {}
    assert graph.run("MATCH (b:EmailSoftBounces) RETURN size(b.times) AS n")[0]["n"] == 1
    assert applied(api, BOUNCE) == "applied"
    assert applied(api, BOUNCE) == "duplicate"
    assert graph.run("MATCH (s:EmailSuppression) RETURN s.feedbackCount AS n")[0]["n"] == 1


def test_one_record_delivered_twice_at_once_applies_once(settings: Settings, graph: Graph) -> None:
    soft = record(BOUNCE, Type="SoftBounce", Inactive=False, ID=2002)
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=StepClock())
    feedback = parse_postmark(soft)
    assert feedback is not None
    results = at_once(store.apply, [(feedback,)] * 4)
    assert sorted(r.duplicate for r in results) == [False, True, True, True]
    assert graph.run("MATCH (b:EmailSoftBounces) RETURN size(b.times) AS n")[0]["n"] == 1


def test_record_identities_are_forgotten_after_the_dedup_window(
    settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """The sweep deletes dedup records older than CAMPAIGN_FEEDBACK_DEDUP_DAYS through its index; a
    newer record is kept and a provider's retry of it is still a duplicate."""
    clock = StepClock()
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=clock)
    old, new = parse_postmark(record(BOUNCE, ID=3003)), parse_postmark(record(BOUNCE, ID=3004))
    assert old is not None and new is not None
    assert not store.apply(old).duplicate
    clock.now += timedelta(days=30, minutes=1)
    assert not store.apply(new).duplicate
    queue = LocalQueue(tmp_path / "q.sqlite3", "dispatch")
    dedup = settings.model_copy(update={"campaign_feedback_dedup_days": 30})

    result = run_sweep(dedup, graph, queue, clock=clock)
    assert result.feedback_expired == 1
    assert [r["key"] for r in graph.run("MATCH (r:FeedbackRecord) RETURN r.key AS key")] == [new.key]
    # Both named a message no send carries: only the newer one's kept feedback (each id form) is left.
    assert {r["key"] for r in graph.run("MATCH (f:PendingFeedback) RETURN f.key AS key")} == {new.key}
    assert store.apply(new).duplicate
    assert run_sweep(dedup, graph, queue, clock=clock).feedback_expired == 0

    with graph.driver.session() as session:
        summary = session.run("EXPLAIN " + statement("feedback_expire"), before="x", limit=1).consume()
    assert summary.plan is not None
    ops = operators(summary.plan)
    assert "NodeIndexSeekByRange" in ops and "NodeByLabelScan" not in ops, ops


def test_soft_bounces_suppress_after_the_limit_within_the_window(
    api: TrpcClient, graph: Graph, clock: StepClock
) -> None:
    def soft(record_id: int, bounce_type: str = "SoftBounce") -> str:
        return applied(api, record(BOUNCE, Type=bounce_type, Inactive=False, ID=record_id))

    assert soft(1) == "applied"
    clock.now += timedelta(hours=1)
    assert soft(2, "Transient") == "applied"
    clock.now += timedelta(hours=23, minutes=30)  # the first one has left the 24 h window, not the second
    assert soft(3, "DnsError") == "applied"
    assert suppressions(graph) == {}
    assert soft(4, "AutoResponder") == "ignored"  # says nothing about the address
    assert suppressions(graph) == {}
    clock.now += timedelta(minutes=15)
    assert soft(5) == "applied"  # three inside 24 h
    assert suppressions(graph) == {"john@example.com": "soft_bounce"}
