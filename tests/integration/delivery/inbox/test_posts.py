"""The reference inbox as a real uvicorn server on loopback, post by post: stored and acknowledged
once, duplicates counted without a second effect, signatures and payloads refused, listing.

Answers are also run through the worker's acknowledgement grammar, so the receiver and the sender are
proven to agree on what "stored" and "refused" look like."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.inbox.app import MAX_BODY_BYTES
from tests.support.inbox_posts import (
    SECRET,
    ack,
    announcement,
    inbox_of,
    post,
    stored_count,
)


def test_first_post_is_stored_and_acknowledged(inbox: str, db_path: Path) -> None:
    response = post(inbox, announcement())
    assert response.status_code == 200
    assert response.json() == {"sent": True}
    assert ack(response) == "positive"
    [item] = inbox_of(inbox, "p-1")
    assert item["title"] == "Hello"
    assert item["metadata"]["campaignId"] == "c-1"
    assert item["receiveCount"] == 1
    assert inbox_of(inbox, "someone-else") == []
    assert stored_count(db_path) == 1


def test_duplicate_is_acknowledged_counted_and_has_no_second_effect(inbox: str, db_path: Path) -> None:
    assert post(inbox, announcement()).json() == {"sent": True}
    # A retry of the same key (even with a fresh delivery id and edited text) must not store again.
    again = post(inbox, announcement(title="Edited", metadata={"deliveryId": "del-2"}))
    assert again.status_code == 200
    assert again.json() == {"sent": True}
    assert ack(again) == "positive"
    [item] = inbox_of(inbox, "p-1")
    assert item["receiveCount"] == 2
    assert item["title"] == "Hello"
    assert item["metadata"]["deliveryId"] == "del-1"
    assert stored_count(db_path) == 1


def test_test_sends_and_new_incarnations_are_separate_records(inbox: str) -> None:
    post(inbox, announcement())
    post(inbox, announcement(metadata={"campaignTestId": "t-1", "deliveryId": "del-t1"}))
    post(inbox, announcement(metadata={"campaignTestId": "t-2", "deliveryId": "del-t2"}))
    post(inbox, announcement(metadata={"campaignCreatedAt": "2026-02-01T00:00:00.000000Z"}))
    post(inbox, announcement(sender="Other sender"))
    post(inbox, announcement(metadata={"campaignTestId": "t-1", "deliveryId": "del-t1"}))
    items = inbox_of(inbox, "p-1")
    assert len(items) == 5
    by_test = {i["metadata"]["campaignTestId"]: i["receiveCount"] for i in items if i["sender"] == "Acme"}
    assert by_test == {"t-1": 2, "t-2": 1, None: 1}


def test_listing_is_newest_first(inbox: str) -> None:
    post(inbox, announcement(metadata={"campaignId": "c-old"}))
    post(inbox, announcement(metadata={"campaignId": "c-new"}))
    assert [i["metadata"]["campaignId"] for i in inbox_of(inbox, "p-1")] == ["c-new", "c-old"]


@pytest.mark.parametrize(
    "tamper",
    ["wrong-secret", "tampered-body", "stale", "future", "missing-headers", "no-signature"],
)
def test_bad_signature_is_refused_and_nothing_stored(inbox: str, db_path: Path, tamper: str) -> None:
    document = announcement()
    raw = payload_json(AnnouncementPayload.model_validate(document))
    if tamper == "wrong-secret":
        response = post(inbox, document, secret="whsec_c29tZS1vdGhlci1rZXktb2YtMzItYnl0ZXMtMDEyMzQ=")
    elif tamper == "tampered-body":
        headers = signed_headers(SECRET, msg_id="del-1", body=raw, now=int(time.time()))
        forged = raw.replace(b"Hello", b"Pwned")
        response = httpx.post(f"{inbox}/api/notifications/send", content=forged, headers=headers)
    elif tamper == "stale":
        # 10 s past the 300 s tolerance: the receiver reads its clock a moment after we sign (at 301 a
        # second boundary in between let "future" pass in CI). The exact edge is a unit test.
        response = post(inbox, document, skew=-310)
    elif tamper == "future":
        response = post(inbox, document, skew=310)
    elif tamper == "missing-headers":
        response = httpx.post(f"{inbox}/api/notifications/send", content=raw)
    else:
        headers = signed_headers(SECRET, msg_id="del-1", body=raw, now=int(time.time()))
        del headers["webhook-signature"]
        response = httpx.post(f"{inbox}/api/notifications/send", content=raw, headers=headers)
    assert response.status_code == 400
    assert response.json() == {"sent": False, "error": "invalid signature"}
    assert ack(response) == "negative"
    assert stored_count(db_path) == 0


def test_bad_payload_is_refused_without_echoing_input(inbox: str, db_path: Path) -> None:
    document = announcement(metadata={"campaignCreatedAt": "2026-01-02T03:04:05Z"})
    raw = json.dumps(document).encode()
    response = post(inbox, document, body=raw)
    assert response.status_code == 400
    answer = response.json()
    assert answer["sent"] is False
    assert answer["error"] == "invalid payload"
    assert answer["issues"][0]["path"] == ["metadata", "campaignCreatedAt"]
    assert "2026-01-02T03:04:05Z" not in response.text
    assert ack(response) == "negative"
    # An empty test id would collide with the real send's key ('' means "not a test").
    empty_test_id = announcement(metadata={"campaignTestId": ""})
    for broken in (
        b"not json",
        b"[]",
        json.dumps({**document, "type": "OTHER"}).encode(),
        json.dumps(empty_test_id).encode(),
    ):
        assert post(inbox, document, body=broken).status_code == 400
    assert stored_count(db_path) == 0


def test_unknown_fields_from_a_newer_sender_are_tolerated(inbox: str) -> None:
    document = announcement(futureField=1, metadata={"futureMeta": "x"})
    response = post(inbox, document, body=json.dumps(document).encode())
    assert response.json() == {"sent": True}
    [item] = inbox_of(inbox, "p-1")
    assert "futureField" not in item


def test_oversized_body_is_refused(inbox: str, db_path: Path) -> None:
    document = announcement()
    raw = json.dumps({**document, "padding": "x" * MAX_BODY_BYTES}).encode()
    response = post(inbox, document, body=raw)
    assert response.status_code == 413
    assert ack(response) == "negative"
    assert stored_count(db_path) == 0


def test_healthz(inbox: str) -> None:
    assert httpx.get(f"{inbox}/healthz").json() == {"ok": True}
