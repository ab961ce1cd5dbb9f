"""Event webhooks, end to end on real components: Neo4j, the local queue, the real
worker (``wiring.build_worker``), loopback receivers verifying every POST with the official Standard
Webhooks library, and the API for the endpoint procedures.

Time is a ``StepClock``: an outage of ten minutes, or five days of failures, is the clock moved on and
the sweep run, never a wait.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response
from standardwebhooks import Webhook, WebhookVerificationError

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint, list_attempts
from campaign_engine.config import Settings
from campaign_engine.delivery.notify.sender import Outgoing, PostResult
from campaign_engine.delivery.runner import Worker
from campaign_engine.delivery.webhook_relay import WebhookRelay
from campaign_engine.domain.webhook_events import RETRY_SCHEDULE_SECONDS, Event
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    drain,
    inbox_server,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.plans import operators


@dataclass
class EventReceiver:
    """An endpoint that verifies each POST with the official library against its secrets (any one
    verifying is enough, as for a receiver mid-rotation) and answers 503 while ``down``."""

    secrets: list[str] = field(default_factory=list)
    down: bool = False
    received: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/events")
        async def events(request: Request) -> Response:
            body = await request.body()
            headers = dict(request.headers)
            with self.lock:
                if self.down:
                    self.refused += 1
                    return Response(status_code=503)
                verified_by = []
                for secret in self.secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        verified_by.append(secret)
                    except WebhookVerificationError:
                        pass
                if not verified_by:
                    return Response(status_code=401)
                event = json.loads(body)
                self.received.append({"id": headers["webhook-id"], "event": event, "verifiedBy": verified_by})
            return Response(status_code=204)

        return app

    def unique(self) -> dict[str, dict[str, Any]]:
        """Events by ``webhook-id``: what a receiver deduplicating by it keeps."""
        return {r["id"]: r["event"] for r in self.received}


@dataclass
class Stack:
    settings: Settings
    graph: Graph
    queues: Queues
    clock: StepClock
    worker: Worker

    def run(self) -> None:
        """Serve every queued job, then the sweep (which enqueues due endpoints), until all is quiet."""
        for _ in range(50):
            drain(self.worker.handle, self.queues, rounds=2000)
            enqueued = run_sweep(
                self.settings,
                self.graph,
                self.queues.dispatch,
                clock=self.clock,
                webhooks_queue=self.queues.webhooks,
            ).webhooks
            if not enqueued:
                return
        raise AssertionError("the relay never went quiet")

    def later(self, seconds: float) -> None:
        self.clock.now += timedelta(seconds=seconds)


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[Stack]:
    settings = delivery_settings(
        base_settings, campaign_dispatch_page_size=500, campaign_webhook_concurrency=32
    )
    clock = StepClock()
    queues = local_queues(tmp_path / "q.sqlite3")
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    subscribers_for(graph).invalidate()
    try:
        yield Stack(settings, graph, queues, clock, worker)
    finally:
        worker.close()


def _endpoint(
    stack: Stack, receiver: ThreadServer, *, tenant: str = "default", events: list[str] | None = None
) -> tuple[str, str]:
    created = create_endpoint(
        stack.graph, stack.settings.secret_box(), tenant_id=tenant, url=f"{receiver.url}/events",
        events=events or ["*"], description=None, now=stack.clock(), audit=None,
    )  # fmt: skip
    return created.id, created.secret


def test_a_dispatch_of_thousands_gives_one_event_per_recipient_and_outcome(
    stack: Stack, tmp_path: Path
) -> None:
    ours, theirs = EventReceiver(), EventReceiver()
    members = [f"p{i:05d}" for i in range(3000)]
    with (
        ThreadServer(ours.app()) as endpoint,
        ThreadServer(theirs.app()) as other,
        inbox_server(tmp_path) as inbox,
    ):
        _, secret = _endpoint(stack, endpoint)
        ours.secrets.append(secret)
        _, other_secret = _endpoint(stack, other, tenant="other")  # another tenant's: hears nothing of ours
        theirs.secrets.append(other_secret)
        make_campaign(stack.graph, "c1")
        add_members(stack.graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        started = start_dispatch(stack.graph, stack.queues.dispatch, max_recipients=5000)
        stack.run()

    events = ours.unique()
    assert len(ours.received) >= len(events)  # at least once; deduplicated by webhook-id below
    kinds = Counter(e["type"] for e in events.values())
    assert kinds == {
        "campaign.created": 1,
        "campaign.status_changed": 1,
        "dispatch.started": 1,
        "recipient.notified": 3000,
        "dispatch.completed": 1,
    }
    notified = [e for e in events.values() if e["type"] == "recipient.notified"]
    assert sorted(e["data"]["profileId"] for e in notified) == members  # each recipient exactly once
    assert {e["data"]["dispatchId"] for e in notified} == {started.dispatch_id}
    for event_id, event in events.items():
        assert event_id == event["id"] and set(event) == {"id", "type", "occurredAt", "data"}
        assert set(event["data"]) <= {
            "campaignId",
            "dispatchId",
            "profileId",
            "channel",
            "recipients",
            "from",
            "to",
        }
        assert "Big news" not in json.dumps(event) and "http" not in json.dumps(event)  # ids only, never copy
    assert all(r["verifiedBy"] == [secret] for r in ours.received)
    assert theirs.received == []
    counts = stack.graph.run(
        "MATCH (b:WebhookBatch) RETURN count(b) AS batches, sum(size(b.eventIds)) AS events,"
        " count(b.queueKey) AS queued, sum(size([x IN b.sent WHERE NOT x])) AS unsent"
    )
    assert counts[0]["events"] == 3004 and (counts[0]["queued"], counts[0]["unsent"]) == (0, 0)
    # A batch per recording transaction, not a node per event (here each notify write settles ~10 posts).
    assert counts[0]["batches"] * 2 < counts[0]["events"]


def test_every_event_of_a_ten_minute_outage_arrives_after_recovery_in_order(
    stack: Stack, graph: Graph, tmp_path: Path
) -> None:
    receiver = EventReceiver()
    settings = stack.settings
    with (
        ThreadServer(receiver.app()) as endpoint,
        inbox_server(tmp_path) as inbox,
        api_client(settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch) as api,
    ):
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events", "events": ["*"]},
                                as_=ADMIN_ID, admin=True))  # fmt: skip
        assert created["secret"].startswith("whsec_") and created["id"].startswith("wep_")
        receiver.secrets.append(created["secret"])
        listed = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"]
        assert [e["id"] for e in listed] == [created["id"]] and "secret" not in json.dumps(listed)
        assert "whsec_" not in json.dumps(listed)

        receiver.down = True
        make_campaign(graph, "c1")  # at NOW: created, then live
        members = [f"p{i:03d}" for i in range(40)]
        add_members(graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        start_dispatch(graph, stack.queues.dispatch)
        stack.run()  # the first attempt fails at once
        stack.later(5)
        stack.run()  # the second, 5 s later
        stack.later(RETRY_SCHEDULE_SECONDS[1])
        stack.run()  # the third, 5 min later
        for minute in range(1, 5):  # changes made while the receiver is down queue behind the failure
            stack.later(60)
            definitions.update_campaign(graph, patch=_rename(f"renamed {minute}"), now=stack.clock())
        # The first round went out whole (42: one per recipient key); then the oldest event alone probes.
        assert receiver.received == [] and receiver.refused == 42 + 1 + 1
        endpoint_row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
        assert endpoint_row["failures"] == 3 and endpoint_row["pending"] == 1 + 1 + 1 + 40 + 1 + 4
        assert endpoint_row["lastStatus"] == 503 and endpoint_row["enabled"]

        receiver.down = False  # ten minutes in, the receiver is back; the next try is 30 min after the third
        stack.later(600 - 5 - 300 - 240)
        stack.run()
        assert receiver.received == []  # not due yet: the schedule is kept
        stack.later(RETRY_SCHEDULE_SECONDS[2])
        stack.run()

        events = receiver.unique()
        assert len(events) == 48 and len(receiver.received) == 48  # everything, once each
        campaign_events = [e for r in receiver.received if (e := r["event"])["type"].startswith("campaign.")]
        assert [e["type"] for e in campaign_events] == ["campaign.created", "campaign.status_changed"] + [
            "campaign.updated"
        ] * 4
        assert [e["data"].get("fields") for e in campaign_events[2:]] == [["name"]] * 4
        order = [r["event"]["occurredAt"] for r in receiver.received]
        assert order == sorted(order)  # in order, oldest first
        healthy = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
        assert (healthy["failures"], healthy["pending"], healthy["retryAt"]) == (0, 0, None)

        # Every attempt, newest first, keyset-paged: the refusals carry their status and next retry.
        pages, cursor = [], None
        while True:
            data = {"id": created["id"], "limit": 20} | ({"cursor": cursor} if cursor else {})
            page = ok(api.query("webhookEndpoints.deliveries", data, as_=ADMIN_ID, admin=True))
            pages.extend(page["records"])
            cursor = page["cursor"]
            if cursor is None:
                break
        assert len(pages) == 48 + 44
        failed = [a for a in pages if a["statusCode"] == 503]
        assert len(failed) == 44 and all(a["nextRetryAt"] for a in failed)
        assert all(a["statusCode"] == 204 and a["nextRetryAt"] is None for a in pages if a not in failed)
        assert [a["at"] for a in pages] == sorted((a["at"] for a in pages), reverse=True)

        # Replay: every event since the start goes out again, in order, with its own webhook-id.
        replayed = ok(api.mutate("webhookEndpoints.replay", {"id": created["id"], "since": NOW.isoformat()},
                                 as_=ADMIN_ID, admin=True))  # fmt: skip
        assert replayed == {"queued": 48}
        stack.run()
        assert len(receiver.received) == 96 and receiver.unique() == events


def _rename(name: str) -> Any:
    from campaign_engine.domain.campaign import CampaignPatch

    return CampaignPatch.model_validate({"campaignId": "c1", "name": name})


def test_rotation_signs_with_old_and_new_secret_for_the_overlap(stack: Stack, graph: Graph) -> None:
    receiver = EventReceiver()
    with (
        ThreadServer(receiver.app()) as endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch) as api,
    ):
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events",
                                "events": ["campaign.created"]}, as_=ADMIN_ID, admin=True))  # fmt: skip
        old = created["secret"]
        new = ok(
            api.mutate("webhookEndpoints.rotateSecret", {"id": created["id"]}, as_=ADMIN_ID, admin=True)
        )["secret"]
        assert new != old and new.startswith("whsec_")
        receiver.secrets.extend([old, new])
        make_campaign(graph, "c1")
        stack.run()
        assert [r["verifiedBy"] for r in receiver.received] == [[old, new]]  # each secret verifies alone
        assert [r["event"]["type"] for r in receiver.received] == ["campaign.created"]  # only what it took

        stack.later(86_400)  # the overlap is over: the old secret no longer signs
        make_campaign(graph, "c2")
        stack.run()
        assert [r["verifiedBy"] for r in receiver.received][1:] == [[new]]


def test_an_endpoint_failing_for_days_is_disabled_and_says_so(stack: Stack, graph: Graph) -> None:
    receiver = EventReceiver(down=True)
    with (
        ThreadServer(receiver.app()) as endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch) as api,
    ):
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events", "events": ["*"]},
                                as_=ADMIN_ID, admin=True))  # fmt: skip
        receiver.secrets.append(created["secret"])
        make_campaign(graph, "c1", status="draft")
        stack.run()
        waited = 0
        for _ in range(40):  # each retry when due, until it is disabled
            row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
            if not row["enabled"]:
                break
            step = RETRY_SCHEDULE_SECONDS[min(row["failures"], len(RETRY_SCHEDULE_SECONDS)) - 1]
            stack.later(step)
            waited += step
            stack.run()
        assert 5 * 86_400 <= waited < 5 * 86_400 + 36_000  # disabled at the first failure past five days
        assert not row["enabled"] and row["disabledReason"].startswith("failing since 2026-03-01T12:00:00")
        assert "last status 503" in row["disabledReason"] and row["pending"] == 1
        attempts = receiver.refused
        stack.later(86_400)
        stack.run()
        assert receiver.refused == attempts  # disabled: no more attempts

        receiver.down = False
        ok(
            api.mutate(
                "webhookEndpoints.update", {"id": created["id"], "enabled": True}, as_=ADMIN_ID, admin=True
            )
        )
        stack.run()
        assert [r["event"]["type"] for r in receiver.received] == ["campaign.created"]  # nothing was lost
        row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
        assert row["enabled"] and row["disabledReason"] is None and row["failures"] == 0


def test_endpoint_urls_follow_the_egress_rules_and_other_tenants_cannot_see_them(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = base_settings.model_copy(update={"campaign_admin_profile_ids": ADMIN_ID})
    url = "https://hooks.example/e"
    with api_client(settings, graph, clock=StepClock()) as api:

        def create(data: dict[str, Any]) -> Any:
            return api.mutate("webhookEndpoints.create", data, as_=ADMIN_ID, admin=True)

        refused = create({"url": "http://hooks.example/e", "events": ["*"]})
        assert refused.status_code == 400 and "url" in refused.text
        assert create({"url": url, "events": ["nope"]}).status_code == 400
        assert create({"url": url, "events": []}).status_code == 400
        created = ok(create({"url": url, "events": ["*"]}))
        beta = _beta_admin(api)
        assert ok(api.http.get("/trpc/webhookEndpoints.list", headers=beta))["records"] == []
        for path, data in (
            ("webhookEndpoints.update", {"id": created["id"], "description": "mine now"}),
            ("webhookEndpoints.rotateSecret", {"id": created["id"]}),
            ("webhookEndpoints.delete", {"id": created["id"]}),
        ):
            answer = api.http.post(f"/trpc/{path}", json=data, headers=beta)
            assert answer.json()["error"]["data"]["code"] == "NOT_FOUND", path
        answer = api.http.get(
            "/trpc/webhookEndpoints.deliveries",
            params={"input": json.dumps({"id": created["id"]})},
            headers=beta,
        )
        assert answer.json()["error"]["data"]["code"] == "NOT_FOUND"


def _beta_admin(api: TrpcClient) -> dict[str, str]:
    from campaign_engine.api.auth import mint_token

    token = mint_token(api.settings, profile_id="admin-b", scope="", tenant_id="beta", roles=["admin"])
    return {"authorization": f"Bearer {token}"}


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
