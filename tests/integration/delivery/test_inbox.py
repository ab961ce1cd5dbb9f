"""The reference inbox as a real uvicorn server on loopback, with a real SQLite file.

Answers are also run through the worker's acknowledgement grammar, so the receiver and the sender are
proven to agree on what "stored" and "refused" look like.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from campaign_engine.domain.acknowledgement import classify_acknowledgement
from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.inbox.app import MAX_BODY_BYTES, create_inbox_app
from campaign_engine.inbox.store import InboxStore
from tests.support.servers import serve_in_thread

SECRET = "whsec_" + "c2VjcmV0LWZvci10aGUtaW5ib3gtdGVzdHMtMDEyMzQ1Njc4OQ=="
CREATED_AT = "2026-01-02T03:04:05.000006Z"


@contextmanager
def running_inbox(db_path: Path) -> Iterator[str]:
    """Serve a fresh inbox app on a free loopback port; yield its base URL; stop it (and its store)."""
    with serve_in_thread(create_inbox_app(db_path=db_path, secret=SECRET)) as url:
        yield url


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "inbox" / "inbox.sqlite3"


@pytest.fixture
def inbox(db_path: Path) -> Iterator[str]:
    with running_inbox(db_path) as base_url:
        yield base_url


def announcement(**overrides: Any) -> dict[str, Any]:
    metadata = {
        "campaignId": "c-1",
        "campaignCreatedAt": CREATED_AT,
        "dispatchId": "disp-1",
        "deliveryId": "del-1",
        "campaignHasInApp": True,
        "campaignTestId": None,
        **overrides.pop("metadata", {}),
    }
    return {
        "type": "ANNOUNCEMENT",
        "recipient": "p-1",
        "sender": "Acme",
        "title": "Hello",
        "body": "World",
        "metadata": metadata,
        **overrides,
    }


def post(
    base_url: str,
    document: dict[str, Any],
    *,
    secret: str = SECRET,
    skew: int = 0,
    body: bytes | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    raw = body if body is not None else payload_json(AnnouncementPayload.model_validate(document))
    msg_id = document["metadata"]["deliveryId"]
    headers = signed_headers(secret, msg_id=msg_id, body=raw, now=int(time.time()) + skew)
    headers["content-type"] = "application/json"
    url = f"{base_url}/api/notifications/send"
    if client is not None:
        return client.post(url, content=raw, headers=headers)
    return httpx.post(url, content=raw, headers=headers, timeout=10)


def inbox_of(base_url: str, profile_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base_url}/api/notifications", params={"profileId": profile_id}, timeout=10)
    assert response.status_code == 200
    items: list[dict[str, Any]] = response.json()["notifications"]
    return items


def ack(response: httpx.Response) -> str:
    return classify_acknowledgement(
        response.status_code, response.content, response.headers.get("content-type")
    )


def stored_count(db_path: Path) -> int:
    with InboxStore(db_path) as store:
        return store.count()


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


def test_records_survive_a_restart_on_the_same_file(db_path: Path) -> None:
    with running_inbox(db_path) as first:
        assert post(first, announcement()).json() == {"sent": True}
    with running_inbox(db_path) as second:
        [item] = inbox_of(second, "p-1")
        assert item["receiveCount"] == 1
        assert post(second, announcement()).json() == {"sent": True}
        [item] = inbox_of(second, "p-1")
        assert item["receiveCount"] == 2
    assert stored_count(db_path) == 1


def test_twenty_concurrent_posts_of_one_key_store_one_record(inbox: str, db_path: Path) -> None:
    barrier = threading.Barrier(20)
    limits = httpx.Limits(max_connections=20)

    def deliver(_: int) -> httpx.Response:
        barrier.wait(timeout=10)
        return post(inbox, announcement(), client=client)

    with httpx.Client(timeout=10, limits=limits) as client, ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(deliver, range(20)))
    assert [r.json() for r in responses] == [{"sent": True}] * 20
    [item] = inbox_of(inbox, "p-1")
    assert item["receiveCount"] == 20
    assert stored_count(db_path) == 1


def test_two_stores_on_one_file_race_to_exactly_one_first_receipt(db_path: Path) -> None:
    # Two connections stand in for two receiver processes sharing the file.
    payload = AnnouncementPayload.model_validate(announcement())
    with InboxStore(db_path) as a, InboxStore(db_path) as b:
        barrier = threading.Barrier(20)

        def store(i: int) -> bool:
            barrier.wait(timeout=10)
            return (a if i % 2 else b).store(payload)

        with ThreadPoolExecutor(max_workers=20) as pool:
            firsts = list(pool.map(store, range(20)))
        assert firsts.count(True) == 1
        assert a.count() == 1
        assert a.list_for("p-1")[0]["receiveCount"] == 20


def test_store_is_durable_wal_with_full_sync(db_path: Path) -> None:
    with InboxStore(db_path) as store:
        assert store.durability() == ("wal", 2)


class CommitGate:
    """``before_commit`` hook that holds the first ``hold`` commits until released."""

    def __init__(self, hold: int = 1) -> None:
        self.hold = hold
        self.entered = threading.Event()
        self.release = threading.Event()
        self.sizes: list[int] = []

    def __call__(self, size: int) -> None:
        self.sizes.append(size)
        if len(self.sizes) <= self.hold:
            self.entered.set()
            assert self.release.wait(timeout=10)


def committed_rows(db_path: Path) -> int:
    """Rows visible to another connection, i.e. committed (WAL readers never see open transactions)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        (total,) = conn.execute("SELECT count(*) FROM notifications").fetchone()
    return int(total)


