"""The durable local queue against real SQLite files, real threads and real (killed) processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from campaign_engine.queue.local import MAX_RECEIVE_BATCH, LocalQueue
from campaign_engine.queue.port import QueueError
from tests.support.concurrency import at_once

REPO_ROOT = Path(__file__).resolve().parents[3]


class SteppingClock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "queue.sqlite3"


def _queue(db: Path, clock: SteppingClock, name: str = "delivery", **kwargs: int) -> LocalQueue:
    return LocalQueue(db, name, clock=clock, **kwargs)


def test_send_receive_delete(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock)
    queue.send_batch(['{"n": 1}', '{"n": 2}'])
    assert queue.depth() == 2

    got = queue.receive(max_messages=10)

    assert [m.body for m in got] == ['{"n": 1}', '{"n": 2}']
    assert [m.receive_count for m in got] == [1, 1]
    assert queue.receive() == []  # both in flight
    for message in got:
        queue.delete(message.receipt)
    assert queue.depth() == 0


def test_max_messages_is_honoured(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock)
    queue.send_batch([str(i) for i in range(125)])
    assert len(queue.receive(max_messages=10)) == 10
    assert len(queue.receive(max_messages=3)) == 3
    # Larger than SQS's 10: the worker settles local deliveries MAX_RECEIVE_BATCH at a time.
    got = queue.receive(max_messages=MAX_RECEIVE_BATCH)
    assert len(got) == MAX_RECEIVE_BATCH == 100
    assert len({m.message_id for m in got}) == MAX_RECEIVE_BATCH
    with pytest.raises(ValueError):
        queue.receive(max_messages=MAX_RECEIVE_BATCH + 1)


def test_queue_names_share_a_file_but_not_messages(db: Path, clock: SteppingClock) -> None:
    dispatch = _queue(db, clock, "dispatch")
    delivery = _queue(db, clock, "delivery")
    dispatch.send_batch(['"page"'])

    assert delivery.receive() == []
    assert delivery.depth() == 0
    assert [m.body for m in dispatch.receive()] == ['"page"']


def test_delay_hides_a_message_until_due(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock)
    queue.send_batch(['"later"'], delay_seconds=60)

    assert queue.receive() == []
    assert queue.depth() == 1
    clock.advance(59.9)
    assert queue.receive() == []
    clock.advance(0.1)
    assert [m.body for m in queue.receive()] == ['"later"']


@pytest.mark.parametrize("delay", [-1, 901])
def test_delay_outside_sqs_range_is_refused(db: Path, clock: SteppingClock, delay: int) -> None:
    queue = _queue(db, clock)
    with pytest.raises(ValueError):
        queue.send_batch(['"x"'], delay_seconds=delay)
    assert queue.depth() == 0


def test_delete_batch_removes_only_the_receipts_it_is_given(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock)
    queue.send_batch(['"a"', '"b"', '"c"'])
    got = queue.receive(max_messages=10)
    queue.delete_batch([m.receipt for m in got if m.body != '"b"'])
    assert queue.depth() == 1
    queue.delete_batch([])
    assert queue.depth() == 1


def test_undeleted_message_is_redelivered_after_visibility_timeout(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock, visibility_timeout=30)
    queue.send_batch(['"x"'])
    [first] = queue.receive()

    clock.advance(29)
    assert queue.receive() == []
    clock.advance(1)
    [second] = queue.receive()

    assert second.message_id == first.message_id
    assert second.receive_count == 2
    assert second.receipt != first.receipt
    queue.delete(first.receipt)  # a superseded receipt deletes nothing: the new holder owns it
    assert queue.depth() == 1
    queue.delete(second.receipt)
    assert queue.depth() == 0


def test_change_visibility(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock, visibility_timeout=30)
    queue.send_batch(['"x"'])
    [message] = queue.receive()

    queue.change_visibility(message.receipt, timeout_seconds=120)
    clock.advance(119)
    assert queue.receive() == []
    clock.advance(1)
    [again] = queue.receive()
    queue.change_visibility(again.receipt, timeout_seconds=0)
    assert [m.receive_count for m in queue.receive()] == [3]

    with pytest.raises(QueueError):
        queue.change_visibility(message.receipt, timeout_seconds=10)  # superseded receipt
    with pytest.raises(ValueError):
        queue.change_visibility(message.receipt, timeout_seconds=43_201)


def test_message_received_too_often_goes_to_dead_letters(db: Path, clock: SteppingClock) -> None:
    queue = _queue(db, clock, visibility_timeout=10, max_receives=2)
    queue.send_batch(['"poison"', '"fine"'])
    for expected_count in (1, 2):
        got = queue.receive()
        assert [m.receive_count for m in got] == [expected_count, expected_count]
        queue.delete(got[1].receipt) if expected_count == 2 else None
        clock.advance(10)

    assert queue.receive() == []
    [dead] = queue.dead_letters()
    assert dead.body == '"poison"'
    assert dead.receive_count == 2
    assert queue.depth() == 0
    assert _queue(db, clock, "dispatch").dead_letters() == []


def test_messages_survive_reopening_the_file(db: Path, clock: SteppingClock) -> None:
    first = _queue(db, clock)
    first.send_batch(['"durable"'])
    first.close()

    reopened = _queue(db, clock)
    assert [m.body for m in reopened.receive()] == ['"durable"']


def test_wait_seconds_returns_as_soon_as_a_message_arrives(db: Path) -> None:
    queue = LocalQueue(db, "delivery")
    sender = threading.Timer(0.2, lambda: queue.send_batch(['"hello"']))
    started = time.monotonic()
    sender.start()
    got = queue.receive(wait_seconds=5)
    elapsed = time.monotonic() - started
    sender.join()

    assert [m.body for m in got] == ['"hello"']
    assert 0.15 <= elapsed < 2


def test_wait_seconds_gives_up_when_nothing_arrives(db: Path) -> None:
    queue = LocalQueue(db, "delivery")
    started = time.monotonic()
    assert queue.receive(wait_seconds=0.3) == []
    assert time.monotonic() - started >= 0.3


def test_threads_never_share_a_claim(db: Path) -> None:
    queue = LocalQueue(db, "delivery", visibility_timeout=60)
    queue.send_batch([str(i) for i in range(300)])
    seen: list[list[str]] = [[] for _ in range(6)]

    def drain(slot: int) -> None:
        while got := queue.receive(max_messages=3):
            seen[slot].extend(m.message_id for m in got)

    at_once(drain, [(i,) for i in range(6)])
    everything = [mid for slot in seen for mid in slot]
    assert len(everything) == 300
    assert len(set(everything)) == 300


# --- real processes -----------------------------------------------------------------------------

_RECEIVE_AND_HANG = """
import sys, time
from campaign_engine.queue.local import LocalQueue
queue = LocalQueue(sys.argv[1], "delivery", visibility_timeout=5)
[message] = queue.receive(wait_seconds=5)
print(message.message_id, flush=True)
time.sleep(60)
"""

_DRAIN_WITHOUT_DELETE = """
import json, sys, time
from pathlib import Path
from campaign_engine.queue.local import LocalQueue
db, ready, go, out = sys.argv[1:5]
queue = LocalQueue(db, "delivery", visibility_timeout=120)
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.005)
ids = []
while got := queue.receive(max_messages=2):
    ids.extend(m.message_id for m in got)
    time.sleep(0.002)  # "work" between receives, so the other process gets the write lock too
