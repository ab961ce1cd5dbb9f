"""The readings behind the scrape-time gauges: queue depth per queue, dispatches by channel and status.

They are read when ``/metrics`` is scraped (``observability/metrics.py:ScrapeGauges``), never on a send:
the local queue answers with one SQL read, SQS with one GetQueueAttributes, the graph with one count
that seeks the ``dispatch_status`` index once per status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, get_args, runtime_checkable

from campaign_engine.domain.dispatch import DispatchStatus
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.observability.metrics_serving import ScrapeGauges
from campaign_engine.queue.port import QueueStats

__all__ = ["StatsQueue", "count_dispatches", "scrape_gauges"]

_STATUSES = list(get_args(DispatchStatus))

# IN over the closed list of statuses: a seek of the dispatch_status index per status, no label scan.
_COUNT = "gauges_count"  # cypher/delivery/gauges_count.cypher


@runtime_checkable
class StatsQueue(Protocol):
    """A queue adapter that can report its depth (``LocalQueue``, ``SqsQueue``)."""

    def stats(self) -> QueueStats: ...


def count_dispatches(tx: Tx) -> dict[tuple[str, str], int]:
    """Dispatches by (channel, status); statuses with none are reported as 0 for every channel seen."""
    counts = {
        (str(r["channel"]), str(r["status"])): int(r["n"])
        for r in tx.run(statement(_COUNT), statuses=_STATUSES)
    }
    channels = {channel for channel, _ in counts} or {"notify"}
    return {(c, s): counts.get((c, s), 0) for c in sorted(channels) for s in _STATUSES}


def scrape_gauges(graph: Graph | None, queues: Mapping[str, StatsQueue]) -> ScrapeGauges:
    """The gauges one endpoint serves: every queue given, and dispatches when ``graph`` is given."""
    return ScrapeGauges(
        queues={name: queue.stats for name, queue in queues.items()},
        dispatches=None if graph is None else (lambda: graph.read(count_dispatches)),
    )
