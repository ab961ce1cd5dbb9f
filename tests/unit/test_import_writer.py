"""``BatchWriter``: two batches in flight, outcomes in submission order, a shared profile id waits."""

from __future__ import annotations

import threading
import time

import pytest

from campaign_engine.campaigns.profiles.import_writer import BatchWriter


def test_disjoint_batches_overlap_and_a_shared_id_waits_for_the_earlier_batch() -> None:
    events: list[str] = []
    lock = threading.Lock()
    outcomes: list[str] = []

    def batch(name: str, seconds: float) -> str:
        with lock:
            events.append(f"{name} start")
        time.sleep(seconds)
        with lock:
            events.append(f"{name} end")
        return name

    writer: BatchWriter[str] = BatchWriter(outcomes.append, in_flight=2)
    writer.submit(frozenset({"p1", "p2"}), lambda: batch("a", 0.3))
    writer.submit(frozenset({"p3"}), lambda: batch("b", 0.05))  # disjoint: runs beside a
    writer.submit(frozenset({"p2"}), lambda: batch("c", 0.0))  # shares p2 with a: starts after a ended
    writer.close()

    assert outcomes == ["a", "b", "c"]  # in submission order, whatever finished first
    assert events.index("b start") < events.index("a end")
    assert events.index("c start") > events.index("a end")


def test_a_failed_batch_raises_after_the_others_ended() -> None:
    finished: list[str] = []

    def boom() -> str:
        raise RuntimeError("lost the graph")

    def slow() -> str:
        time.sleep(0.1)
        finished.append("slow")
        return "slow"

    writer: BatchWriter[str] = BatchWriter(lambda _: None, in_flight=2)
    writer.submit(frozenset({"x"}), boom)
    writer.submit(frozenset({"y"}), slow)
    with pytest.raises(RuntimeError, match="lost the graph"):
        writer.close()
    assert finished == ["slow"]