Path(out).write_text(json.dumps(ids))
"""


def _python(script: str, *args: str | Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE, text=True, env=env
    )


def test_message_of_a_killed_receiver_is_redelivered(db: Path) -> None:
    # The worker's visibility window is 5 s: the kill and the first check below must fit inside it on a
    # loaded CI machine (with 1 s, a slow kill once let the message come back before the check).
    queue = LocalQueue(db, "delivery", visibility_timeout=1)
    queue.send_batch(['"precious"'])
    worker = _python(_RECEIVE_AND_HANG, db)
    try:
        assert worker.stdout is not None
        claimed_id = worker.stdout.readline().strip()
        assert claimed_id
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        assert worker.stdout is not None
        worker.stdout.close()
    assert worker.returncode == -signal.SIGKILL

    assert queue.receive() == []  # still inside the dead worker's visibility window
    [redelivered] = queue.receive(wait_seconds=15)

    assert redelivered.message_id == claimed_id
    assert redelivered.body == '"precious"'
    assert redelivered.receive_count == 2


def test_two_processes_never_receive_the_same_message(db: Path, tmp_path: Path) -> None:
    total = 400
    LocalQueue(db, "delivery").send_batch([json.dumps({"n": i}) for i in range(total)])
    go = tmp_path / "go"
    workers = []
    for index in range(2):
        ready, out = tmp_path / f"ready{index}", tmp_path / f"out{index}.json"
        workers.append((_python(_DRAIN_WITHOUT_DELETE, db, ready, go, out), ready, out))
    try:
        deadline = time.monotonic() + 20
        while not all(ready.exists() for _, ready, _ in workers):
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.01)
        go.touch()
        for process, _, _ in workers:
            assert process.wait(timeout=60) == 0
    finally:
        for process, _, _ in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stdout is not None
            process.stdout.close()

    received = [json.loads(out.read_text()) for _, _, out in workers]
    assert all(received), "both processes must have claimed some messages for the test to mean anything"
    assert set(received[0]).isdisjoint(received[1])
    assert len(received[0]) + len(received[1]) == total


def test_opening_waits_while_another_connection_holds_the_new_file(tmp_path: Path) -> None:
    """A brand-new file still in rollback-journal mode, locked by another connection: SQLite refuses the
    switch to WAL at once ("database is locked") instead of waiting, which failed a dispatch that opened
    the queue beside a busy worker. Opening must wait for the lock like any other write."""
    path = tmp_path / "new.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE early (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO early VALUES (1)")
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        started = time.monotonic()
        queue = LocalQueue(path, "dispatch")
        waited = time.monotonic() - started
        queue.send_batch(['{"i": 1}'])
        assert queue.depth() == 1 and waited >= 0.2
    finally:
        release.join()
        holder.close()
