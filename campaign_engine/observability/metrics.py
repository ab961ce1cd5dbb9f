"""Every metric of the product, defined once, and the tiny recording API the rest of the code calls.

Code records a measurement with one call (``trpc_request``, ``deliveries``, ``webhook_post``,
``email_provider_call``, ``page_walked``); where it goes is decided once per process by its edge:

- Prometheus (the default): counters and histograms of ``prometheus_client``, served at ``/metrics`` by
  the API and by the worker (``start_metrics_server``). With ``PROMETHEUS_MULTIPROC_DIR`` in the
  environment (several processes behind one endpoint: ``uvicorn --workers``, gunicorn) the library keeps
  values in per-process files and ``metrics_serving.serving_registry`` sums them with its multiprocess
  collector. There is no live ``Gauge`` here, so no gauge ``multiprocess_mode`` has to be chosen: every
  gauge is read at scrape time by ``metrics_serving.ScrapeGauges`` (one SQL query, one SQS call, one
  Cypher count) in the process that answers the scrape, instead of being updated on every send and
  summed across processes.
- CloudWatch Embedded Metric Format on Lambda (``record_to(EmfRecorder(sys.stdout))`` in ``aws.py``):
  the same calls print one EMF JSON line each (``_aws.CloudWatchMetrics`` with Namespace, Dimensions
  and Metrics, values as top-level members), which CloudWatch turns into metrics without an agent.

Label sets are closed: procedures are the registered ones (anything else is ``(unknown)``), codes are
tRPC codes plus ``OK``, channels, outcomes and statuses are the ``Literal`` types below. Nothing with
an id, an address or a URL is ever a label.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO

from prometheus_client import Counter, Histogram, disable_created_metrics

__all__ = [
    "BATCH_PROCEDURE",
    "EMF_NAMESPACE",
    "METRICS",
    "UNKNOWN_PROCEDURE",
    "EmfRecorder",
    "MetricDef",
    "PrometheusRecorder",
    "Recorder",
    "current_recorder",
    "deliveries",
    "email_provider_call",
    "graph_statement_timeout",
    "guard_paused",
    "page_walked",
    "record_to",
    "trpc_request",
    "webhook_post",
]

log = logging.getLogger(__name__)

Channel = Literal["notify", "email"]
NotifyOutcome = Literal["acknowledged", "rejected", "blocked", "suppressed", "capped", "uncertain"]
"""``acknowledged`` counts first acknowledgements, as the Dispatch does; ``rejected`` plus ``blocked``
is the Dispatch's ``rejected``; ``uncertain`` ones are retried, so they are not on the Dispatch."""
EmailOutcome = Literal["accepted", "rejected", "throttled", "uncertain"]
"""The provider port's outcomes; ``accepted`` is the Dispatch's ``emailed``."""
WebhookResult = Literal["answered", "blocked", "unreachable", "unreadable", "timed_out"]
QueueState = Literal["visible", "in_flight", "delayed"]
DeadlinePhase = Literal["running", "lock_wait"]

EMF_NAMESPACE = "CampaignEngine"
UNKNOWN_PROCEDURE = "(unknown)"
BATCH_PROCEDURE = "(batch)"  # a batch refused as a whole (bad JSON, too many calls) before any call ran
_PREFIX = "campaign_engine_"

# A provider batch (up to 500 messages over SMTP) takes seconds; a webhook POST or a tRPC call far less.
_FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BATCH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass(frozen=True)
class MetricDef:
    """One metric: its Prometheus name (a counter's ``_total`` is added by the library) and its unit."""

    name: str
    kind: Literal["counter", "histogram", "gauge"]
    help: str
    labels: tuple[str, ...]
    unit: Literal["Count", "Seconds"]
    buckets: tuple[float, ...] = _FAST_BUCKETS

    @property
    def emf_name(self) -> str:
        """The CloudWatch name: the namespace already says whose it is."""
        return self.name.removeprefix(_PREFIX)


