"""The reference inbox's SQLite file: records survive a restart, concurrent posts of one key
store one record, the store is durable (WAL, full sync), and an acknowledgement waits for the group
commit holding its row.

Answers are also run through the worker's acknowledgement grammar, so the receiver and the sender are
proven to agree on what "stored" and "refused" look like."""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from campaign_engine.domain.notification import AnnouncementPayload
from campaign_engine.inbox.app import create_inbox_app
from campaign_engine.inbox.store import InboxStore
from tests.support.inbox_posts import (
    SECRET,
    ack,
    announcement,
    inbox_of,
    post,
    running_inbox,
    stored_count,
)
from tests.support.servers import serve_in_thread


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
