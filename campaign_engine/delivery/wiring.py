"""The composition root of the worker edges: queues, the webhook client and workers from ``Settings``.

``campaign-engine worker``, the Lambda handlers and the API's dispatch queue all build their adapters
here, so the backend choice (local SQLite queue or SQS) and every tuning knob are read in one place.
Tests pass their own queues, clock or client instead of patching.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import httpx

from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.local_queue import LocalQueue
from campaign_engine.delivery.notification_worker import NotificationWorker
from campaign_engine.delivery.page_worker import PageWorker
from campaign_engine.delivery.queue import Queue
from campaign_engine.delivery.runner import Worker, install_stop_signals
from campaign_engine.delivery.safe_transport import make_webhook_client
from campaign_engine.delivery.sqs_queue import SqsQueue, make_sqs_client
from campaign_engine.delivery.sweeper import SweepResult, stuck_window_seconds, sweep
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph, open_graph

__all__ = [
    "Queues",
    "build_dispatch_queue",
    "build_notification_worker",
    "build_page_worker",
    "build_queues",
    "build_webhook_client",
    "build_worker",
    "run_sweep",
    "run_worker",
]

DISPATCH_QUEUE = "dispatch"
DELIVERY_QUEUE = "delivery"


@dataclass(frozen=True)
class Queues:
    dispatch: Queue
    delivery: Queue


def _local(settings: Settings, name: str) -> LocalQueue:
    return LocalQueue(
        settings.campaign_local_queue_path,
        name,
        visibility_timeout=settings.campaign_queue_visibility_seconds,
        max_receives=settings.campaign_queue_max_receives,
    )


def _sqs(settings: Settings, url: str | None, variable: str) -> SqsQueue:
    if not url:
        raise ConfigError(f"{variable} must be set when CAMPAIGN_QUEUE_BACKEND=sqs")
    return SqsQueue(make_sqs_client(settings.aws_endpoint_url_sqs, settings.aws_region), url)


def build_dispatch_queue(settings: Settings) -> Queue:
    """The page-job queue: the only queue the API writes to (``Services.dispatch_queue``)."""
    if settings.campaign_queue_backend == "sqs":
        return _sqs(settings, settings.campaign_dispatch_queue_url, "CAMPAIGN_DISPATCH_QUEUE_URL")
    return _local(settings, DISPATCH_QUEUE)


def build_queues(settings: Settings) -> Queues:
    if settings.campaign_queue_backend == "sqs":
        delivery: Queue = _sqs(settings, settings.campaign_delivery_queue_url, "CAMPAIGN_DELIVERY_QUEUE_URL")
    else:
        delivery = _local(settings, DELIVERY_QUEUE)
    return Queues(dispatch=build_dispatch_queue(settings), delivery=delivery)


def build_webhook_client(settings: Settings) -> httpx.Client:
    return make_webhook_client(
        allow_private=settings.campaign_allow_private_webhooks,
        timeout=settings.campaign_webhook_timeout_seconds,
        max_connections=settings.campaign_webhook_concurrency,
    )


def build_page_worker(
    settings: Settings, graph: Graph, queues: Queues, *, clock: Clock = system_clock
) -> PageWorker:
    return PageWorker(
        graph=graph,
        delivery_queue=queues.delivery,
        dispatch_queue=queues.dispatch,
        clock=clock,
        page_size=settings.campaign_dispatch_page_size,
        delay_seconds=settings.campaign_dispatch_delay_seconds,
        adult_age=settings.campaign_adult_age,
    )


def build_notification_worker(
    settings: Settings, graph: Graph, *, client: httpx.Client | None = None, clock: Clock = system_clock
) -> NotificationWorker:
    settings.require_webhooks()
    secret = settings.notifications_webhook_secret
    assert secret is not None  # require_webhooks checked it
    return NotificationWorker(
        graph=graph,
        client=client or build_webhook_client(settings),
        clock=clock,
        secret=secret.get_secret_value(),
        sender=settings.notifications_sender,
        default_webhook=settings.notifications_webhook_url,
        adult_age=settings.campaign_adult_age,
        concurrency=settings.campaign_webhook_concurrency,
    )


def run_sweep(settings: Settings, graph: Graph, queue: Queue, *, clock: Clock = system_clock) -> SweepResult:
    window = stuck_window_seconds(
        delay_seconds=settings.campaign_dispatch_delay_seconds,
        page_budget_seconds=settings.campaign_dispatch_stuck_seconds,
    )
    return sweep(graph, queue, now=clock(), stuck_after_seconds=window)


def build_worker(
    settings: Settings,
    graph: Graph,
    *,
    queues: Queues | None = None,
    client: httpx.Client | None = None,
    clock: Clock = system_clock,
    sweep_every: float | None = 60.0,
    wait_seconds: float = 1.0,
) -> Worker:
    queues = queues or build_queues(settings)
    sweeper = (
        None if sweep_every is None else (lambda: run_sweep(settings, graph, queues.dispatch, clock=clock))
    )
    return Worker(
        page_worker=build_page_worker(settings, graph, queues, clock=clock),
        notification_worker=build_notification_worker(settings, graph, client=client, clock=clock),
        dispatch_queue=queues.dispatch,
        delivery_queue=queues.delivery,
        delivery_threads=settings.campaign_worker_threads,
        retry_base_seconds=settings.campaign_delivery_retry_seconds,
        sweeper=sweeper,
        sweep_every=sweep_every or 60.0,
        wait_seconds=wait_seconds,
    )


def run_worker(settings: Settings | None = None) -> None:
    """Foreground worker until SIGTERM/SIGINT (``campaign-engine worker``)."""
    settings = settings or Settings()
    graph = open_graph(settings)
    try:
        stop = threading.Event()
        install_stop_signals(stop)
        build_worker(settings, graph).run(stop)
    finally:
        graph.close()
