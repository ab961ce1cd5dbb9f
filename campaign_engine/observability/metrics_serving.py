"""Serving the metrics: the scrape-time gauges and what one ``/metrics`` answers.

``metrics.py`` defines every metric and records events; this module is the reading side. Gauges are
read when scraped (``ScrapeGauges``: queue depth and oldest age per queue, dispatches by status) in the
process that answers the scrape, never updated on every send; ``serving_registry`` puts them beside the
process's counters (or the multiprocess sum), and ``scrape`` answers one request behind the bearer check.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from campaign_engine.observability.metrics import (
    DISPATCHES,
    QUEUE_MESSAGES,
    QUEUE_OLDEST_AGE,
    MetricDef,
    current_recorder,
)

__all__ = ["QueueStats", "ScrapeGauges", "authorized", "record_readings", "scrape", "serving_registry"]

log = logging.getLogger(__name__)


class QueueStats(Protocol):
    """What a queue adapter reports about itself (``queue/port.py:QueueStats``)."""

    @property
    def visible(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def delayed(self) -> int: ...
    @property
    def oldest_age_seconds(self) -> float | None: ...


Reading = tuple[MetricDef, dict[str, str], float]


class ScrapeGauges(Collector):
    """Gauges computed when scraped: queue depth and oldest age per queue, dispatches by status.

    A reader that fails (graph or queue unreachable) leaves its gauges out of that scrape, logged; the
    scrape itself still answers.
    """

    def __init__(
        self,
        *,
        queues: Mapping[str, Callable[[], QueueStats]],
        dispatches: Callable[[], Mapping[tuple[str, str], int]] | None = None,
    ) -> None:
        self._queues = dict(queues)
        self._dispatches = dispatches

    def readings(self) -> list[Reading]:
        found: list[Reading] = []
        for name, read in sorted(self._queues.items()):
            try:
                stats = read()
            except Exception:  # a scrape must answer: leave this queue out
                log.warning("metrics.queue_read_failed queue=%s", name, exc_info=True)
                continue
            for state, count in (
                ("visible", stats.visible),
                ("in_flight", stats.in_flight),
                ("delayed", stats.delayed),
            ):
                found.append((QUEUE_MESSAGES, {"queue": name, "state": state}, float(count)))
            if stats.oldest_age_seconds is not None:
                found.append((QUEUE_OLDEST_AGE, {"queue": name}, stats.oldest_age_seconds))
        if self._dispatches is not None:
            try:
                counts = self._dispatches()
            except Exception:
                log.warning("metrics.dispatch_count_failed", exc_info=True)
                counts = None
            for (channel, status), count in sorted((counts or {}).items()):
                found.append((DISPATCHES, {"channel": channel, "status": status}, float(count)))
        return found

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        for metric, labels, value in self.readings():
            family = families.get(metric.name)
            if family is None:
                family = families[metric.name] = GaugeMetricFamily(
                    metric.name, metric.help, labels=metric.labels
                )
            family.add_metric([labels[name] for name in metric.labels], value)
        yield from families.values()

    def describe(self) -> Iterator[Metric]:
        return iter(())  # read only when scraped, never at registration


# --- serving --------------------------------------------------------------------------------------------


class _ThisProcess(Collector):
    """The default registry (our counters plus process and platform metrics) inside another registry."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()

    def describe(self) -> Iterator[Metric]:
        return iter(())


def serving_registry(*gauges: Collector, multiprocess_dir: str | None) -> CollectorRegistry:
    """What one ``/metrics`` answers: this process's metrics, or with ``multiprocess_dir`` the sum over
    every process writing there (the library's multiprocess mode), plus this edge's scrape-time gauges."""
    current_recorder()  # the counters exist (at zero) before the first scrape, not only after the first event
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess_dir:
        MultiProcessCollector(registry, path=multiprocess_dir)  # type: ignore[no-untyped-call]
    else:
        registry.register(_ThisProcess())
    for gauge in gauges:
        registry.register(gauge)
    return registry


def authorized(authorization: str | None, token: str | None) -> bool:
    """Open when no token is configured; otherwise ``Bearer <token>``, compared in constant time."""
    if not token:
        return True
    expected = f"Bearer {token}".encode()
    return hmac.compare_digest((authorization or "").encode(), expected)


def scrape(
    registry: CollectorRegistry, *, authorization: str | None, accept: str | None, token: str | None
) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, headers) of one scrape: 401 with ``WWW-Authenticate`` unless authorized."""
    if not authorized(authorization, token):
        return 401, b"unauthorized\n", {"www-authenticate": "Bearer", "content-type": "text/plain"}
    encoder, content_type = choose_encoder(accept or "")
    return 200, encoder(registry), {"content-type": content_type, "cache-control": "no-store"}


def record_readings(gauges: ScrapeGauges) -> None:
    """Report the scrape-time gauges now (the Lambda sweeper, where nothing scrapes; EMF only)."""
    recorder = current_recorder()
    for metric, labels, value in gauges.readings():
        recorder.add(metric, labels, value)
