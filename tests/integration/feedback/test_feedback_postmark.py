"""POST /webhooks/postmark against the real app and graph, replaying Postmark's documented record shapes."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.feedback.postmark import parse_postmark
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from campaign_engine.wiring import build_worker, run_sweep
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import TrpcClient, api_client, ok
from tests.support.concurrency import at_once
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import ORIGINS, add_email_members, address_of, email_settings, make_email_campaign
from tests.support.hostile_json import HOSTILE_BODIES
from tests.support.plans import operators

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

USER, PASSWORD = "postmark", "pm-webhook-password-0123456789"

# Postmark's documented webhook examples (developer docs, "Bounce webhook", "Spam complaint webhook",
# "Subscription change webhook"); tests change only the address, ids and types they need.
BOUNCE: dict[str, Any] = {
    "RecordType": "Bounce",
    "MessageStream": "outbound",
    "ID": 4323372036854775807,
    "Type": "HardBounce",
    "TypeCode": 1,
    "Name": "Hard bounce",
    "Tag": "Test",
    "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483",
    "Metadata": {"a_key": "a_value", "b_key": "b_value"},
    "ServerID": 23,
    "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
    "Details": "Test bounce details",
    "Email": "john@example.com",
    "From": "sender@example.com",
    "BouncedAt": "2019-11-05T16:33:54.9070259Z",
    "DumpAvailable": True,
    "Inactive": True,
    "CanActivate": True,
    "Subject": "Test subject",
    "Content": "<Full dump of bounce>",
}
SPAM_COMPLAINT: dict[str, Any] = {
    "RecordType": "SpamComplaint",
    "MessageStream": "outbound",
    "ID": 42,
    "Type": "SpamComplaint",
    "TypeCode": 512,
    "Name": "Spam complaint",
    "Tag": "Test",
    "MessageID": "00000000-0000-0000-0000-000000000000",
    "Metadata": {"a_key": "a_value", "b_key": "b_value"},
    "ServerID": 1234,
    "Description": "",
    "Details": "Test spam complaint details",
    "Email": "john@example.com",
    "From": "sender@example.com",
    "BouncedAt": "2019-11-05T16:33:54.9070259Z",
    "DumpAvailable": True,
    "Inactive": True,
    "CanActivate": False,
    "Subject": "Test subject",
    "Content": "<Abuse report dump>",
}
SUBSCRIPTION_CHANGE: dict[str, Any] = {
    "RecordType": "SubscriptionChange",
    "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483",
    "ServerID": 123456,
    "MessageStream": "outbound",
    "ChangedAt": "2020-02-01T10:53:34.416071Z",
    "Recipient": "bounced-address@wildbit.com",
    "Origin": "Recipient",
    "SuppressSending": True,
    "SuppressionReason": "ManualSuppression",
    "Tag": "my-tag",
    "Metadata": {"example": "value", "example_2": "value"},
}
DELIVERY: dict[str, Any] = {
    "RecordType": "Delivery",
    "ServerID": 23,
    "MessageStream": "outbound",
    "MessageID": "00000000-0000-0000-0000-000000000000",
    "Recipient": "john@example.com",
    "Tag": "welcome-email",
    "DeliveredAt": "2019-11-05T16:33:54.9070259Z",
    "Details": "Test delivery webhook details",
    "Metadata": {"a_key": "a_value"},
}


def record(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(base), **changes}


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return base_settings.model_copy(
        update={
            "postmark_webhook_username": USER,
            "postmark_webhook_password": SecretStr(PASSWORD),
            "campaign_soft_bounce_limit": 3,
            "campaign_soft_bounce_window_hours": 24,
            # The API seeds the tenant records at its start (graph/tenants.py): it gets the app origins
            # the workers of these tests send with, as a deployment gives every process one config.
            "campaign_app_origins": json.loads(ORIGINS),
        }
    )


@pytest.fixture
def api(settings: Settings, graph: Graph, clock: StepClock) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=clock) as client:
        yield client


def post(api: TrpcClient, body: Any, *, auth: tuple[str, str] | None = (USER, PASSWORD)) -> Any:
    return api.http.post("/webhooks/postmark", json=body, auth=auth)


def applied(api: TrpcClient, body: Any) -> str:
    response = post(api, body)
    assert response.status_code == 200, response.text
    return str(response.json()["result"])


def suppressions(graph: Graph) -> dict[str, str]:
    rows = graph.run("MATCH (s:EmailSuppression) RETURN s.address AS address, s.reason AS reason")
    return {row["address"]: row["reason"] for row in rows}


def opted_out(graph: Graph) -> list[str]:
    rows = graph.run(
        "MATCH (p:Profile) WHERE p.announcementEmailOptOut = true RETURN p.profileId AS id ORDER BY id"
    )
    return [row["id"] for row in rows]


def test_unconfigured_endpoints_do_not_exist(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        assert post(api, BOUNCE).status_code == 404
        assert api.http.post("/webhooks/ses", json={}).status_code == 404
    assert suppressions(graph) == {}


def test_half_or_weak_credentials_stop_the_app_at_start(base_settings: Settings, graph: Graph) -> None:
    for update in (
        {"postmark_webhook_username": USER},
        {"postmark_webhook_password": SecretStr(PASSWORD)},
        {"postmark_webhook_username": USER, "postmark_webhook_password": SecretStr("short")},
    ):
        with pytest.raises(ConfigError, match="POSTMARK_WEBHOOK"):
            create_app(base_settings.model_copy(update=update), graph=graph)


def test_wrong_or_missing_credentials_are_refused_and_change_nothing(api: TrpcClient, graph: Graph) -> None:
    for auth in (None, (USER, "wrong-password-0123456789"), ("someone", PASSWORD), (USER, PASSWORD + "x")):
        response = post(api, BOUNCE, auth=auth)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Basic")
    garbled = {"authorization": "Basic " + base64.b64encode(b"no-colon").decode()}
    assert api.http.post("/webhooks/postmark", json=BOUNCE, headers=garbled).status_code == 401
    assert (
        api.http.post("/webhooks/postmark", json=BOUNCE, headers={"authorization": "Basic %%%"}).status_code
        == 401
    )
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:FeedbackRecord RETURN count(n) AS n")[0]["n"] == 0
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


def test_spam_complaint_suppresses_and_opts_out_every_profile_with_the_address(
    api: TrpcClient, graph: Graph
) -> None:
    make_email_campaign(graph)
    add_email_members(
        graph, "c1", ["p1"], emails=[{"value": "john@example.com", "isPrimary": True, "isVerified": True}]
    )
    # Another profile using the same address, as a secondary, unverified one: still that address.
    add_email_members(
        graph, "c1", ["p2"], emails=[{"value": "john@example.com", "isPrimary": False, "isVerified": False}]
    )
    add_email_members(graph, "c1", ["p3"])
    assert applied(api, SPAM_COMPLAINT) == "applied"
    assert suppressions(graph) == {"john@example.com": "spam_complaint"}
    assert opted_out(graph) == ["p1", "p2"]
    # A complaint outranks the reason an address was first suppressed for.
    assert applied(api, record(BOUNCE, Email=address_of("p3"))) == "applied"
    assert applied(api, record(SPAM_COMPLAINT, ID=43, Email=address_of("p3"))) == "applied"
    assert suppressions(graph)[address_of("p3")] == "spam_complaint"
    assert opted_out(graph) == ["p1", "p2", "p3"]


def test_bounces_and_complaints_count_in_stats_through_the_provider_message_id(
    api: TrpcClient, graph: Graph
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3"])
    for pid, message_id in (("p1", "m-1"), ("p2", "m-2"), ("p3", "m-3")):
        graph.run(
            "MATCH (p:Profile {profileId: $p}), (c:Campaign {id: 'c1'}) "
            "CREATE (p)-[:CAMPAIGN_STATE {emailedAt: 'x', emailProviderMessageId: $m}]->(c)",
            p=pid,
            m=message_id,
        )
    assert applied(api, record(BOUNCE, MessageID="m-1", Email=address_of("p1"))) == "applied"
    soft = record(BOUNCE, ID=7, Type="SoftBounce", Inactive=False, MessageID="m-3", Email=address_of("p3"))
    assert applied(api, soft) == "applied"  # a soft bounce is not a bounce in the stats
    assert applied(api, record(SPAM_COMPLAINT, MessageID="m-2", Email="P2@example.com")) == "applied"
    stats = ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    assert (stats["emailed"], stats["bounced"], stats["complained"]) == (3, 1, 1)
    # Out of its send's tenant only, not every tenant's (test_feedback_tenants.py, a case variant too).
    assert opted_out(graph) == []


def test_subscription_change_suppresses_and_reactivates(api: TrpcClient, graph: Graph) -> None:
    suppress = SUBSCRIPTION_CHANGE
    assert applied(api, suppress) == "applied"
    assert suppressions(graph) == {"bounced-address@wildbit.com": "manual"}
    reactivate = record(SUBSCRIPTION_CHANGE, SuppressSending=False, ChangedAt="2020-02-02T09:00:00.000000Z")
    assert applied(api, reactivate) == "applied"
    assert suppressions(graph) == {}
    assert applied(api, suppress) == "duplicate"  # a late retry of the old change does not undo the new one
    assert suppressions(graph) == {}
    hard = record(
        SUBSCRIPTION_CHANGE, SuppressionReason="HardBounce", ChangedAt="2020-02-03T09:00:00.000000Z"
    )
    assert applied(api, hard) == "applied"
    assert suppressions(graph) == {"bounced-address@wildbit.com": "hard_bounce"}


def test_other_records_are_acknowledged_and_unreadable_ones_refused(api: TrpcClient, graph: Graph) -> None:
    for other in (DELIVERY, record(DELIVERY, RecordType="Open"), record(DELIVERY, RecordType="Click")):
        assert applied(api, other) == "ignored"
    assert post(api, record(BOUNCE, Email=None)).status_code == 400
    assert post(api, record(BOUNCE, ID=None)).status_code == 400
    assert post(api, record(SUBSCRIPTION_CHANGE, SuppressSending="yes")).status_code == 400
    assert post(api, [BOUNCE]).status_code == 400
    response = api.http.post("/webhooks/postmark", content=b"{not json", auth=(USER, PASSWORD))
    assert response.status_code == 400
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:FeedbackRecord RETURN count(n) AS n")[0]["n"] == 0
    )


def test_a_suppressed_address_gets_no_email_end_to_end(
    api: TrpcClient, settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["a", "b", "c"])
    # "b" shares its address with a profile outside the campaign, whose bounce suppresses it for both.
    add_email_members(
        graph,
        "c1",
        ["other"],
        member=False,
        emails=[{"value": "B@EXAMPLE.com", "isPrimary": True, "isVerified": True}],
    )
    assert applied(api, record(BOUNCE, Email="B@Example.com")) == "applied"
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert preview.email_recipient_count == 2
    port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", port, tmp_path / "mail")
    try:
        smtp = email_settings(
            settings,
            "http://127.0.0.1:1",
            "unused",
            campaign_email_provider="smtp",
            smtp_host="127.0.0.1",
            smtp_port=port,
        )
        queues = local_queues(tmp_path / "q.sqlite3")
        start_dispatch(graph, queues.dispatch)
        worker = build_worker(smtp, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
    finally:
        catcher.stop()
    recipients = sorted(
        line.split(":", 1)[1].strip()
        for mail in (tmp_path / "mail").glob("*.eml")
        for line in mail.read_text().splitlines()
        if line.startswith("To:")
    )
    assert recipients == [address_of("a"), address_of("c")]


@pytest.mark.parametrize("body", HOSTILE_BODIES)
def test_hostile_bodies_are_a_clean_400(api: TrpcClient, graph: Graph, body: bytes) -> None:
    response = api.http.post(
        "/webhooks/postmark",
        content=body,
        auth=(USER, PASSWORD),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert graph.run("MATCH (n:FeedbackRecord) RETURN count(n) AS n")[0]["n"] == 0
