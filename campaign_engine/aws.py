"""Lambda entry points: the API through an ASGI adapter, the SQS workers, the scheduled sweeper.

Each handler builds its adapters once per container (module-level cache filled on first call, never at
import) from ``Settings``. The SQS handlers do what the local runner does: parse the event's records,
hand them to the job table (``delivery/jobs.py``), and settle each by its outcome. A ``Retry`` gets its
back-off as a per-message visibility change and is reported in ``batchItemFailures``; Lambda deletes
the rest. Redelivery limits and dead-lettering are the queues' RedrivePolicy (``serverless.yml``).

The API app is started once per container (``create_app(start_now=True)``, Mangum without lifespan):
Mangum's lifespan support would run the app's start-up and shut-down around every invocation. A cold
start while the graph is away answers 503 within its bounded attempt; a later invocation of the same
container tries the start again and serves once it succeeds (``api/startup.py``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from functools import cache
from typing import Any

from structlog.contextvars import bound_contextvars

from campaign_engine.config import Settings
from campaign_engine.delivery.gauges import scrape_gauges
from campaign_engine.delivery.jobs import JobTable
from campaign_engine.delivery.runner import settle
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.observability import metrics
from campaign_engine.observability.logs import configure_logging
from campaign_engine.observability.metrics_serving import record_readings
from campaign_engine.queue.port import Queue
from campaign_engine.queue.sqs import batch_item_failures, parse_sqs_event
from campaign_engine.wiring import Queues, build_job_table, build_queues, run_sweep

__all__ = [
    "api_handler",
    "delivery_handler",
    "handle_sqs_event",
    "page_handler",
    "sweep_handler",
    "webhook_handler",
]

log = logging.getLogger(__name__)


@cache
def _settings() -> Settings:
    # Our handler replaces the one Lambda's runtime gives the root logger (plain text, root at
    # WARNING): one JSON line per event in CloudWatch, redacted, at LOG_LEVEL.
    settings = Settings()
    configure_logging(settings)
    metrics.record_to(metrics.EmfRecorder(sys.stdout))  # no scrape reaches a Lambda: EMF lines instead
    return settings


def _invocation(context: Any) -> Any:
    """Binds this invocation's id as ``requestId`` on every line it logs (page and delivery jobs bind
    their campaign, dispatch and delivery ids per record in ``delivery/jobs.py``)."""
    return bound_contextvars(requestId=getattr(context, "aws_request_id", None))


@cache
def _graph() -> Graph:
    return open_graph(_settings())


@cache
def _queues() -> Queues:
    return build_queues(_settings())


@cache
def _table() -> JobTable:
    return build_job_table(_settings(), _graph(), _queues())


@cache
def _api() -> Any:
    from mangum import Mangum

    from campaign_engine.api.app import create_app

    # The app opens its own graph: an API call waits about a second for an unreachable Neo4j (then
    # 503), where the workers' graph waits out a restart (graph/graph.py, NEO4J_UNAVAILABLE_WAIT_SECONDS).
    queues = _queues()  # the relay's too: a request that recorded events kicks it (api/event_kick.py)
    app = create_app(
        _settings(),
        dispatch_queue=queues.dispatch,
        webhooks_queue=queues.webhooks,
        start_now=True,
        serve_metrics=False,
    )
    return Mangum(app, lifespan="off")


def api_handler(event: Mapping[str, Any], context: Any) -> Any:
    return _api()(event, context)  # the app binds each request's own id (observability/request_id.py)


def handle_sqs_event(table: JobTable, queue: Queue, event: Mapping[str, Any]) -> dict[str, Any]:
    """One SQS event through the job table; the messages to retry come back as batch item failures."""
    messages = parse_sqs_event(event)
    kept = settle(table, queue, messages, delete_finished=False)
    log.info("lambda.batch", extra={"records": len(messages), "retry": len(kept)})
    return batch_item_failures(message.message_id for message in kept)


def page_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Page jobs of every channel (notify and email) from the dispatch queue."""
    with _invocation(context):
        return handle_sqs_event(_table(), _queues().dispatch, event)


def delivery_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Per-recipient notify deliveries from the delivery queue."""
    with _invocation(context):
        return handle_sqs_event(_table(), _queues().delivery, event)


def webhook_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Event-webhook relay jobs from their own queue: one endpoint's queued events each."""
    with _invocation(context):
        return handle_sqs_event(_table(), _queues().webhooks, event)


def sweep_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    with _invocation(context):
        if not _graph().probe():  # the workers' graph would wait out the outage past this timeout
            log.warning("sweeper.skipped reason=graph_unreachable: the next scheduled run sweeps")
            return {"skipped": 1}
        result = run_sweep(_settings(), _graph(), _queues().dispatch, webhooks_queue=_queues().webhooks)
        # Dispatches by status once a minute; queue depth and age are AWS/SQS's own metrics there.
        record_readings(scrape_gauges(_graph(), {}))
        counts = {
            "rearmed": len(result.rearmed),
            "waves": len(result.waves),
            "failed": len(result.failed),
            "scheduled": len(result.scheduled),
            "webhooks": len(result.webhooks),
            "late": len(result.late),  # dispatch.late raised (campaigns/sending/deadline_watch.py)
        }
        log.info("sweeper.ran", extra=counts)
        return counts
