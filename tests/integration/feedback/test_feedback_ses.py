"""POST /webhooks/ses: SES feedback in SNS envelopes signed by a test CA the API trusts in tests only,
the signing certificate and subscription confirmation served by a loopback stand-in for the SNS host."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import ConfigError, Settings
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.feedback.sns_http import SnsHttp
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import TrpcClient, api_client, ok
from tests.support.email import add_email_members, address_of, make_email_campaign
from tests.support.hostile_json import HOSTILE_BODIES
from tests.support.servers import serve_in_thread
from tests.support.sns import (
    CERT_URL,
    SNS_HOST,
    TOPIC_ARN,
    SnsHostStandin,
    authority,
    notification,
    ses_bounce,
    ses_complaint,
    sns_host_standin,
    sns_timestamp,
    subscription_confirmation,
)


@pytest.fixture(scope="module")
def sns_host() -> Iterator[SnsHostStandin]:
    with sns_host_standin() as standin:
        yield standin


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return base_settings.model_copy(
        update={"ses_feedback_topic_arns": TOPIC_ARN, "campaign_soft_bounce_limit": 2}
    )


@pytest.fixture
def api(settings: Settings, graph: Graph, sns_host: SnsHostStandin) -> Iterator[TrpcClient]:
    sns_host.requests.clear()
    with api_client(settings, graph, sns_http=sns_host.client()) as client:
        yield client


def post(api: TrpcClient, envelope: Any) -> Any:
    # SNS posts JSON as text/plain.
    return api.http.post(
        "/webhooks/ses",
        content=json.dumps(envelope),
        headers={
            "content-type": "text/plain; charset=UTF-8",
            "x-amz-sns-message-type": envelope.get("Type", ""),
        },
    )


def suppressions(graph: Graph) -> dict[str, str]:
    rows = graph.run("MATCH (s:EmailSuppression) RETURN s.address AS address, s.reason AS reason")
    return {row["address"]: row["reason"] for row in rows}


@pytest.mark.parametrize("version", ["1", "2"])
def test_signed_notifications_of_both_signature_versions_are_applied(
    api: TrpcClient, graph: Graph, sns_host: SnsHostStandin, version: str
) -> None:
    envelope = authority().sign(
        notification(ses_bounce("Gone@Example.com"), subject="Amazon SES"), version=version
    )
    response = post(api, envelope)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "applied"
    assert suppressions(graph) == {"gone@example.com": "hard_bounce"}
    assert sns_host.certificate_fetches == [f"sns.us-east-1.amazonaws.com{CERT_URL.split('.com', 1)[1]}"]


def test_a_retried_notification_and_its_feedback_apply_once_and_the_certificate_is_cached(
    api: TrpcClient, graph: Graph, sns_host: SnsHostStandin
) -> None:
    soft = ses_bounce(address_of("p1"), bounce_type="Transient", feedback_id="fb-1")
    envelope = authority().sign(notification(soft))
    assert post(api, envelope).json()["result"] == "applied"
    assert post(api, envelope).json()["result"] == "duplicate"  # SNS retrying the same message
    # The same SES feedback published again under another SNS message id is still one record.
    assert post(api, authority().sign(notification(soft))).json()["result"] == "duplicate"
    assert suppressions(graph) == {}  # one soft bounce of the two allowed
    again = ses_bounce(address_of("p1"), bounce_type="Undetermined", feedback_id="fb-2")
    assert post(api, authority().sign(notification(again))).json()["result"] == "applied"
    assert suppressions(graph) == {address_of("p1"): "soft_bounce"}
    assert len(sns_host.certificate_fetches) == 1


def test_a_complaint_suppresses_opts_out_and_counts_through_our_message_id(
    api: TrpcClient, graph: Graph
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    graph.run(
        "MATCH (p:Profile {profileId: 'p1'}), (c:Campaign {id: 'c1'}) "
        "CREATE (p)-[:CAMPAIGN_STATE {emailedAt: 'x', emailProviderMessageId: '<abc@campaigns.test>'}]->(c)"
    )
    complaint = ses_complaint(address_of("p1"), header_message_id="<abc@campaigns.test>")
    assert post(api, authority().sign(notification(complaint))).json()["result"] == "applied"
    assert suppressions(graph) == {address_of("p1"): "spam_complaint"}
    # The opt-out names the tenant whose send drew the complaint (docs/people.md): its view of p1.
    rows = graph.run(
        "MATCH (p:Profile)-[:HAS_VIEW]->(v:TenantView) WHERE v.announcementEmailOptOut"
        " RETURN p.profileId AS id, v.tenantId AS tenant, p.announcementEmailOptOut AS everywhere"
    )
    assert [(row["id"], row["tenant"], row["everywhere"]) for row in rows] == [("p1", "default", False)]
    stats = ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    assert (stats["complained"], stats["bounced"]) == (1, 0)
    not_spam = ses_complaint(address_of("p2"))
    not_spam["complaint"]["complaintFeedbackType"] = "not-spam"
    assert post(api, authority().sign(notification(not_spam))).json()["result"] == "ignored"
    delivery = {"notificationType": "Delivery", "mail": {"messageId": "m"}, "delivery": {}}
    assert post(api, authority().sign(notification(delivery))).json()["result"] == "ignored"


def _forged(kind: str) -> dict[str, Any]:
    """A bounce envelope broken in one way after (or while) signing it."""
    signer = authority()
    unsigned = notification(ses_bounce("gone@example.com"))
    signed = signer.sign(unsigned)
    forgeries: dict[str, Any] = {
        "tampered-message": lambda: {**signed, "Message": signed["Message"].replace("gone@", "kept@")},
        "tampered-id": lambda: {**signed, "MessageId": "other"},
        "added-subject": lambda: {**signed, "Subject": "added"},
        "other-key": lambda: signer.sign(unsigned, key=signer.tls_key),
        "version-swap": lambda: {**signed, "SignatureVersion": "1"},
        "version-3": lambda: signer.sign(unsigned, version="3"),
        "not-base64": lambda: {**signed, "Signature": "@@@"},
        "no-signature": lambda: {k: v for k, v in signed.items() if k != "Signature"},
    }
    return dict(forgeries[kind]())


@pytest.mark.parametrize(
    "forgery",
    [
        "tampered-message",
        "tampered-id",
        "added-subject",
        "other-key",
        "version-swap",
        "version-3",
        "not-base64",
        "no-signature",
    ],
)
def test_forged_envelopes_are_refused(api: TrpcClient, graph: Graph, forgery: str) -> None:
    response = post(api, _forged(forgery))
    assert response.status_code == 403, response.text
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:FeedbackRecord RETURN count(n) AS n")[0]["n"] == 0
    )


@pytest.mark.parametrize(
    "cert_url",
    [
        "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
        "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-0.pem",
        "https://evil.example/sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
        "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0.pem",  # not the topic's region
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.txt",
        "https://sns.us-east-1.amazonaws.com/x.pem?redirect=https://evil.example/x.pem",
        "https://user:pw@sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
        "https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-0.pem",
    ],
)
def test_certificates_are_fetched_only_over_https_from_the_topic_regions_sns_host(
    api: TrpcClient, graph: Graph, sns_host: SnsHostStandin, cert_url: str
) -> None:
    response = post(api, authority().sign(notification(ses_bounce("gone@example.com"), cert_url=cert_url)))
    assert response.status_code == 403
    assert sns_host.requests == []  # refused before any request
    assert suppressions(graph) == {}


def test_only_configured_topics_are_believed(api: TrpcClient, graph: Graph, sns_host: SnsHostStandin) -> None:
    # Anyone can make SNS sign for their own topic: a valid signature for another topic is refused.
    other = "arn:aws:sns:us-east-1:999999999999:someone-elses-topic"
    response = post(api, authority().sign(notification(ses_bounce("gone@example.com"), topic=other)))
    assert response.status_code == 403
    assert post(api, authority().sign(subscription_confirmation(topic=other))).status_code == 403
    assert sns_host.requests == [] and suppressions(graph) == {}


def test_subscription_confirmation_is_a_get_of_the_subscribe_url_on_the_sns_host(
    api: TrpcClient, sns_host: SnsHostStandin
) -> None:
    confirmation = authority().sign(subscription_confirmation())
    response = post(api, confirmation)
    assert response.status_code == 200 and response.json()["result"] == "confirmed"
    [confirmed] = sns_host.confirmations
    assert confirmed.startswith("sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=")
    assert confirmation["Token"] in confirmed
    sns_host.requests.clear()
    elsewhere = authority().sign(subscription_confirmation(subscribe_host="evil.example"))
    assert post(api, elsewhere).status_code == 403
    assert sns_host.confirmations == []
    unsubscribed = {**subscription_confirmation(), "Type": "UnsubscribeConfirmation"}
    assert post(api, authority().sign(unsubscribed)).json()["result"] == "ignored"


def test_an_unreachable_sns_host_is_retryable(settings: Settings, graph: Graph) -> None:
    closed = SnsHttp(timeout=1.0, verify=authority().client_context(), resolver=lambda h, p: ["127.0.0.1"],
                     allow_private=True, port=free_port())  # fmt: skip
    with api_client(settings, graph, sns_http=closed) as api:
        response = post(api, authority().sign(notification(ses_bounce("gone@example.com"))))
    assert response.status_code == 503
    assert suppressions(graph) == {}


def test_the_production_client_reaches_only_public_sns_hosts_over_https() -> None:
    client = SnsHttp(resolver=lambda host, port: ["127.0.0.1"])  # strict: private answers are refused
    for url in (
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",  # resolves to loopback
        "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
        "https://sns.us-east-1.amazonaws.com.evil.example/x.pem",
        "https://169.254.169.254/latest/meta-data/",
    ):
        with pytest.raises(EgressBlocked):
            client.get(url)


def test_bad_topic_arns_stop_the_app_at_start(base_settings: Settings, graph: Graph) -> None:
    for bad in ("not-an-arn", "arn:aws:sns:us-east-1:1234:t", "arn:aws:sns:evil.example/x:123456789012:t"):
        with pytest.raises(ConfigError, match="SES_FEEDBACK_TOPIC_ARNS"):
            create_app(base_settings.model_copy(update={"ses_feedback_topic_arns": bad}), graph=graph)


@pytest.mark.parametrize("body", HOSTILE_BODIES)
def test_hostile_bodies_are_a_clean_400(api: TrpcClient, graph: Graph, body: bytes) -> None:
    response = api.http.post("/webhooks/ses", content=body, headers={"content-type": "text/plain"})
    assert response.status_code == 400, response.text
    assert graph.run("MATCH (n:FeedbackRecord) RETURN count(n) AS n")[0]["n"] == 0


@pytest.mark.parametrize(
    ("timestamp", "why"),
    [
        (timedelta(seconds=-3700), "older than the hour"),
        (timedelta(hours=1), "far ahead of our clock"),
        ("2026-13-45T99:00:00.000Z", "not a time"),
        ("2026-03-01T12:00:00", "no time zone"),
    ],
)
def test_a_message_outside_the_time_window_is_refused_before_any_fetch(
    api: TrpcClient, graph: Graph, sns_host: SnsHostStandin, timestamp: str | timedelta, why: str
) -> None:
    # An offset is read against the clock when the test runs, not at collection: collection can be
    # minutes earlier, and every xdist worker must collect the same test ids.
    if isinstance(timestamp, timedelta):
        timestamp = sns_timestamp(datetime.now(UTC) + timestamp)
    # A replay of a captured notification, once its dedup record has expired, is refused unfetched.
    envelope = authority().sign(notification(ses_bounce("gone@example.com"), timestamp=timestamp))
    response = post(api, envelope)
    assert response.status_code == 403, (why, response.text)
    assert sns_host.requests == [] and suppressions(graph) == {}


def test_the_time_window_is_a_setting(settings: Settings, graph: Graph, sns_host: SnsHostStandin) -> None:
    ten_minutes_ago = sns_timestamp(datetime.now(UTC) - timedelta(minutes=10))
    envelope = authority().sign(notification(ses_bounce("gone@example.com"), timestamp=ten_minutes_ago))
    strict = settings.model_copy(update={"campaign_sns_max_age_seconds": 300})
    with api_client(strict, graph, sns_http=sns_host.client()) as api:
        assert post(api, envelope).status_code == 403
    with api_client(settings, graph, sns_http=sns_host.client()) as api:  # the default hour
        assert post(api, envelope).json()["result"] == "applied"


def test_a_failed_certificate_fetch_is_remembered(
    api: TrpcClient, graph: Graph, sns_host: SnsHostStandin
) -> None:
    missing = f"https://{SNS_HOST}/SimpleNotificationService-missing.pem"  # the stand-in answers 404
    for _ in range(3):
        envelope = authority().sign(notification(ses_bounce("gone@example.com"), cert_url=missing))
        assert post(api, envelope).status_code == 503
    assert len(sns_host.certificate_fetches) == 1
    assert suppressions(graph) == {}


def test_a_burst_of_new_certificate_urls_does_not_delay_other_api_calls(
    settings: Settings, graph: Graph, sns_host: SnsHostStandin
) -> None:
    """Each envelope names its own certificate URL on a slow SNS host. The fetches run on the verifier's
    few threads, so a synchronous tRPC call (which needs the shared request thread pool, 40 threads)
    answers as fast during the burst as without it; at most a few fetches run, the rest are a 503."""
    # A slow host far slower than any stall of a loaded machine (80 posting threads share this
    # process's GIL with the call: one full run measured 3.7 s against a 3 s host).
    burst, delay = 80, 8.0
    envelopes = [
        authority().sign(
            notification(ses_bounce(f"gone{i}@example.com"), cert_url=f"https://{SNS_HOST}/SNS-{i}.pem")
        )
        for i in range(burst)
    ]
    sns_host.requests.clear()
    sns_host.certificate_delay = delay
    app = create_app(settings, graph=graph, sns_http=sns_host.client(timeout=delay + 5))
    token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    try:
        with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=30) as client:

            def post_one(envelope: dict[str, Any]) -> int:
                with httpx.Client(base_url=base, timeout=30) as own:
                    return own.post("/webhooks/ses", content=json.dumps(envelope)).status_code

            def list_campaigns() -> float:
                started = time.perf_counter()
                admin = {"authorization": f"Bearer {token}"}
                response = client.get("/trpc/campaigns.list", params={"input": "{}"}, headers=admin)
                assert response.status_code == 200, response.text
                return time.perf_counter() - started

            list_campaigns()  # warm: the first call pays for connections and imports
            with ThreadPoolExecutor(burst) as pool:
                statuses = [pool.submit(post_one, envelope) for envelope in envelopes]
                time.sleep(0.5)  # the burst is in: its fetches are waiting on the slow host
                during = max(list_campaigns() for _ in range(3))
                answered = [future.result() for future in statuses]
    finally:
        sns_host.certificate_delay = 0.0
    # Without the verifier's own threads the call queued behind the fetches (5.5 s with a 3 s host).
    assert during < delay / 2, f"a tRPC call took {during:.2f}s during the burst"
    fetched = len(sns_host.certificate_fetches)
    assert 1 <= fetched <= 4  # the verifier's bound on fetches in flight; the rest were refused at once
    assert sorted(answered) == [200] * fetched + [503] * (burst - fetched)