def test_acknowledgement_waits_for_the_commit_holding_the_row(db_path: Path) -> None:
    gate = CommitGate()
    app = create_inbox_app(db_path=db_path, secret=SECRET, store=InboxStore(db_path, before_commit=gate))
    with serve_in_thread(app) as url, ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(post, url, announcement())
        assert gate.entered.wait(timeout=10)  # the row is written, the COMMIT is held
        time.sleep(0.3)
        assert not answer.done(), "answered before the row was committed"
        assert committed_rows(db_path) == 0
        gate.release.set()
        response = answer.result(timeout=10)
        assert response.json() == {"sent": True}
        assert ack(response) == "positive"
        assert committed_rows(db_path) == 1


def test_concurrent_requests_share_one_commit(db_path: Path) -> None:
    gate = CommitGate()
    store = InboxStore(db_path, before_commit=gate)
    app = create_inbox_app(db_path=db_path, secret=SECRET, store=store)
    n = 32
    with (
        serve_in_thread(app) as url,
        httpx.Client(timeout=10, limits=httpx.Limits(max_connections=n)) as client,
        ThreadPoolExecutor(max_workers=n) as pool,
    ):
        answers = [
            pool.submit(
                post, url, announcement(recipient=f"p-{i}", metadata={"deliveryId": f"d-{i}"}), client=client
            )
            for i in range(n)
        ]
        assert gate.entered.wait(timeout=10)  # the first commit is held; the others queue behind it
        deadline = time.monotonic() + 10
        while store.stats().pending < n - gate.sizes[0]:
            assert time.monotonic() < deadline, store.stats()
            time.sleep(0.01)
        assert not any(a.done() for a in answers)
        gate.release.set()
        responses = [a.result(timeout=10) for a in answers]
    assert [r.json() for r in responses] == [{"sent": True}] * n
    assert committed_rows(db_path) == n
    # One held commit, then everything that queued behind it in one more: 2 fsyncs for 32 stores.
    assert gate.sizes == [gate.sizes[0], n - gate.sizes[0]]
    assert len(gate.sizes) == 2


def test_two_copies_of_one_key_in_one_group_commit_make_one_first_receipt(db_path: Path) -> None:
    gate = CommitGate()
    with InboxStore(db_path, before_commit=gate) as store:
        blocker = store.submit(AnnouncementPayload.model_validate(announcement(recipient="p-other")))
        assert gate.entered.wait(timeout=10)
        payload = AnnouncementPayload.model_validate(announcement())
        first, second = store.submit(payload), store.submit(payload)
        gate.release.set()
        assert blocker.result(timeout=10) is True
        assert (first.result(timeout=10), second.result(timeout=10)) == (True, False)
        assert gate.sizes == [1, 2]
        assert store.list_for("p-1")[0]["receiveCount"] == 2
        assert store.stats().commits == 2
