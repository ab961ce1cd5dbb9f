"""Durable, deduplicating storage for the reference inbox receiver (SQLite), with group commit.

The receiver's acknowledgement means "stored durably", so every write commits with WAL and
``synchronous=FULL`` before the handler answers. An announcement is one row per
(sender, recipient, campaignId, campaignCreatedAt, testId): a duplicate POST (a retried delivery, a page
re-sent after a crash) keeps the first payload and only bumps ``receive_count``, which lets tests prove
that a duplicate was seen yet had no second effect.

Group commit: an fsync per request caps a receiver at one durable write per fsync. Instead one writer
thread takes every pending store (up to ``max_batch``), runs each ``INSERT .. ON CONFLICT .. RETURNING``
inside ONE immediate transaction, commits (one fsync), and only then resolves every waiting future.
Requests that arrive while a commit is in flight form the next batch, so batches grow with load and a
lone request pays no extra wait. The guarantee is unchanged: nobody is answered before the COMMIT that
contains their row has returned. Inside a batch the upserts run in arrival order, so two copies of one
key in the same batch still yield exactly one first receipt. If a batch fails as a whole, each of its
stores is retried alone so one bad row cannot fail its neighbours.

``BEGIN IMMEDIATE`` takes the write lock up front, so another process holding the file waits on
``busy_timeout`` instead of failing with a stale WAL snapshot; stores stay atomic across processes.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.types import Clock, format_ts, system_clock

__all__ = ["InboxStore", "StoreStats"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notifications (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    sender              TEXT NOT NULL,
    recipient           TEXT NOT NULL,
    campaign_id         TEXT NOT NULL,
    campaign_created_at TEXT NOT NULL,
    test_id             TEXT NOT NULL DEFAULT '',
    payload             TEXT NOT NULL,
    first_received_at   TEXT NOT NULL,
    last_received_at    TEXT NOT NULL,
    receive_count       INTEGER NOT NULL DEFAULT 1,
    UNIQUE (sender, recipient, campaign_id, campaign_created_at, test_id)
);
CREATE INDEX IF NOT EXISTS notifications_by_recipient ON notifications (recipient, id);
"""

_UPSERT = """
INSERT INTO notifications (sender, recipient, campaign_id, campaign_created_at, test_id,
                           payload, first_received_at, last_received_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (sender, recipient, campaign_id, campaign_created_at, test_id)
DO UPDATE SET receive_count = receive_count + 1, last_received_at = excluded.last_received_at
RETURNING receive_count
"""

_Row = tuple[str, str, str, str, str, str, str, str]
_Pending = tuple[_Row, "Future[bool]"]
_STOP = None


@dataclass(frozen=True)
class StoreStats:
    commits: int
    """Write transactions committed (each one fsync)."""
    rows: int
    """Stores acknowledged (first receipts and duplicates)."""
    pending: int
    """Stores waiting for the writer right now."""


class InboxStore:
    """One SQLite file; safe to call from many threads. Close it when done.

    ``before_commit`` (tests only) is called in the writer thread with the batch size after the batch's
    rows are written and before COMMIT: a test can hold it to prove nobody is answered before the commit.
    """

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock = system_clock,
        busy_timeout_ms: int = 10_000,
        max_batch: int = 256,
        before_commit: Callable[[int], None] | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE .. COMMIT) below.
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()  # one connection: the writer and the readers take turns
        self._clock = clock
        self._max_batch = max(1, max_batch)
        self._before_commit = before_commit
        self._pending: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._commits = 0
        self._rows = 0
        self._closed = False
        self._close_lock = threading.Lock()
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.executescript(_SCHEMA)
        self._writer = threading.Thread(target=self._write_loop, name="inbox-writer", daemon=True)
        self._writer.start()

    def submit(self, payload: AnnouncementPayload) -> Future[bool]:
        """Queue ``payload`` for the next group commit. The future resolves only after that COMMIT:
        True for the first receipt of its key, False for a duplicate (counted, no second effect)."""
        meta = payload.metadata
        return self.submit_row(
            sender=payload.sender,
            recipient=payload.recipient,
            campaign_id=meta.campaign_id,
            campaign_created_at=meta.campaign_created_at,
            test_id=meta.campaign_test_id or "",
            payload=payload_json(payload).decode(),
        )

    def submit_row(
        self,
        *,
        sender: str,
        recipient: str,
        campaign_id: str,
        campaign_created_at: str,
        test_id: str,
        payload: str,
    ) -> Future[bool]:
        """``submit`` of any format: its deduplication key and the JSON kept (and listed) for it."""
        now = format_ts(self._clock())
        row: _Row = (sender, recipient, campaign_id, campaign_created_at, test_id, payload, now, now)
        future: Future[bool] = Future()
        with self._close_lock:
            if self._closed:
                raise RuntimeError("inbox store is closed")
            self._pending.put((row, future))
        return future

    def store(self, payload: AnnouncementPayload) -> bool:
        """Blocking form of ``submit``: returns once the row is durable."""
        return self.submit(payload).result()

    def stats(self) -> StoreStats:
        return StoreStats(commits=self._commits, rows=self._rows, pending=self._pending.qsize())

    def list_for(self, profile_id: str) -> list[dict[str, Any]]:
        """A profile's inbox, newest first: each payload (wire names) plus receipt bookkeeping."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT payload, first_received_at, last_received_at, receive_count FROM notifications"
                " WHERE recipient = ? ORDER BY id DESC",
                (profile_id,),
            ).fetchall()
        return [
            {**json.loads(payload), "firstReceivedAt": first, "lastReceivedAt": last, "receiveCount": count}
            for payload, first, last, count in rows
        ]

    def count(self) -> int:
        with self._lock:
            (total,) = self._conn.execute("SELECT count(*) FROM notifications").fetchone()
        return int(total)

    def durability(self) -> tuple[str, int]:
        """``(journal_mode, synchronous)`` of the live connection: ``("wal", 2)`` means WAL + FULL."""
        with self._lock:
            (mode,) = self._conn.execute("PRAGMA journal_mode").fetchone()
            (sync,) = self._conn.execute("PRAGMA synchronous").fetchone()
        return str(mode), int(sync)

    def close(self) -> None:
        """Finish every store already submitted, then stop the writer and close the file."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._pending.put(_STOP)
        self._writer.join()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> InboxStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- the writer --------------------------------------------------------------------------------

    def _write_loop(self) -> None:
        stopping = False
        while not stopping:
            first = self._pending.get()
            if first is _STOP:
                return
            batch = [first]
            # Whatever arrived while the previous commit was in flight joins this one (no extra wait).
            while len(batch) < self._max_batch:
                try:
                    item = self._pending.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        try:
            counts = self._transaction([row for row, _ in batch])
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            for item in batch:  # isolate the failure: each store alone, in arrival order
                self._commit([item])
            return
        for (_, future), count in zip(batch, counts, strict=True):
            _settle(future, count == 1)

    def _transaction(self, rows: list[_Row]) -> list[int]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                # fetchall() steps each RETURNING to completion before the next statement and COMMIT.
                counts = [int(self._conn.execute(_UPSERT, row).fetchall()[0][0]) for row in rows]
                if self._before_commit is not None:
                    self._before_commit(len(rows))
                self._conn.execute("COMMIT")  # synchronous=FULL: durable when this returns
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._commits += 1
            self._rows += len(rows)
        return counts


def _settle(future: Future[bool], outcome: bool | Exception) -> None:
    """Resolve a waiter; one whose request was cancelled meanwhile (client gone) is skipped."""
    if future.done():
        return
    with contextlib.suppress(InvalidStateError):
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