TRPC_REQUESTS = MetricDef(
    "campaign_engine_trpc_requests", "counter", "tRPC calls (each call of a batch) by procedure and code",
    ("procedure", "code"), "Count",
)  # fmt: skip
TRPC_DURATION = MetricDef(
    "campaign_engine_trpc_request_duration_seconds", "histogram",
    "Time to answer one tRPC call, by procedure (codes are on the counter: keeps the buckets few)",
    ("procedure",), "Seconds",
)  # fmt: skip
DELIVERIES = MetricDef(
    "campaign_engine_deliveries", "counter",
    "Recipients settled, by channel and outcome, counted when the outcome is committed",
    ("channel", "outcome"), "Count",
)  # fmt: skip
WEBHOOK_POST_DURATION = MetricDef(
    "campaign_engine_webhook_post_duration_seconds", "histogram",
    "One signed webhook POST, from the request to the whole (capped) answer, by result",
    ("result",), "Seconds",
)  # fmt: skip
EMAIL_PROVIDER_DURATION = MetricDef(
    "campaign_engine_email_provider_call_duration_seconds", "histogram",
    "One provider batch (send_each), by provider and the batch's worst outcome",
    ("provider", "outcome"), "Seconds", _BATCH_BUCKETS,
)  # fmt: skip
PAGES_WALKED = MetricDef(
    "campaign_engine_pages_walked", "counter", "Pages whose cursor move committed, by channel",
    ("channel",), "Count",
)  # fmt: skip
QUEUE_MESSAGES = MetricDef(
    "campaign_engine_queue_messages", "gauge", "Messages on a queue by state, read at scrape time",
    ("queue", "state"), "Count",
)  # fmt: skip
QUEUE_OLDEST_AGE = MetricDef(
    "campaign_engine_queue_oldest_message_age_seconds", "gauge",
    "Age of the oldest message on a local queue, read at scrape time (SQS: AWS/SQS's own metric)",
    ("queue",), "Seconds",
)  # fmt: skip
GUARD_PAUSES = MetricDef(
    "campaign_engine_dispatch_guard_pauses", "counter",
    "Dispatches the health guard paused, by channel and the rate that crossed its limit",
    ("channel", "rate"), "Count",
)  # fmt: skip
DISPATCHES = MetricDef(
    "campaign_engine_dispatches", "gauge", "Dispatches by channel and status, counted at scrape time",
    ("channel", "status"), "Count",
)  # fmt: skip
DISPATCHES_LATE = MetricDef(
    "campaign_engine_dispatches_late", "counter",
    "Dispatches whose live estimate fell behind their deadline (deliverBy), once each, by channel",
    ("channel",), "Count",
)  # fmt: skip
GRAPH_STATEMENT_TIMEOUTS = MetricDef(
    "campaign_engine_graph_statement_timeouts", "counter",
    "Graph transactions Neo4j ended at their deadline (NEO4J_TX_TIMEOUT_SECONDS and its worker twin),"
    " by what they were doing: running or waiting for a lock",
    ("phase",), "Count",
)  # fmt: skip

METRICS: tuple[MetricDef, ...] = (
    TRPC_REQUESTS,
    TRPC_DURATION,
    DELIVERIES,
    WEBHOOK_POST_DURATION,
    EMAIL_PROVIDER_DURATION,
    PAGES_WALKED,
    GUARD_PAUSES,
    QUEUE_MESSAGES,
    QUEUE_OLDEST_AGE,
    DISPATCHES,
    DISPATCHES_LATE,
    GRAPH_STATEMENT_TIMEOUTS,
)


# --- recorders --------------------------------------------------------------------------------------


