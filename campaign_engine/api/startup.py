"""The API's start-up work (the schema, the tenant seed), done whether or not the graph is there yet.

A process that starts while Neo4j is away (both restarted together, Neo4j still recovering its store)
must not exit: nothing would start it again. So a failed start is not fatal. The process serves at once,
answers ``/readyz`` 503 and every procedure SERVICE_UNAVAILABLE, and tries again: a served process in
the background, with back-off doubling from ``FIRST_DELAY`` to ``MAX_DELAY`` (jittered, so the API
processes of a deployment do not knock together), one log line per attempt; a Lambda container, which
has no background between invocations, with one bounded attempt at the start of an invocation (at most
one per ``MAX_DELAY``). The first attempt that succeeds makes the process serve; nobody restarts it.

An app whose start was never attempted (built and served without its lifespan, as tests do) holds
nothing: only a start that failed and has not yet succeeded does.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.graph.graph import address_of

__all__ = ["FIRST_DELAY", "MAX_DELAY", "Startup"]

log = logging.getLogger(__name__)

FIRST_DELAY = 0.5  # seconds before the second attempt
MAX_DELAY = 2.0  # the cap: the API serves within about this (plus an attempt) of the graph's return
_JITTER = 0.2
WAITING = "the API is starting and cannot reach the graph database yet; try again in a few seconds"


class Startup:
    """Runs ``start`` until it succeeds once. ``inline``: attempts happen when a request asks
    (``require``), not on a thread (the Lambda container)."""

    def __init__(
        self,
        start: Callable[[], None],
        *,
        uri: str,
        inline: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._start = start
        self._monotonic = monotonic
        self._where = address_of(uri)  # for the log: never the credentials a URI may carry
        self._inline = inline
        self._done = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failed_at: float | None = None  # monotonic end of the last failed attempt
        self.attempts = 0

    @property
    def waiting(self) -> bool:
        """True from a failed attempt until one succeeds: the process must not serve the graph yet."""
        return not self._done.is_set() and self.attempts > 0

    def attempt(self) -> bool:
        """One attempt, unless another is under way (then False at once) or one succeeded (True)."""
        if self._done.is_set():
            return True
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._done.is_set():
                return True
            self.attempts += 1
            try:
                self._start()
            except Exception as exc:  # a bug too: logged and tried again, never a process left unstarted
                self._failed_at = self._monotonic()
                unavailable = isinstance(exc, ServiceUnavailable)
                log.log(
                    logging.WARNING if unavailable else logging.ERROR,
                    "api.start_waiting attempt=%d graph=%s error=%s: %s",
                    self.attempts,
                    self._where,
                    type(exc).__name__,
                    exc if unavailable else "start-up failed; retrying",
                    exc_info=not unavailable,
                )
                return False
            self._done.set()
            if self.attempts > 1:
                log.info("api.start_succeeded attempt=%d graph=%s", self.attempts, self._where)
            return True
        finally:
            self._lock.release()

    def begin(self) -> None:
        """The first attempt now (so a reachable graph is started before the first request, as ever);
        if it fails, the next ones on a thread (not ``inline``)."""
        if self.attempt() or self._inline:
            return
        self._thread = threading.Thread(target=self._retry, name="api-startup", daemon=True)
        self._thread.start()

    def _retry(self) -> None:
        delay = FIRST_DELAY
        while not self._stop.wait(delay * random.uniform(1 - _JITTER, 1 + _JITTER)):  # noqa: S311
            if self.attempt():
                return
            delay = min(MAX_DELAY, delay * 2)

    def require(self) -> None:
        """Raises SERVICE_UNAVAILABLE while the start is waiting; an ``inline`` one first tries again
        (unless it failed less than ``MAX_DELAY`` ago: a burst of requests is not a burst of attempts)."""
        if not self.waiting:
            return
        if self._inline and (self._failed_at is None or self._monotonic() - self._failed_at >= MAX_DELAY):
            self.attempt()
        if self.waiting:
            raise ServiceUnavailable(WAITING)

    def close(self) -> None:
        """Stops the retries (process shut-down); an attempt under way ends on its own bound."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
