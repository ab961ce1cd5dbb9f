"""Lambda entry points: the API through an ASGI adapter, the two SQS workers, the scheduled sweeper.

Each handler builds its adapters once per container (module-level cache filled on first call, never at
import) from ``Settings``. SQS workers answer with ``batchItemFailures`` so only the messages that must
be retried return to the queue; Lambda deletes the rest. Redelivery limits and dead-lettering are the
queues' RedrivePolicy (``serverless.yml``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import ValidationError

from campaign_engine.config import Settings
from campaign_engine.delivery.notification_worker import NotificationWorker
from campaign_engine.delivery.page_worker import PageWorker
from campaign_engine.delivery.queue import QueueError, ReceivedMessage
from campaign_engine.delivery.sqs_queue import batch_item_failures, parse_sqs_event
from campaign_engine.delivery.wiring import (
    Queues,
    build_dispatch_queue,
    build_notification_worker,
    build_page_worker,
    build_queues,
    run_sweep,
)
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph, open_graph

__all__ = [
    "api_handler",
    "delivery_handler",
    "handle_delivery_event",
    "handle_page_event",
    "page_handler",
    "sweep_handler",
]

log = logging.getLogger(__name__)


@cache
def _settings() -> Settings:
    return Settings()


@cache
def _graph() -> Graph:
    return open_graph(_settings())


@cache
def _queues() -> Queues:
    return build_queues(_settings())


@cache
def _api() -> Any:
    from mangum import Mangum

    from campaign_engine.api.app import create_app

    settings = _settings()
    app = create_app(settings, graph=_graph(), dispatch_queue=build_dispatch_queue(settings))
    return Mangum(app, lifespan="auto")


def api_handler(event: Mapping[str, Any], context: Any) -> Any:
    return _api()(event, context)


def handle_page_event(worker: PageWorker, event: Mapping[str, Any]) -> dict[str, Any]:
    """Page jobs one by one; a job whose enqueue failed is reported for retry (cursor unchanged)."""
    failed: list[str] = []
    for message in parse_sqs_event(event):
        try:
            job = parse_job(message.body)
        except ValidationError:
            log.warning("lambda.invalid_message message_id=%s", message.message_id)
            continue
        if not isinstance(job, PageJob):
            log.warning("lambda.unexpected_job message_id=%s", message.message_id)
            continue
        try:
            worker.handle_page(job)
        except QueueError:
            failed.append(message.message_id)
    return batch_item_failures(failed)


def handle_delivery_event(worker: NotificationWorker, event: Mapping[str, Any]) -> dict[str, Any]:
    """One batch through the notification worker; uncertain deliveries become batch item failures."""
    messages: list[ReceivedMessage] = parse_sqs_event(event)
    result = worker.handle_batch(messages)
    return batch_item_failures(message.message_id for message in result.retry)


@cache
def _page_worker() -> PageWorker:
    return build_page_worker(_settings(), _graph(), _queues())


@cache
def _notification_worker() -> NotificationWorker:
    return build_notification_worker(_settings(), _graph())


def page_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return handle_page_event(_page_worker(), event)


def delivery_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return handle_delivery_event(_notification_worker(), event)


def sweep_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    result = run_sweep(_settings(), _graph(), _queues().dispatch)
    return {"rearmed": len(result.rearmed), "waves": len(result.waves), "failed": len(result.failed)}
