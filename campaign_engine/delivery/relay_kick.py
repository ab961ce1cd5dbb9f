"""The relay's kick: start the relay of every endpoint this process just queued events for.

Without it an event waits for the sweep (about a minute). Both processes that record events kick after
their commits: the worker after each batch of jobs (``delivery/jobs.py``), the API after each request
(``api/event_kick.py``; the same app in the Lambda handler). A kick sends one ``RelayJob`` per touched
endpoint to the relay's durable queue, so delivery stays at least once, through the queue, on the relay's
unchanged retry schedule; a job that finds the endpoint busy (its relay looks again as it lets go), or
nothing queued because the transaction that touched it rolled back, is a no-op, and a send that fails is
made up by the sweep.

Endpoints the caller's own work touched (its ``touched_scope``, passed as ``committed``) get a job at once:
that work has returned, so committed. Those another thread touched outside any scope (the process's set)
wait a second, for a commit that may still be under way. At most one job per endpoint per
``SPACING_SECONDS`` from a process, so a burst of events (a dispatch, a client creating in a loop) costs
about a job a second, not one per event; an endpoint touched sooner gets its job that much later, never
none. A job not yet visible reads what is committed when it starts, so it covers committed events; for
the others only one still more than ``COVERS_SECONDS`` away does.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection

from campaign_engine.domain.dispatch import RelayJob, job_json
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.queue.port import Queue, QueueError

__all__ = ["COVERS_SECONDS", "SPACING_SECONDS", "RelayKick"]

log = logging.getLogger(__name__)

SPACING_SECONDS = 1.0
COVERS_SECONDS = 0.5
_BATCH = 10  # SQS's most per send


class RelayKick:
    """One per process and graph: it remembers when each endpoint's last job becomes visible."""

    def __init__(
        self, *, graph: Graph, queue: Queue, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._view = subscribers_for(graph)
        self._queue = queue
        self._monotonic = monotonic
        self._visible: dict[str, float] = {}

    def due(self, committed: Collection[str] = ()) -> bool:
        """Something to kick (no I/O: the API asks after every request)."""
        return bool(committed) or self._view.touched()

    def kick(self, committed: Collection[str] = ()) -> None:
        """Send the jobs of ``committed`` (touched by the caller's committed work) and of the process's
        touched set. Never raises for the queue: a refused send is logged and the sweep makes up for it."""
        now = self._monotonic()
        self._visible = {e: at for e, at in self._visible.items() if at >= now - SPACING_SECONDS}
        by_delay: dict[int, list[str]] = {}
        others = set(self._view.take_touched()) - set(committed)
        for endpoint, soonest, covers in sorted(
            [(e, 0.0, 0.0) for e in committed] + [(e, 1.0, COVERS_SECONDS) for e in others]
        ):
            visible = self._visible.get(endpoint)
            if visible is not None and visible > now + covers:
                continue  # a job still to come reads these events too
            last = visible if visible is not None else now - SPACING_SECONDS
            delay = math.ceil(max(soonest, last + SPACING_SECONDS - now))
            self._visible[endpoint] = now + delay
            by_delay.setdefault(delay, []).append(endpoint)
        try:
            for delay, endpoints in sorted(by_delay.items()):
                for start in range(0, len(endpoints), _BATCH):
                    jobs = [job_json(RelayJob(endpoint_id=e)) for e in endpoints[start : start + _BATCH]]
                    self._queue.send_batch(jobs, delay_seconds=delay)
        except QueueError:  # a count, never the endpoints: their ids are one tenant's, this line everyone's
            log.warning("webhooks.kick_failed endpoints=%d", sum(len(e) for e in by_delay.values()))
