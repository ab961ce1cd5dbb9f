"""Coalesce concurrent callers into one graph round trip (group commit for hot per-user procedures).

Every graph transaction costs about a millisecond of driver CPU and another of database CPU before it
does any work, so one transaction per API call caps a 2-core machine at a few hundred calls per
second. A ``Coalescer`` lets each calling thread submit one item and block; a single worker thread
takes everything pending, runs ``run_batch`` once over the lot (one UNWIND statement, one transaction)
and hands each caller its own result. Callers that arrive while a batch runs form the next batch, so
batches grow with load and a lone call waits for nothing but its own query.

``run_batch`` returns one outcome per item, in order: a value, or an exception meant for that caller
alone (e.g. ``NotFound`` for one row). An exception raised by ``run_batch`` itself (the graph is down)
fails every caller of that batch, exactly as if each had run its own failing transaction.

Callers are threads (``__call__``) or coroutines (``submit``). A coroutine occupies no thread while it
waits, and all the coroutines of one event loop in a batch are woken by a single callback on that
loop: no thread handoff per call, which is most of what a call costs once its query is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar, Union

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")
_Waiter = Union["Future[R]", "tuple[asyncio.AbstractEventLoop, asyncio.Future[R]]"]


class Coalescer(Generic[T, R]):
    def __init__(
        self, run_batch: Callable[[list[T]], Sequence[R | BaseException]], *, name: str, max_batch: int = 64
    ) -> None:
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._name = name
        self._pending: queue.SimpleQueue[tuple[T, _Waiter[R]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __call__(self, item: T) -> R:
        """Runs ``item`` in the next batch and returns its outcome (or raises its exception)."""
        future: Future[R] = Future()
        self._start()
        self._pending.put((item, future))
        return future.result()

    async def submit(self, item: T) -> R:
        """The same from a coroutine, without holding a thread while the batch runs."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._start()
        self._pending.put((item, (loop, future)))
        return await future

    def close(self) -> None:
        """Stops the worker once the batches already queued have run."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._pending.put(None)
            thread.join()

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            first = self._pending.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    entry = self._pending.get_nowait()
                except queue.Empty:
                    break
                if entry is None:  # close(): finish this batch, then stop
                    self._settle(batch)
                    return
                batch.append(entry)
            self._settle(batch)

    def _settle(self, batch: list[tuple[T, _Waiter[R]]]) -> None:
        outcomes: Sequence[R | BaseException]
        try:
            outcomes = self._run_batch([item for item, _ in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"{self._name}: {len(outcomes)} outcomes for {len(batch)} items")
        except Exception as exc:  # every caller of the batch gets it and re-raises it
            outcomes = [exc] * len(batch)
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[R], R | BaseException]]] = {}
        for (_, waiter), outcome in zip(batch, outcomes, strict=True):
            if isinstance(waiter, Future):
                _resolve(waiter, outcome)
            else:
                loop, future = waiter
                by_loop.setdefault(loop, []).append((future, outcome))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve_all, settled)


def _resolve(future: Future[R] | asyncio.Future[R], outcome: R | BaseException) -> None:
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _resolve_all(settled: list[tuple[asyncio.Future[R], R | BaseException]]) -> None:
    for future, outcome in settled:
        if not future.done():  # a cancelled caller (client gone) no longer waits
            _resolve(future, outcome)
