"""LocalQueue with a zero visibility timeout: like SQS, one receive never returns a message twice."""

from __future__ import annotations

from pathlib import Path

from campaign_engine.queue.local import LocalQueue


def test_one_receive_never_returns_a_message_twice_at_zero_visibility(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "q.sqlite3", "q", visibility_timeout=0, max_receives=100, clock=lambda: 5.0)
    queue.send_batch(["a", "b"])
    first = queue.receive(max_messages=10)
    assert sorted(m.body for m in first) == ["a", "b"]
    assert [m.receive_count for m in first] == [1, 1]
    # Visible again at once (timeout 0): the next receive gets each message once more, not repeatedly.
    second = queue.receive(max_messages=10)
    assert sorted((m.body, m.receive_count) for m in second) == [("a", 2), ("b", 2)]
    queue.close()


def test_zero_visibility_still_dead_letters_after_max_receives(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "q.sqlite3", "q", visibility_timeout=0, max_receives=2, clock=lambda: 5.0)
    queue.send_batch(["a"])
    assert [len(queue.receive(max_messages=10)) for _ in range(3)] == [1, 1, 0]
    assert [d.body for d in queue.dead_letters()] == ["a"]
    queue.close()
