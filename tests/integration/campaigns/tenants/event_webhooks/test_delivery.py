"""Event webhooks delivered end to end on real components (Neo4j, the local queue, the real worker,
loopback receivers): one event per recipient and outcome of a large dispatch, and every event of an
outage delivered after it, in order.

Time is a ``StepClock``: an outage of ten minutes, or five days of failures, is the clock moved on
and the sweep run, never a wait."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from campaign_engine.campaigns import definitions
from campaign_engine.domain.webhook_events import RETRY_SCHEDULE_SECONDS
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok
from tests.support.delivery import (
    NOW,
    ThreadServer,
    add_members,
    inbox_server,
    make_campaign,
    start_dispatch,
)
from tests.support.event_webhooks import EventReceiver, Stack, _endpoint


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
        # The first round went out whole as soon as the dispatch's page committed (2: one per recipient
        # key of the events then queued, before any recipient's); then the oldest event alone probes.
        assert receiver.received == [] and receiver.refused == 2 + 1 + 1
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
        assert len(pages) == 48 + 4
        failed = [a for a in pages if a["statusCode"] == 503]
        assert len(failed) == 4 and all(a["nextRetryAt"] for a in failed)
        assert all(a["statusCode"] == 204 and a["nextRetryAt"] is None for a in pages if a not in failed)
        assert [a["at"] for a in pages] == sorted((a["at"] for a in pages), reverse=True)

        # Replay: every event since the start goes out again, in order, with its own webhook-id.
        replayed = ok(api.mutate("webhookEndpoints.replay", {"id": created["id"], "since": NOW.isoformat()},
                                 as_=ADMIN_ID, admin=True))  # fmt: skip
        assert replayed == {"queued": 48}
        stack.run()
        assert len(receiver.received) == 96 and receiver.unique() == events

        # Each attempt says when its event occurred; a replay from that time sends that event (the newest
        # here) again, alone, with its own webhook-id: what the console's Replay on a delivery does.
        assert all(a["occurredAt"] == events[a["eventId"]]["occurredAt"] for a in pages)
        newest = max(pages, key=lambda a: a["occurredAt"])  # a round lists its POSTs, not events in order
        again = ok(api.mutate("webhookEndpoints.replay", {"id": created["id"], "since": newest["occurredAt"]},
                              as_=ADMIN_ID, admin=True))  # fmt: skip
        assert again == {"queued": 1}
        stack.run()
        assert [r["id"] for r in receiver.received[96:]] == [newest["eventId"]]


def _rename(name: str) -> Any:
    from campaign_engine.domain.campaign import CampaignPatch

    return CampaignPatch.model_validate({"campaignId": "c1", "name": name})
