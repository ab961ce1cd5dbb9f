"""The coalescer batches concurrent callers and hands each one its own outcome (real threads)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from campaign_engine.graph.coalesce import Coalescer


def test_callers_arriving_during_a_batch_share_the_next_one() -> None:
    release = threading.Event()
    batches: list[list[int]] = []

    def run(items: list[int]) -> list[int]:
        batches.append(items)
        if len(batches) == 1:
            release.wait(5)  # the first batch is "in the database" while the others queue up
        return [item * 10 for item in items]

    coalescer = Coalescer(run, name="test")
    try:
        with ThreadPoolExecutor(9) as pool:
            first = pool.submit(coalescer, 0)
            while not batches:
                threading.Event().wait(0.001)
            rest = [pool.submit(coalescer, i) for i in range(1, 9)]
            while coalescer._pending.qsize() < 8:  # every later caller is waiting for the next batch
                threading.Event().wait(0.001)
            release.set()
            assert first.result(5) == 0
            assert [future.result(5) for future in rest] == [i * 10 for i in range(1, 9)]
    finally:
        coalescer.close()
    assert batches == [[0], list(range(1, 9))]


def test_an_item_outcome_fails_only_its_caller_and_a_batch_failure_fails_all() -> None:
    def run(items: list[int]) -> list[int | BaseException]:
        if -1 in items:
            raise RuntimeError("graph down")
        return [ValueError(f"bad {item}") if item % 2 else item for item in items]

    coalescer = Coalescer(run, name="test")
    try:
        assert coalescer(2) == 2
        with pytest.raises(ValueError, match="bad 3"):
            coalescer(3)
        with pytest.raises(RuntimeError, match="graph down"):
            coalescer(-1)
        assert coalescer(4) == 4  # the worker survives a failed batch
    finally:
        coalescer.close()


def test_close_finishes_queued_work_and_stops_the_worker() -> None:
    coalescer = Coalescer(lambda items: items, name="test")
    assert coalescer("x") == "x"
    worker = coalescer._thread
    assert worker is not None and worker.is_alive()
    coalescer.close()
    assert not worker.is_alive()


def test_coroutines_wait_for_their_batch_without_a_thread_each() -> None:
    batches: list[list[int]] = []

    def run(items: list[int]) -> list[int | BaseException]:
        batches.append(items)
        return [ValueError("odd") if item % 2 else item for item in items]

    coalescer: Coalescer[int, int] = Coalescer(run, name="test")

    async def main() -> list[int | BaseException]:
        return await asyncio.gather(*(coalescer.submit(i) for i in range(6)), return_exceptions=True)

    try:
        outcomes = asyncio.run(main())
    finally:
        coalescer.close()
    assert [o if isinstance(o, int) else type(o).__name__ for o in outcomes] == [
        0, "ValueError", 2, "ValueError", 4, "ValueError",
    ]  # fmt: skip
    assert sorted(item for batch in batches for item in batch) == list(range(6))