class Recorder(Protocol):
    def add(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        """Count ``value`` (counter), observe it (histogram) or report it (gauge, EMF only)."""
        ...


class PrometheusRecorder:
    """Counters and histograms in the process's default registry (or its multiprocess files)."""

    def __init__(self) -> None:
        # A `_created` twin of every series would double them for nothing we read.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self._metrics: dict[str, Counter | Histogram] = {}
        for metric in METRICS:
            if metric.kind == "counter":
                self._metrics[metric.name] = Counter(metric.name, metric.help, metric.labels)
            elif metric.kind == "histogram":
                self._metrics[metric.name] = Histogram(
                    metric.name, metric.help, metric.labels, buckets=metric.buckets
                )

        # Children by label values: ``labels()`` validates and locks on every call (~10x an ``inc``);
        # the label sets are closed, so this map stays small.
        self._children: dict[tuple[str, ...], Any] = {}

    def add(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        if metric.kind == "gauge":
            return  # read at scrape time (ScrapeGauges); nothing to keep between scrapes
        key = (metric.name, *(labels[name] for name in metric.labels))
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, self._metrics[metric.name].labels(*key[1:]))
        if metric.kind == "counter":
            child.inc(value)
        else:
            child.observe(value)


class EmfRecorder:
    """One CloudWatch Embedded Metric Format line per measurement, written to ``stream`` (stdout)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        namespace: str = EMF_NAMESPACE,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._stream = stream
        self._namespace = namespace
        self._wall_clock = wall_clock
        self._lock = threading.Lock()  # whole lines only: several threads record at once

    def add(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        line = json.dumps(self.document(metric, labels, value), separators=(",", ":"))
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def document(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> dict[str, Any]:
        """The EMF object: dimensions are the labels, each a top-level string member."""
        return {
            "_aws": {
                "Timestamp": int(self._wall_clock() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": self._namespace,
                        "Dimensions": [list(metric.labels)],
                        "Metrics": [{"Name": metric.emf_name, "Unit": metric.unit}],
                    }
                ],
            },
            **{name: str(labels[name]) for name in metric.labels},
            metric.emf_name: value,
        }


_recorder: Recorder | None = None  # None: the Prometheus default
_default: PrometheusRecorder | None = None
_guard = threading.Lock()


def current_recorder() -> Recorder:
    global _default  # one sink per process, chosen by its edge (module docstring)
    if _recorder is not None:
        return _recorder
    if _default is None:
        with _guard:  # the library refuses a second registration of a name: build it once
            if _default is None:
                _default = PrometheusRecorder()
    return _default


def record_to(recorder: Recorder | None) -> Recorder | None:
    """Send every later measurement of this process to ``recorder`` (None: back to Prometheus);
    returns the one it replaces, so a test can put it back."""
    global _recorder
    with _guard:
        previous, _recorder = _recorder, recorder
    return previous


# --- the recording API --------------------------------------------------------------------------------


def trpc_request(procedure: str, code: str, seconds: float) -> None:
    """One tRPC call answered: ``procedure`` must be a registered path or ``(unknown)``."""
    recorder = current_recorder()
    recorder.add(TRPC_REQUESTS, {"procedure": procedure, "code": code}, 1)
    recorder.add(TRPC_DURATION, {"procedure": procedure}, seconds)


def deliveries(channel: Channel, counts: Mapping[str, int]) -> None:
    """Recipients settled by outcome (``NotifyOutcome`` / ``EmailOutcome`` keys), after the commit."""
    recorder = current_recorder()
    for outcome, count in counts.items():
        if count:
            recorder.add(DELIVERIES, {"channel": channel, "outcome": outcome}, count)


def webhook_post(result: WebhookResult, seconds: float) -> None:
    current_recorder().add(WEBHOOK_POST_DURATION, {"result": result}, seconds)


def email_provider_call(provider: str, outcomes: Iterable[str], seconds: float) -> None:
    """One provider batch; labelled by its worst outcome (uncertain > throttled > rejected > accepted)."""
    seen = set(outcomes)
    if not seen:
        return  # an empty page: send_each made no call
    worst = next((o for o in ("uncertain", "throttled", "rejected", "accepted") if o in seen), "accepted")
    kind = provider.split(":", 1)[0]  # "smtp:host:port" -> "smtp": the kind, never a host
    current_recorder().add(EMAIL_PROVIDER_DURATION, {"provider": kind, "outcome": worst}, seconds)


def guard_paused(channel: Channel, rate: str) -> None:
    """A Dispatch the health guard paused, after the pause committed."""
    current_recorder().add(GUARD_PAUSES, {"channel": channel, "rate": rate}, 1)


def dispatch_late(channel: str) -> None:
    """A Dispatch fell behind its deadline, after ``lateAt`` committed (``deadline_watch.py``)."""
    current_recorder().add(DISPATCHES_LATE, {"channel": channel}, 1)


def graph_statement_timeout(phase: DeadlinePhase) -> None:
    """One transaction ended by Neo4j at its deadline (``graph/graph.py``)."""
    current_recorder().add(GRAPH_STATEMENT_TIMEOUTS, {"phase": phase}, 1)


def page_walked(channel: Channel) -> None:
    current_recorder().add(PAGES_WALKED, {"channel": channel}, 1)
