"""Each change an event webhook hears of records its event in the change's own transaction:
the email outcomes, provider feedback, an opt-out, a paused or failed dispatch, a deleted campaign, read
back from the outbox itself (``:WebhookBatch``), once each, with ids only. The relay is tested in
``event_webhooks/``; here the endpoint's URL is refused by the egress rules, so nothing leaves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due, schedule_dispatch
from campaign_engine.campaigns.sending.schedule_input import ScheduleInput
from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint
from campaign_engine.config import Settings
from campaign_engine.delivery.dispatch_cursor import record_failure
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.feedback.postmark import parse_postmark
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.unsubscribe.optout import opt_out_by_unsubscribe_id
from campaign_engine.wiring import Queues
from tests.support.delivery import NOW, StepClock, local_queues, run_worker
from tests.support.email import (
    add_email_members,
    address_of,
    email_settings,
    email_states,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

BOUNCE: dict[str, Any] = {
    "RecordType": "Bounce", "MessageStream": "outbound", "ID": 4323372036854775807, "Type": "HardBounce",
    "TypeCode": 1, "Name": "Hard bounce", "Tag": "Test", "ServerID": 23, "Description": "unknown user",
    "Details": "Test bounce details", "From": "sender@example.com",
    "BouncedAt": "2019-11-05T16:33:54.9070259Z",
    "DumpAvailable": True, "Inactive": True, "CanActivate": True, "Subject": "Test subject",
}  # fmt: skip


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _subscribe(graph: Graph, settings: Settings, tenant: str = "default") -> str:
    subscribers_for(graph).invalidate()
    return create_endpoint(
        graph, settings.secret_box(), tenant_id=tenant, url="https://hooks.invalid/events", events=["*"],
        description=None, now=NOW, audit=None,
    ).id  # fmt: skip


def _events(graph: Graph, *types: str) -> list[dict[str, Any]]:
    rows = graph.run(
        "MATCH (b:WebhookBatch) UNWIND range(0, size(b.types) - 1) AS i WITH b, i WHERE b.types[i] IN $types"
        " RETURN b.bodies[i] AS body ORDER BY b.orderKeys[i]",
        types=list(types),
    )
    return [json.loads(row["body"]) for row in rows]


def test_email_outcomes_feedback_and_opt_out_are_events(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    _subscribe(graph, settings)
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3"])
    postmark.error_codes[address_of("p1")] = 406  # inactive recipient: rejected
    started = dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW, settings=DISPATCH_SETTINGS
    )
    run_worker(settings, graph, queues)
    dispatch_id = started.dispatch_ids["email"]
    emailed = _events(graph, "recipient.emailed", "recipient.email_rejected")
    assert sorted((e["type"], e["data"]["profileId"]) for e in emailed) == [
        ("recipient.email_rejected", "p1"), ("recipient.emailed", "p2"), ("recipient.emailed", "p3"),
    ]  # fmt: skip
    assert all(set(e["data"]) == {"campaignId", "dispatchId", "profileId"} for e in emailed)
    assert {(e["data"]["campaignId"], e["data"]["dispatchId"]) for e in emailed} == {("c1", dispatch_id)}
    assert "@" not in json.dumps(emailed)  # never an address
    assert [e["type"] for e in _events(graph, "dispatch.started", "dispatch.completed")] == [
        "dispatch.started",
        "dispatch.completed",
    ]

    # A hard bounce of p2's message: one event, however often the provider repeats the record.
    states = email_states(graph, "c1")
    bounce = {**BOUNCE, "Email": address_of("p2"), "MessageID": states["p2"]["emailProviderMessageId"]}
    feedback = parse_postmark(bounce)
    assert feedback is not None
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=StepClock())
    assert not store.apply(feedback).duplicate and store.apply(feedback).duplicate
    p3_message = states["p3"]["emailProviderMessageId"]
    complaint = parse_postmark(
        {**bounce, "RecordType": "SpamComplaint", "Type": "SpamComplaint", "ID": 7, "Email": address_of("p3"),
         "MessageID": p3_message}
    )  # fmt: skip
    assert complaint is not None
    store.apply(complaint)
    kinds = [
        (e["type"], e["data"]["profileId"])
        for e in _events(graph, "recipient.bounced", "recipient.complained")
    ]
    assert sorted(kinds) == [("recipient.bounced", "p2"), ("recipient.complained", "p3")]

    # An unsubscribe link: one event for each tenant of the profile, and only the first time.
    unsubscribe_id = graph.run("MATCH (p:Profile {profileId: 'p2'}) RETURN p.campaignUnsubscribeId AS u")[0][
        "u"
    ]
    graph.run("MATCH (p:Profile {profileId: 'p2'}) SET p.tenants = ['default']")
    assert opt_out_by_unsubscribe_id(graph, unsubscribe_id, now=NOW)
    assert opt_out_by_unsubscribe_id(graph, unsubscribe_id, now=NOW)
    assert [e["data"] for e in _events(graph, "recipient.unsubscribed")] == [
        {"profileId": "p2", "channel": "email"}
    ]


def test_pause_failure_and_delete_are_events(settings: Settings, graph: Graph, queues: Queues) -> None:
    _subscribe(graph, settings)
    _subscribe(graph, settings, tenant="elsewhere")  # another tenant's endpoint: none of these events
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    started = dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW, settings=DISPATCH_SETTINGS
    )
    definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW + timedelta(seconds=1))
    paused = _events(graph, "dispatch.paused")
    assert [e["data"]["dispatchId"] for e in paused] == [started.dispatch_ids["email"]]

    created_at = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.createdAt AS t")[0]["t"]
    job = PageJob(dispatch_id=started.dispatch_ids["email"], campaign_id="c1", campaign_created_at=created_at,
                  channel="email")  # fmt: skip
    graph.write(
        record_failure, job, error="boom", max_failures=1, now="2026-03-01T12:00:02.000000Z", graph=graph
    )
    assert [e["data"]["dispatchId"] for e in _events(graph, "dispatch.failed")] == [job.dispatch_id]

    deletion.delete_campaign(graph, campaign_id="c1")
    assert [e["data"] for e in _events(graph, "campaign.deleted")] == [{"campaignId": "c1"}]
    tenants = graph.run("MATCH (m:WebhookBatch)<-[]-() RETURN count(m) AS n")  # no relationship to anything
    assert tenants == [{"n": 0}]
    endpoints = graph.run(
        "MATCH (m:WebhookBatch) MATCH (e:WebhookEndpoint {id: m.endpointId}) RETURN DISTINCT e.tenantId AS t"
    )
    assert endpoints == [{"t": "default"}]


def _schedule(graph: Graph, campaign_id: str, send_at: str, **extra: Any) -> list[DispatchPublic]:
    token = preview_dispatch(graph, campaign_id=campaign_id, now=NOW, settings=DISPATCH_SETTINGS)
    data = ScheduleInput.model_validate(
        {"campaignId": campaign_id, "sendAt": send_at, "expectedPreviewToken": token.preview_token, **extra}
    )
    return schedule_dispatch(graph, data=data, now=NOW, settings=DISPATCH_SETTINGS)


def test_a_fired_schedule_is_a_started_event_and_a_refused_one_a_failed_event(
    settings: Settings, graph: Graph, queues: Queues
) -> None:
    _subscribe(graph, settings)
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    (scheduled,) = _schedule(graph, "c1", "2026-03-01T13:00:00Z")
    assert _events(graph, "dispatch.started") == []  # a schedule is not a start
    assert list(
        fire_due(graph, queues.dispatch, now=NOW + timedelta(hours=1), settings=DISPATCH_SETTINGS).values()
    ) == ["sending"]
    (started,) = _events(graph, "dispatch.started")
    assert started["data"] == {
        "campaignId": "c1", "dispatchId": scheduled.dispatch_id, "channel": "email", "recipients": 2,
        "scheduled": True,
    }  # fmt: skip

    # Refused at send time (the campaign now has no recipients): the scheduled Dispatch failed.
    make_email_campaign(graph, "c2")
    add_email_members(graph, "c2", ["p3"])
    (refused,) = _schedule(graph, "c2", "2026-03-01T14:00:00Z", onChange="send_current")
    graph.run("MATCH (:Profile {profileId: 'p3'})-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {id: 'c2'}) DELETE m")
    assert list(
        fire_due(graph, queues.dispatch, now=NOW + timedelta(hours=2), settings=DISPATCH_SETTINGS).values()
    ) == ["failed"]
    (failed,) = _events(graph, "dispatch.failed")
    assert failed["data"]["dispatchId"] == refused.dispatch_id and failed["data"]["reason"] == "no_recipients"
