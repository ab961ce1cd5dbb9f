"""Lanes and fair shares of the durable local queue, against real SQLite files.

A receive serves the lowest rank with visible messages (critical, normal, bulk), one rank per receive,
and within a rank each group (tenant) its weighted share by start-time fair queueing: a group that was
idle joins at the lane's clock and gets its share from then on, no burst for the time it was away.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

from campaign_engine.queue import local_lanes
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import Lane

CRITICAL, NORMAL, BULK = 0, 1, 2


def _queue(path: Path) -> LocalQueue:
    return LocalQueue(path, "delivery", visibility_timeout=30)


def _groups(queue: LocalQueue, receives: int, batch: int = 10) -> Counter[str]:
    """Who the next ``receives`` receives served, by the first letter of each body."""
    served: Counter[str] = Counter()
    for _ in range(receives):
        got = queue.receive(max_messages=batch)
        served.update(m.body[0] for m in got)
        queue.delete_batch([m.receipt for m in got])
    return served


def test_ranks_are_served_in_order_and_one_rank_per_receive(tmp_path: Path) -> None:
    queue = _queue(tmp_path / "q.sqlite3")
    queue.send_batch([f"b{i}" for i in range(5)], lane=Lane(BULK, "a"))
    queue.send_batch([f"n{i}" for i in range(5)])  # no lane: normal, no tenant
    queue.send_batch([f"c{i}" for i in range(3)], lane=Lane(CRITICAL, "b"))

    batches = [[m.body for m in queue.receive(max_messages=100)] for _ in range(4)]

    assert batches == [
        ["c0", "c1", "c2"],  # sent last, served first, and not padded out with normal work
        [f"n{i}" for i in range(5)],
        [f"b{i}" for i in range(5)],
        [],
    ]


def test_tenants_within_a_lane_share_by_weight(tmp_path: Path) -> None:
    queue = _queue(tmp_path / "q.sqlite3")
    queue.send_batch([f"a{i}" for i in range(1000)], lane=Lane(BULK, "alpha", 1.0))
    queue.send_batch([f"c{i}" for i in range(1000)], lane=Lane(BULK, "gamma", 3.0))

    served = _groups(queue, 40)

    assert served["c"] == 3 * served["a"] == 300  # 40 receives of 10: 30 for gamma, 10 for alpha


def test_a_tenant_that_joins_late_gets_its_share_from_then_on_not_a_burst(tmp_path: Path) -> None:
    queue = _queue(tmp_path / "q.sqlite3")
    queue.send_batch([f"a{i}" for i in range(1000)], lane=Lane(BULK, "alpha"))
    assert _groups(queue, 20) == Counter({"a": 200})  # alone: everything
    queue.send_batch([f"c{i}" for i in range(1000)], lane=Lane(BULK, "gamma"))

    served = _groups(queue, 20)

    assert served == Counter({"a": 100, "c": 100})  # half each, not gamma first for 20 receives


def _pick_steps(path: Path) -> int:
    """SQLite virtual-machine instructions one choice of whom to serve runs (a progress handler's count)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0  # go on

    with closing(sqlite3.connect(path)) as conn:
        conn.set_progress_handler(count, 1)
        assert local_lanes.pick(conn, "delivery", now=time.time(), taken="[]") is not None
    return steps


def test_choosing_whom_to_serve_seeks_whatever_the_backlog(tmp_path: Path) -> None:
    """Every receive chooses a (lane, group) first: that costs a few seeks per group with work, the same
    behind 20 messages as behind 20,000, never a read of a group's backlog."""
    costs = []
    for backlog in (10, 10_000):
        queue = _queue(tmp_path / f"{backlog}.sqlite3")
        for lane in (Lane(NORMAL, "alpha"), Lane(NORMAL, "gamma"), Lane(BULK, "beta")):
            queue.send_batch(["x"] * backlog, lane=lane)
        costs.append(_pick_steps(tmp_path / f"{backlog}.sqlite3"))

    assert costs[1] <= 1.2 * costs[0], costs


def test_a_queue_file_from_before_lanes_keeps_its_messages_in_the_normal_lane(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
            " body TEXT NOT NULL, sent_at REAL NOT NULL, visible_at REAL NOT NULL,"
            " receive_count INTEGER NOT NULL DEFAULT 0, receipt TEXT UNIQUE);"
            "INSERT INTO messages (name, body, sent_at, visible_at) VALUES ('delivery', 'old', 0, 0);"
        )
    queue = _queue(path)
    queue.send_batch(["late"], lane=Lane(BULK, "a"))
    queue.send_batch(["urgent"], lane=Lane(CRITICAL, "b"))

    assert [[m.body for m in queue.receive(max_messages=10)] for _ in range(3)] == [
        ["urgent"],
        ["old"],
        ["late"],
    ]
