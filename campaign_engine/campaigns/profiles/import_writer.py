"""Batched writes of an import, two in flight (at least 5,000 rows/s).

A profile batch costs the importing process little (parsing, validation) and Neo4j much (one
transaction, its index entries, its commit); one transaction at a time leaves the second core idle
while the next batch waits. ``BatchWriter`` runs up to ``in_flight`` batches at once on its own
threads while the caller parses the next one. Outcomes are handed back in submission order, on the
caller's thread, so the report is built in one place. A batch that names a profile still being written
by an earlier one waits for it: a repeated profileId keeps file order (its last row wins).

An import the graph stops answering mid-way (an outage, a statement past its deadline) has committed
some batches and not others. ``Committed`` keeps which lines those were, and ``Committed.cut`` turns the
failure into the SERVICE_UNAVAILABLE the client reads: how many rows, which lines, the rest not written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from campaign_engine.domain.errors import ServiceUnavailable

__all__ = ["BatchWriter", "Committed"]

T = TypeVar("T")


class BatchWriter(Generic[T]):
    """``submit(ids, write)`` runs ``write()`` on a writer thread; ``done(outcome)`` gets each outcome
    on the submitting thread, in order, from a later ``submit`` or from ``close``."""

    def __init__(self, done: Callable[[T], None], *, in_flight: int = 2) -> None:
        self._done = done
        self._limit = in_flight
        self._pool = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="import-writer")
        self._flying: deque[tuple[frozenset[str], Future[T]]] = deque()

    def submit(self, ids: frozenset[str], write: Callable[[], T]) -> None:
        while self._flying and (
            len(self._flying) >= self._limit or any(ids & earlier for earlier, _ in self._flying)
        ):
            self._settle_oldest()
        self._flying.append((ids, self._pool.submit(write)))

    def close(self) -> None:
        """Wait for every batch and hand back its outcome; the first failure is raised after all ended,
        and after the outcomes of the batches that did commit beside it were handed back."""
        try:
            while self._flying:
                self._settle_oldest()
        finally:
            self._pool.shutdown(wait=True)

    def _settle_oldest(self) -> None:
        _, future = self._flying.popleft()
        try:
            outcome = future.result()
        except BaseException:
            for _, rest in self._flying:  # let the others end before the error leaves; what they
                if rest.exception() is None:  # committed is reported (Committed) like any other batch
                    self._done(rest.result())
            self._flying.clear()
            raise
        self._done(outcome)


class Committed:
    """The lines of an import's committed batches, as ranges: a batch that follows the last one added
    (``seq``, its place in submission order) extends its range; one after a batch that failed starts
    a new range."""

    def __init__(self) -> None:
        self.rows = 0
        self._ranges: list[list[int]] = []
        self._last_seq = -2

    def add(self, seq: int, lines: list[int]) -> None:
        if not lines:
            self._last_seq = seq
            return
        first, last = min(lines), max(lines)
        if self._ranges and seq == self._last_seq + 1:
            self._ranges[-1][1] = max(self._ranges[-1][1], last)
        else:
            self._ranges.append([first, last])
        self.rows += len(lines)
        self._last_seq = seq

    def cut(self, exc: ServiceUnavailable) -> ServiceUnavailable:
        """The failure as the client reads it: ``data.committed`` = ``{rows, lines}``. (An import stops at
        its first failure, so there are at most as many ranges as batches in flight, plus one.)"""
        if not self.rows:
            done = "nothing was imported"
        else:
            spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in self._ranges)
            done = f"{self.rows} rows were committed (the valid rows of lines {spans}) and no others"
        message = (
            f"The import stopped ({exc.message}): {done}; guardian links were not applied. Re-run the"
            " whole file: every write is an idempotent upsert"
        )
        return ServiceUnavailable(message, data={"committed": {"rows": self.rows, "lines": self._ranges}})
