"""The durable local queue: SQS semantics in one SQLite file, for single-machine deployments and tests.

One file holds several named queues (``dispatch``, ``delivery``) so a single path configures a machine.
It is safe for several processes at once: WAL mode lets readers proceed while one writer commits, and
every receive claims its messages inside ``BEGIN IMMEDIATE`` (the write lock is taken *before* the
candidate rows are read), so two receivers can never claim the same visible message. Commits are
``synchronous=FULL``: a message acknowledged by ``send_batch`` survives a power cut, and a process
killed between receive and delete gets its messages redelivered after the visibility timeout.

One receive may claim up to ``MAX_RECEIVE_BATCH`` (100) messages, ten times SQS's cap: every receive
and every batch delete is a write transaction with an fsync, so a single-machine worker that settles
deliveries 100 at a time spends a tenth of the time in commits. Code written against the port still
works with 10, which is what it must ask of SQS.

Writers of one process take turns on a Python lock per file before ``BEGIN IMMEDIATE``: SQLite's own
busy handler sleeps with a growing back-off (up to 100 ms a try), so threads of one worker that queue
for the write lock through it wait far longer than the commits they wait for. Other processes still
meet at SQLite's lock (``busy_timeout``).

Each message waits in a lane (``port.Lane``): a receive serves the lowest rank with visible messages,
and within it each group its weighted fair share (``local_lanes.py``). One receive takes from one
rank only, so a critical batch is never padded out with bulk work.

A message received more than ``max_receives`` times is moved to the ``dead_letters`` table on its next
receive instead of being returned, like an SQS redrive policy with ``maxReceiveCount``.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign_engine.queue import local_lanes
from campaign_engine.queue.port import (
    DEFAULT_LANE,
    Lane,
    QueueError,
    QueueStats,
    ReceivedMessage,
    check_delay,
)

__all__ = ["MAX_RECEIVE_BATCH", "DeadLetter", "LocalQueue"]

MAX_RECEIVE_BATCH = 100
MAX_VISIBILITY_SECONDS = 43_200  # SQS's ceiling, kept so both adapters refuse the same values
_POLL_INTERVAL = 0.05
_BUSY_TIMEOUT_SECONDS = 30.0
_WRITE_LOCKS: dict[tuple[int, str], threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.Lock:
    """The in-process write lock for ``path`` (keyed by pid too: a forked child starts unlocked)."""
    key = (os.getpid(), str(path.resolve()))
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    sent_at REAL NOT NULL,
    visible_at REAL NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT UNIQUE
);
CREATE INDEX IF NOT EXISTS messages_by_visibility ON messages (name, visible_at, id);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    sent_at REAL NOT NULL,
    receive_count INTEGER NOT NULL,
    dead_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS dead_letters_by_name ON dead_letters (name, id);
COMMIT;
"""


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    body: str
    receive_count: int
    dead_at: float


