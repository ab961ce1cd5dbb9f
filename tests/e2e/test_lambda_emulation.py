"""serverless.yml run as AWS Lambda would run it: a notify + email campaign to 1,200 recipients.

``tests/support/lambda_emulator/`` reads the deployment file itself: it creates the queues it declares
on a real SQS-compatible server (moto) with their visibility timeouts and redrive policies, runs each
function in its own process with its declared environment and handler, feeds the SQS workers the
records Lambda's event source mapping would build (and deletes what they did not report as failed),
calls the sweeper on its schedule and sends API Gateway 2.0 events to the API.

The test talks to the product only through that emulation (tRPC over the emulated HTTP API) and reads
results back through the API, the reference inbox and the Postmark stand-in; the ``graph`` fixture only
wipes the session's Neo4j first. A first, small test holds the emulator itself to Lambda's rules for
settling a batch (partial failures, errors, timeouts, redrive), which the campaign test relies on.
A third runs the lanes as deployed: a critical send started while a bulk one is mid-send is walked and
delivered first, on its lane's own queues and event source mappings.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.domain.types import parse_ts
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.delivery import ThreadServer, inbox_server
from tests.support.email import EMAIL_COPY
from tests.support.event_webhooks import EventReceiver
from tests.support.lambda_deployment import EMAIL_FROM, STAGE, Trpc, overrides, ssm_values
from tests.support.lambda_emulator import LambdaEmulator, load_serverless
from tests.support.moto_server import MOTO_REGION, moto_endpoint  # noqa: F401 - fixture
from tests.support.postmark_standin import PostmarkStandin

pytestmark = pytest.mark.e2e

PROFILES = 1200  # twelve notify waves of 100, three email pages (500 + 500 + 200)
CAMPAIGN = "lambda-launch"
QUEUES = {
    "DispatchQueue",
    "DispatchDeadLetterQueue",
    "DeliveryQueue",
    "DeliveryDeadLetterQueue",
    "WebhookQueue",
    "WebhookDeadLetterQueue",
    "CriticalDispatchQueue",
    "BulkDispatchQueue",
    "CriticalDeliveryQueue",
    "BulkDeliveryQueue",
}


def profile_id(index: int) -> str:
    return f"lp{index:05d}"


def address(index: int) -> str:
    return f"{profile_id(index)}@example.com"


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def inbox(tmp_path: Path) -> Iterator[ThreadServer]:
    with inbox_server(tmp_path) as server:
        yield server


@pytest.fixture
def aws(
    graph: Graph,  # wipes the session's Neo4j before the functions connect to it
    base_settings: Settings,
    moto_endpoint: str,  # noqa: F811 - fixture
    inbox: ThreadServer,
    postmark: PostmarkStandin,
    tmp_path: Path,
) -> Iterator[LambdaEmulator]:
    with LambdaEmulator(
        load_serverless(),
        sqs_endpoint=moto_endpoint,
        region=MOTO_REGION,
        ssm=ssm_values(base_settings, inbox, postmark),
        overrides=overrides(moto_endpoint, postmark),
        log_dir=tmp_path,
        stage=STAGE,
        sweep_every_turns=5,
        # The delivery worker drains its backlog between two pages, as a minute between waves allows
        # in production; a page job is still one poll per turn.
        polls_per_turn={"deliveryWorker": 200},
    ) as emulator:
        yield emulator


def test_notify_and_email_campaign_through_the_emulated_deployment(
    aws: LambdaEmulator, base_settings: Settings, inbox: ThreadServer, postmark: PostmarkStandin
) -> None:
    for name, timeout in (("DispatchQueue", "pageWorker"), ("DeliveryQueue", "deliveryWorker")):
        attributes = aws.queue_attributes(name)  # as declared in serverless.yml, not as assumed here
        assert int(attributes["VisibilityTimeout"]) == 6 * aws.functions[timeout].timeout
        assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 5
    api = Trpc(aws, mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE))

    for start in range(0, PROFILES, 1000):  # profiles.upsert takes at most 1000 per call
        batch = [
            {
                "profileId": profile_id(i),
                "dob": "1990-01-01",
                "emails": [{"address": address(i), "verified": True, "primary": True}],
            }
            for i in range(start, min(start + 1000, PROFILES))
        ]
        assert api.mutate("profiles.upsert", {"profiles": batch})["created"] == len(batch)
    api.mutate(
        "campaigns.create",
        {
            "id": CAMPAIGN,
            "name": "Launch",
            "channels": ["notify", "email"],
            "notification": {"title": "Big news", "body": "Something happened"},
            "email": EMAIL_COPY,
        },
    )
    added = api.mutate("campaigns.addAudience", {"campaignId": CAMPAIGN, "source": {"type": "all"}})
    assert added["added"] == PROFILES
    api.mutate("campaigns.setStatus", {"campaignId": CAMPAIGN, "status": "live"})
    preview = api.query("campaigns.previewDispatch", {"campaignId": CAMPAIGN})
    assert preview["blockedReason"] is None
    assert preview["notificationRecipientCount"] == preview["emailRecipientCount"] == PROFILES
    started = api.mutate(
        "campaigns.dispatch", {"campaignId": CAMPAIGN, "expectedPreviewToken": preview["previewToken"]}
    )
    assert set(started["dispatchIds"]) == {"notify", "email"}

    def finished() -> bool:
        if not aws.queues_empty():
            return False
        dispatches = api.query("campaigns.listDispatches", {"campaignId": CAMPAIGN})
        return all(d["status"] != "sending" for d in dispatches)

    aws.run_until(finished, timeout=600)
    for name in aws.functions:  # shown with -s, or with a failure
        calls = [i.seconds for i in aws.invocations if i.function == name]
        print(f"{name}: {len(calls)} calls, max {max(calls, default=0):.2f} s, total {sum(calls):.1f} s")

    assert aws.errors == []
    dispatches = {d["channel"]: d for d in api.query("campaigns.listDispatches", {"campaignId": CAMPAIGN})}
    assert set(dispatches) == {"notify", "email"}
    for channel, dispatch_id in started["dispatchIds"].items():
        assert dispatches[channel]["dispatchId"] == dispatch_id
        got = api.query("campaigns.getDispatch", {"dispatchId": dispatch_id})
        assert (got["status"], got["lastError"]) == ("completed", None), got
    notify, email = dispatches["notify"], dispatches["email"]
    assert (notify["enqueued"], notify["acknowledged"], notify["rejected"]) == (PROFILES, PROFILES, 0)
    assert (email["emailed"], email["uncertain"], email["throttled"]) == (PROFILES, 0, 0)
    stats = api.query("campaigns.getStats", {"campaignId": CAMPAIGN})
    assert (stats["audience"], stats["notified"], stats["emailed"]) == (PROFILES, PROFILES, PROFILES)

    with httpx.Client(base_url=inbox.url, timeout=10) as client:
        for i in range(PROFILES):
            answer = client.get("/api/notifications", params={"profileId": profile_id(i)})
            answer.raise_for_status()
            (stored,) = answer.json()["notifications"]
            assert stored["receiveCount"] == 1  # one POST, not a deduplicated retry
            assert stored["metadata"]["campaignId"] == CAMPAIGN
    assert Counter(str(m["To"]) for m in postmark.accepted) == Counter(address(i) for i in range(PROFILES))
    assert {(m["From"], m["MessageStream"]) for m in postmark.accepted} == {(EMAIL_FROM, "broadcast")}
    for message in postmark.accepted:  # DOMAIN_NAME and the unsubscribe secret reached the page worker
        headers = {h["Name"]: h["Value"] for h in message["Headers"]}
        assert headers["List-Unsubscribe"].startswith("<https://campaigns.test/campaigns/unsubscribe?token=")

    # Postmark reports a hard bounce for one message it accepted: through API Gateway to the api
    # function, authenticated with the credentials serverless.yml gives it; the address is suppressed
    # and the send it was about counts as bounced.
    bounced = next(m for m in postmark.accepted if m["To"] == address(0))
    bounce = {
        "RecordType": "Bounce",
        "ID": 4323372036854775807,
        "Type": "HardBounce",
        "TypeCode": 1,
        "MessageID": bounced["MessageID"],
        "Email": address(0),
        "BouncedAt": "2026-11-30T16:33:54.9070259Z",
        "Inactive": True,
    }
    credentials = base64.b64encode(b"postmark-feedback:lambda-emulation-webhook-password").decode()
    answer = aws.http(
        "POST",
        "/webhooks/postmark",
        headers={"Authorization": f"Basic {credentials}", "Content-Type": "application/json"},
        body=json.dumps(bounce),
    )
    assert answer.status == 200, answer.body[:500]
    assert api.query("campaigns.getStats", {"campaignId": CAMPAIGN})["bounced"] == 1
    assert api.query("suppressions.get", {"address": address(0)})["address"] == address(0).lower()

    depths = aws.queue_depths()
    assert set(depths) == QUEUES
    assert all(not any(depth.values()) for depth in depths.values()), depths

    # One container per function served everything (no timeout, no crash) and the API app started once.
    # No event-webhook endpoint is subscribed here, so the relay function is never invoked.
    assert aws.cold_starts == Counter(name for name in aws.functions if name != "webhookRelay")
    assert not any(i.function == "webhookRelay" for i in aws.invocations)
    # Every tRPC call and the one bounce webhook.
    assert sum(1 for i in aws.invocations if i.function == "api") == api.calls + 1 > 10
    assert aws.log_text("api").count("api.started") == 1, aws.log_text("api")[-3000:]
    assert any(i.function == "sweeper" for i in aws.invocations)
    # Lambda's runtime leaves the root logger at WARNING: the handlers must still reach CloudWatch at
    # INFO, as JSON lines that carry the invocation's id (observability/logs.py).
    for name in ("pageWorker", "deliveryWorker", "sweeper"):
        lines = [json.loads(line) for line in aws.log_text(name).splitlines() if line.startswith("{")]
        ours = [e for e in lines if str(e.get("logger")).startswith("campaign_engine.")]
        assert any(e["level"] == "info" for e in ours), f"{name} logged nothing at INFO"
        assert all(e.get("requestId") for e in ours), f"{name} logged outside an invocation's id"


def test_an_event_the_api_function_records_is_queued_for_the_relay_before_any_sweep(
    aws: LambdaEmulator, base_settings: Settings
) -> None:
    """The Lambda API handler kicks the relay as the local API does: the relay's job is on WebhookQueue
    when the answer comes back, before any worker or sweeper ran, and the relay function delivers it."""
    receiver = EventReceiver()
    api = Trpc(aws, mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE))
    with ThreadServer(receiver.app()) as endpoint:
        created = api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events",
                                                         "events": ["campaign.created"]})  # fmt: skip
        receiver.secrets.append(created["secret"])
        api.mutate("campaigns.create", {"id": "soon", "name": "Soon", "channels": ["notify"],
                                        "notification": {"title": "T", "body": "B"}})  # fmt: skip
        assert aws.queue_depths()["WebhookQueue"]["Messages"] == 1
        assert aws.turns == 0 and {i.function for i in aws.invocations} == {"api"}
        aws.run_until(lambda: bool(receiver.received), timeout=60)
    assert [r["event"]["data"]["campaignId"] for r in receiver.received] == ["soon"]
    assert aws.errors == []


def _send(api: Trpc, campaign: str, priority: str, ids: list[str]) -> tuple[str, datetime]:
    """A live notify campaign of ``priority`` to ``ids``, dispatched: its notify Dispatch's id, and the
    instant its dispatch call was made (the inbox stamps each first POST on the same clock)."""
    copy = {"title": "T", "body": "B"}
    api.mutate("campaigns.create", {"id": campaign, "name": campaign, "channels": ["notify"],
                                    "priority": priority, "notification": copy})  # fmt: skip
    source = {"type": "profileIds", "profileIds": ids}
    api.mutate("campaigns.addAudience", {"campaignId": campaign, "source": source})
    api.mutate("campaigns.setStatus", {"campaignId": campaign, "status": "live"})
    token = api.query("campaigns.previewDispatch", {"campaignId": campaign})["previewToken"]
    called = datetime.now(UTC)
    started = api.mutate("campaigns.dispatch", {"campaignId": campaign, "expectedPreviewToken": token})
    return str(started["dispatchIds"]["notify"]), called


def test_a_critical_send_overtakes_a_bulk_one_mid_send_on_its_lanes_queues(
    aws: LambdaEmulator, base_settings: Settings, inbox: ThreadServer
) -> None:
    api = Trpc(aws, mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE))
    bulk_ids = [profile_id(i) for i in range(800)]  # eight pages of 100
    critical_ids = [profile_id(i) for i in range(800, 850)]
    api.mutate("profiles.upsert", {"profiles": [{"profileId": p, "dob": "1990-01-01"}
                                                for p in bulk_ids + critical_ids]})  # fmt: skip
    bulk, _ = _send(api, "lanes-bulk", "bulk", bulk_ids)

    def got(dispatch_id: str) -> Any:
        return api.query("campaigns.getDispatch", {"dispatchId": dispatch_id})

    while got(bulk)["acknowledged"] < 100:  # mid-send: a page delivered (run_until waits for idle)
        aws.turn()
    critical, called = _send(api, "lanes-critical", "critical", critical_ids)
    waiting = 0
    while got(critical)["acknowledged"] < len(critical_ids):
        aws.turn()
        waiting = len(bulk_ids) - got(bulk)["acknowledged"]
        assert waiting > 0, "every bulk recipient had it before the critical send was done"
    with httpx.Client(base_url=inbox.url, timeout=10) as client:
        first = min(
            parse_ts(client.get("/api/notifications", params={"profileId": p}).json()["notifications"][0][
                "firstReceivedAt"])
            for p in critical_ids
        )  # fmt: skip
    first_page = (aws.first_handed["CriticalDispatchQueue"] - called).total_seconds()
    first_post = (first - called).total_seconds()
    print(f"critical: first page {first_page:.2f} s and first POST {first_post:.2f} s after its dispatch "
          f"call; all delivered with {waiting} bulk still waiting")  # fmt: skip
    assert first_page <= 5.0
    aws.run_until(lambda: aws.queues_empty() and got(bulk)["acknowledged"] == len(bulk_ids), timeout=600)
    assert aws.errors == []
    assert aws.queue_attributes("CriticalDispatchQueue")["RedrivePolicy"]  # as declared, with its DLQ
    with httpx.Client(base_url=inbox.url, timeout=10) as client:  # every recipient exactly once
        for pid in bulk_ids + critical_ids:
            answer = client.get("/api/notifications", params={"profileId": pid})
            (stored,) = answer.json()["notifications"]
            assert stored["receiveCount"] == 1
