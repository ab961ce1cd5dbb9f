"""What the Postmark-webhook tests share: Postmark's documented record shapes (bounce, spam complaint,
subscription change, delivery), the webhook's credentials, a post to it, and the suppressions and
opt-outs read back."""

from __future__ import annotations

import copy
from typing import Any

from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient

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