class LocalQueue:
    """One named queue in a shared SQLite file; see the module docstring for the guarantees.

    ``clock`` drives delays and visibility (inject a stepping clock in tests); waiting in ``receive``
    always uses real time.
    """

    def __init__(
        self,
        path: Path | str,
        name: str,
        *,
        visibility_timeout: int = 30,
        max_receives: int = 5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if visibility_timeout < 0 or max_receives < 1:
            raise ValueError("visibility_timeout must be >= 0 and max_receives >= 1")
        self._path = Path(path)
        self._name = name
        self._visibility_timeout = visibility_timeout
        self._max_receives = max_receives
        self._clock = clock
        self._local = threading.local()
        self._all_connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = (os.getpid(), _write_lock(self._path))
        try:
            self._conn().executescript(_SCHEMA)
            local_lanes.migrate(self._conn())
        except sqlite3.Error as exc:
            raise QueueError("cannot create the local queue schema") from exc

    @property
    def name(self) -> str:
        return self._name

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        check_delay(delay_seconds)
        if not bodies:
            return
        now, at = self._clock(), lane or DEFAULT_LANE
        rows = [(self._name, body, now, now + delay_seconds, at.rank, at.group, at.weight) for body in bodies]
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO messages (name, body, sent_at, visible_at, lane, grp, weight)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        if not 1 <= max_messages <= MAX_RECEIVE_BATCH:
            raise ValueError(f"max_messages must be 1..{MAX_RECEIVE_BATCH}")
        deadline = time.monotonic() + max(0.0, wait_seconds)
        while True:
            claimed = self._claim(max_messages)
            remaining = deadline - time.monotonic()
            if claimed or remaining <= 0:
                return claimed
            time.sleep(min(_POLL_INTERVAL, remaining))

    def delete(self, receipt: str) -> None:
        """Idempotent: a receipt superseded by a redelivery deletes nothing (the new holder will)."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM messages WHERE receipt = ? AND name = ?", (receipt, self._name))

    def delete_batch(self, receipts: Sequence[str]) -> None:
        """One transaction for the whole batch: under contention each transaction costs milliseconds."""
        if not receipts:
            return
        with self._transaction() as conn:
            conn.executemany(
                "DELETE FROM messages WHERE receipt = ? AND name = ?", [(r, self._name) for r in receipts]
            )

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        if not 0 <= timeout_seconds <= MAX_VISIBILITY_SECONDS:
            raise ValueError(f"timeout_seconds must be 0..{MAX_VISIBILITY_SECONDS}")
        with self._transaction() as conn:
            updated = conn.execute(
                "UPDATE messages SET visible_at = ? WHERE receipt = ? AND name = ?",
                (self._clock() + timeout_seconds, receipt, self._name),
            ).rowcount
        if updated == 0:
            raise QueueError("receipt is no longer valid (message deleted or redelivered)")

    def depth(self) -> int:
        """Messages not yet deleted nor dead, visible or in flight."""
        rows = self._read("SELECT count(*) FROM messages WHERE name = ?", (self._name,))
        return int(rows[0][0])

    def stats(self) -> QueueStats:
        """Depth by state and the oldest message's age, in one read of this queue's rows (metrics)."""
        now = self._clock()
        visible, in_flight, delayed, oldest = self._read(
            "SELECT coalesce(sum(visible_at <= ?), 0),"
            " coalesce(sum(visible_at > ? AND receipt IS NOT NULL), 0),"
            " coalesce(sum(visible_at > ? AND receipt IS NULL), 0), min(sent_at)"
            " FROM messages WHERE name = ?",
            (now, now, now, self._name),
        )[0]
        age = None if oldest is None else max(0.0, now - float(oldest))
        return QueueStats(int(visible), int(in_flight), int(delayed), age)

    def dead_letters(self) -> list[DeadLetter]:
        rows = self._read(
            "SELECT id, body, receive_count, dead_at FROM dead_letters WHERE name = ? ORDER BY id",
            (self._name,),
        )
        return [DeadLetter(str(r[0]), r[1], int(r[2]), float(r[3])) for r in rows]

    def close(self) -> None:
        with self._connections_lock:
            connections, self._all_connections = self._all_connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def _claim(self, max_messages: int) -> list[ReceivedMessage]:
        # A lock-free look first, so idle pollers do not queue up for the write lock every 50 ms.
        if not self._read(
            "SELECT 1 FROM messages WHERE name = ? AND visible_at <= ? LIMIT 1", (self._name, self._clock())
        ):
            return []
        claimed: list[ReceivedMessage] = []
        with self._transaction() as conn:
            now = self._clock()
            # With a visibility timeout of 0 a row claimed here is visible again at once: exclude what
            # this call already claimed, so one receive never returns a message twice (as SQS).
            taken: list[int] = []
            lane: int | None = None
            while len(claimed) < max_messages:
                chosen = local_lanes.pick(conn, self._name, now=now, taken=json.dumps(taken))
                if chosen is None or (lane is not None and chosen.lane != lane):
                    break  # one rank per receive
                lane = chosen.lane
                candidates = conn.execute(
                    "SELECT id, body, receive_count, sent_at FROM messages"
                    " WHERE name = ? AND lane = ? AND grp = ? AND visible_at <= ?"
                    " AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY visible_at, id LIMIT ?",
                    (self._name, lane, chosen.group, now, json.dumps(taken), max_messages - len(claimed)),
                ).fetchall()
                local_lanes.charge(conn, self._name, chosen, len(candidates))
                for row_id, body, receive_count, sent_at in candidates:
                    taken.append(row_id)
                    if receive_count >= self._max_receives:
                        conn.execute(
                            "INSERT INTO dead_letters (id, name, body, sent_at, receive_count, dead_at)"
                            " VALUES (?, ?, ?, ?, ?, ?)",
                            (row_id, self._name, body, sent_at, receive_count, now),
                        )
                        conn.execute("DELETE FROM messages WHERE id = ?", (row_id,))
                        continue
                    receipt = f"{row_id}:{secrets.token_hex(16)}"
                    conn.execute(
                        "UPDATE messages SET receive_count = ?, receipt = ?, visible_at = ? WHERE id = ?",
                        (receive_count + 1, receipt, now + self._visibility_timeout, row_id),
                    )
                    claimed.append(ReceivedMessage(str(row_id), receipt, body, receive_count + 1))
        return claimed

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE``: take the write lock before reading, so claims never race."""
        conn = self._conn()
        if self._write_lock[0] != os.getpid():
            self._write_lock = (os.getpid(), _write_lock(self._path))
        with self._write_lock[1], self._sqlite_transaction(conn) as locked:
            yield locked

    @contextmanager
    def _sqlite_transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise QueueError("local queue operation failed") from exc

    def _read(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise QueueError("local queue read failed") from exc

    def _conn(self) -> sqlite3.Connection:
        """One connection per thread and process: sqlite3 connections must not cross either."""
        pid_and_conn: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if pid_and_conn is not None and pid_and_conn[0] == os.getpid():
            return pid_and_conn[1]
        try:
            conn = sqlite3.connect(
                self._path, timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise QueueError("cannot open the local queue file") from exc
        self._local.conn = (os.getpid(), conn)
        with self._connections_lock:
            self._all_connections.append(conn)
        return conn


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (a persistent setting) unless it already is.

    Switching needs the file alone for a moment, and when two connections open a brand-new file at
    once SQLite answers the loser "database is locked" immediately instead of waiting out
    ``busy_timeout``; so the switch is retried until that timeout.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_SECONDS
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
