"""Batched writes of an import, two in flight (at least 5,000 rows/s).

A profile batch costs the importing process little (parsing, validation) and Neo4j much (one
transaction, its index entries, its commit); one transaction at a time leaves the second core idle
while the next batch waits. ``BatchWriter`` runs up to ``in_flight`` batches at once on its own
threads while the caller parses the next one. Outcomes are handed back in submission order, on the
caller's thread, so the report is built in one place. A batch that names a profile still being written
by an earlier one waits for it: a repeated profileId keeps file order (its last row wins).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["BatchWriter"]

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
        """Wait for every batch and hand back its outcome; the first failure is raised after all ended."""
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
            for _, rest in self._flying:  # let the others end before the error leaves
                rest.exception()
            self._flying.clear()
            raise
        self._done(outcome)
