"""Durable, deduplicating storage for the reference inbox receiver (SQLite).

The receiver's acknowledgement means "stored durably", so every write commits with WAL and
``synchronous=FULL`` before the handler answers. An announcement is one row per
(sender, recipient, campaignId, campaignCreatedAt, testId): a duplicate POST (a retried delivery, a page
re-sent after a crash) keeps the first payload and only bumps ``receive_count``, which lets tests prove
that a duplicate was seen yet had no second effect.

The insert-or-count is one ``INSERT .. ON CONFLICT .. RETURNING`` statement in an immediate transaction,
so it is atomic even across processes sharing the file; within a process one connection is shared
behind a lock (SQLite serialises writers anyway).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.types import Clock, format_ts, system_clock

__all__ = ["InboxStore"]

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


class InboxStore:
    """One SQLite file; safe to call from many threads. Close it when done."""

    def __init__(self, path: Path, *, clock: Clock = system_clock, busy_timeout_ms: int = 10_000) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: autocommit, so each statement is its own durable transaction.
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._clock = clock
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.executescript(_SCHEMA)

    def store(self, payload: AnnouncementPayload) -> bool:
        """Insert ``payload``, or count a duplicate of its key. True only for the first receipt."""
        meta = payload.metadata
        now = format_ts(self._clock())
        row = (
            payload.sender,
            payload.recipient,
            meta.campaign_id,
            meta.campaign_created_at,
            meta.campaign_test_id or "",
            payload_json(payload).decode(),
            now,
            now,
        )
        with self._lock:
            # BEGIN IMMEDIATE takes the write lock up front, so another process holding the file waits
            # on busy_timeout instead of failing with a stale WAL snapshot. fetchall() steps RETURNING
            # to completion before COMMIT; the acknowledgement is only sent after COMMIT returns.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                [(count,)] = self._conn.execute(_UPSERT, row).fetchall()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return int(count) == 1

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
        with self._lock:
            self._conn.close()

    def __enter__(self) -> InboxStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
