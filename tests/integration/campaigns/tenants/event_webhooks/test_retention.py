"""Event-webhook history and queue: delivered events and attempts expire but a queued event never,
attempts page through, the reads are index seeks, events of the first release are still delivered,
and an event touched again within the kick interval gets a later job.

Time is a ``StepClock``: an outage of ten minutes, or five days of failures, is the clock moved on
and the sweep run, never a wait."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import pytest

from campaign_engine.campaigns.tenants.webhook_endpoints import list_attempts
from campaign_engine.delivery.notify.sender import Outgoing, PostResult
from campaign_engine.delivery.webhook_relay import WebhookRelay
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.wiring import run_sweep
from tests.support.delivery import (
    ThreadServer,
    make_campaign,
)
from tests.support.event_webhooks import EventReceiver, Stack, _endpoint
from tests.support.plans import operators


def test_delivered_events_and_attempts_expire_but_a_queued_event_never(stack: Stack, graph: Graph) -> None:
    def history() -> dict[str, list[str]]:
        messages = graph.run(
            "MATCH (b:WebhookBatch) UNWIND range(0, size(b.sent) - 1) AS i"
            " RETURN b.bodies[i] AS body, b.sent[i] AS sent"
        )
        attempts = graph.run(  # one node per relay round, its attempts as lists
            "MATCH (a:WebhookAttempt) UNWIND a.eventIds AS event RETURN a.at AS at ORDER BY at"
        )
        return {
            "sent": sorted(json.loads(m["body"])["data"]["campaignId"] for m in messages if m["sent"]),
            "queued": sorted(json.loads(m["body"])["data"]["campaignId"] for m in messages if not m["sent"]),
            "attempts": [a["at"][:10] for a in attempts],
        }

    receiver = EventReceiver()
    with ThreadServer(receiver.app()) as server:
        _, secret = _endpoint(stack, server, events=["campaign.created"])
        receiver.secrets.append(secret)
        make_campaign(graph, "c1", status="draft")
        stack.run()
        receiver.down = True
        make_campaign(graph, "c2", status="draft")
        stack.run()
        assert history() == {"sent": ["c1"], "queued": ["c2"], "attempts": ["2026-03-01", "2026-03-01"]}

        stack.later(31 * 86_400)  # past CAMPAIGN_EVENT_RETENTION_DAYS (30): the sweep forgets what was sent
        swept = run_sweep(stack.settings, graph, stack.queues.dispatch, clock=stack.clock)
        assert swept.events_expired == 3  # c1's event and both attempts; c2's event is still owed
        assert history() == {"sent": [], "queued": ["c2"], "attempts": []}

        receiver.down = False
        make_campaign(graph, "c3", status="draft", now=stack.clock())
        stack.run()  # c2 delivered late, c3 at once; then c2's event is old and delivered: it goes
        assert sorted(r["event"]["data"]["campaignId"] for r in receiver.received) == ["c1", "c2", "c3"]
        assert history() == {"sent": ["c3"], "queued": [], "attempts": ["2026-04-01", "2026-04-01"]}


def test_attempts_page_through_a_round_and_into_those_recorded_one_per_node(graph: Graph) -> None:
    """A round's attempts are one node (its POSTs as lists); attempts the release before rounds wrote are
    one node each. Both read as attempts, newest first, and a cursor may fall inside a round."""
    graph.run(
        "CREATE (:WebhookAttempt {endpointId: 'e', eventId: 'old', type: 'campaign.created',"
        " at: '2026-03-01T00:00:00.000000Z', orderKey: '2026-03-01T00:00:00.000000Z|a', statusCode: 503,"
        " latencyMs: 5, error: null, nextRetryAt: '2026-03-01T00:00:05.000000Z'})"
        " CREATE (:WebhookAttempt {endpointId: 'e', at: '2026-03-02T00:00:00.000000Z',"
        " orderKey: '2026-03-02T00:00:00.000000Z|b', latencyMs: 7, retryAt: '2026-03-02T00:05:00.000000Z',"
        " eventIds: ['r0', 'r1', 'r2'],"
        " types: ['recipient.notified', 'recipient.emailed', 'dispatch.started'],"
        " statusCodes: [204, 0, 500], errors: ['', 'TimedOut', '']})"
        " CREATE (:WebhookAttempt {endpointId: 'other', at: '2026-03-03T00:00:00.000000Z',"
        " orderKey: '2026-03-03T00:00:00.000000Z|c', latencyMs: 1, retryAt: null, eventIds: ['x'],"
        " types: ['campaign.created'], statusCodes: [204], errors: ['']})"
    )
    seen, cursor, pages = [], None, 0
    while True:
        page = list_attempts(graph, endpoint_id="e", cursor=cursor, limit=2)
        seen += [(a.event_id, a.status_code, a.error, a.next_retry_at) for a in page.records]
        pages, cursor = pages + 1, page.cursor
        if cursor is None:
            break
    assert pages == 2
    assert seen == [
        ("r2", 500, None, "2026-03-02T00:05:00.000000Z"),
        ("r1", None, "TimedOut", "2026-03-02T00:05:00.000000Z"),
        ("r0", 204, None, None),
        ("old", 503, None, "2026-03-01T00:00:05.000000Z"),
    ]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("webhook_relay_pending", {"endpointId": "e", "limit": 200}),
        ("webhook_replay", {"endpointId": "e", "since": "", "after": "", "limit": 1000}),
        ("webhook_attempt_list", {"endpointId": "e", "before": "~", "limit": 50}),
        ("webhook_expire", {"before": "2026", "limit": 5000}),
    ],
)
def test_the_queue_history_and_retention_reads_are_ordered_index_seeks(
    graph: Graph, name: str, params: dict[str, Any]
) -> None:
    """A queue of a million events costs a round its batch, not a sort of the million."""
    plan = graph.driver.execute_query(
        "EXPLAIN " + statement(name), params, database_=graph.database
    ).summary.plan
    assert plan is not None
    ops = operators(plan)
    assert "NodeIndexSeek" in ops or "NodeIndexSeekByRange" in ops, ops
    assert "Sort" not in ops and "Top" not in ops and "PartialSort" not in ops, ops


def test_events_queued_by_the_first_release_one_node_each_are_still_delivered(
    stack: Stack, graph: Graph
) -> None:
    """The first release of event webhooks queued a :WebhookMessage per event; the schema's backfill folds
    them into batches."""
    receiver = EventReceiver()
    with ThreadServer(receiver.app()) as server:
        endpoint_id, secret = _endpoint(stack, server, events=["campaign.created"])
        receiver.secrets.append(secret)
        at = "2026-03-01T11:00:0{}.000000Z"
        old = [Event.of("campaign.created", at.format(i), campaignId=f"o{i}") for i in "12"]
        graph.run(
            "UNWIND $rows AS r CREATE (:WebhookMessage {endpointId: $endpointId, eventId: r.id,"
            " tenantId: 'default', type: r.type, occurredAt: r.at, body: r.body, orderKey: r.key,"
            " queueKey: r.queued, recipientKey: r.id, attempts: 0})",
            endpointId=endpoint_id,
            rows=[
                {"id": e.id, "type": e.type, "at": e.occurred_at, "body": e.body(), "key": e.order_key,
                 "queued": None if i == 0 else e.order_key}  # the first was delivered before the upgrade
                for i, e in enumerate(old)
            ],
        )  # fmt: skip
        graph.run("MATCH (m:SchemaMigration {name: 'webhook_message_batches'}) DELETE m")
        apply_schema(graph)  # what the upgrade's first start does
        assert graph.run("MATCH (m:WebhookMessage) RETURN count(m) AS n") == [{"n": 0}]
        stack.run()
        assert [r["event"]["data"]["campaignId"] for r in receiver.received] == ["o2"]  # the one still owed


def test_events_touched_again_within_the_kick_interval_get_a_later_job_not_none(
    stack: Stack, graph: Graph
) -> None:
    """The last events of a burst must not wait for the minute's sweep: a kick that may not start the
    relay now schedules it for when it may, and one already scheduled covers what comes before it."""
    relay = WebhookRelay(
        graph=graph, sender=_NoSender(), box=None, queue=stack.queues.webhooks, clock=stack.clock
    )
    view = subscribers_for(graph)
    view.touch(["wep_a"])
    relay.kick()  # the first: a job after the batch's commit
    view.touch(["wep_a", "wep_b"])
    relay.kick()  # wep_a's job is still to come (it reads these too); wep_b's first
    view.touch(["wep_a"])
    time.sleep(1.1)  # wep_a's job is visible now: the next one comes one interval after it
    relay.kick()
    stats = stack.queues.webhooks.stats()
    assert stats.visible + stats.delayed == 3, stats  # a, b, then a again: none dropped, none doubled
    assert stats.delayed >= 1


class _NoSender:
    def post_all(self, items: Sequence[Outgoing]) -> list[PostResult]:
        raise AssertionError("kick never posts")

    def close(self) -> None:
        pass
