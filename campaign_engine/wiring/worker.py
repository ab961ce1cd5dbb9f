"""The worker edges: the job table every Lambda handler and the local worker serve, the sweep, the
local worker itself and its ``/metrics``."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from datetime import timedelta

from campaign_engine.campaigns.deletion import reap_deleted_campaigns
from campaign_engine.campaigns.sending.deadline_watch import raise_late
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.delivery.email.provider import EmailProvider
from campaign_engine.delivery.gauges import StatsQueue, scrape_gauges
from campaign_engine.delivery.jobs import (
    JobTable,
    PageFailures,
    serve_deliveries,
    serve_pages,
)
from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.runner import Worker, install_stop_signals
from campaign_engine.delivery.sweeper import SweepResult, stuck_window_seconds, sweep
from campaign_engine.delivery.webhook_relay import WebhookRelay, enqueue_due
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.domain.types import Clock, format_ts, system_clock
from campaign_engine.egress.transport import AsyncSafeTransport
from campaign_engine.feedback.store import expire_feedback_records
from campaign_engine.graph.graph import Graph, address_of, open_graph
from campaign_engine.graph.webhook_outbox import expire_delivered
from campaign_engine.observability.metrics_server import MetricsServer, start_metrics_server
from campaign_engine.observability.metrics_serving import serving_registry
from campaign_engine.queue.local import MAX_RECEIVE_BATCH, LocalQueue
from campaign_engine.queue.port import Queue
from campaign_engine.wiring.email import build_email_worker
from campaign_engine.wiring.notify import (
    build_notification_worker,
    build_page_worker,
    build_webhook_transport,
)
from campaign_engine.wiring.queues import Queues, build_queues
from campaign_engine.wiring.tenants import tenant_directory

__all__ = [
    "build_job_table",
    "build_webhook_relay",
    "build_worker",
    "run_sweep",
    "run_worker",
    "start_worker_metrics",
]


log = logging.getLogger(__name__)


def build_job_table(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    *,
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
    email_provider: EmailProvider | None = None,
    relay_transport: AsyncSafeTransport | None = None,
) -> JobTable:
    """Every handler this deployment can run: notify pages and deliveries always (they need the webhook
    secret), email pages when an email provider is configured, the event-webhook relay. The local
    worker and every Lambda handler serve their messages through this one table."""
    notify = build_notification_worker(settings, graph, transport=transport, clock=clock)
    email = build_email_worker(settings, graph, queues, provider=email_provider, clock=clock)
    base = settings.campaign_delivery_retry_seconds
    page_walk = build_page_worker(settings, graph, queues, clock=clock)
    failures = PageFailures(
        graph=graph,
        clock=clock,
        max_failures=settings.campaign_dispatch_max_page_failures,
        retry_base_seconds=base,
    )
    pages = {"notify": serve_pages(page_walk.handle_page, failures=failures)}
    if email is not None:
        pages["email"] = serve_pages(email.handle_page, failures=failures)
    relay = build_webhook_relay(settings, graph, queues, transport=relay_transport, clock=clock)
    return JobTable(
        graph=graph,
        clock=clock,
        pages=pages,
        deliveries=serve_deliveries(notify, retry_base_seconds=base),
        relay=relay.handle,
        kick=relay.kick,
        closers=[notify.close, relay.close] + ([email.close] if email is not None else []),
    )


def build_webhook_relay(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    *,
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
) -> WebhookRelay:
    """The event-webhook relay with a signing poster of its own over its own safe transport (the same
    egress rules and bounds as announcements), so a slow endpoint never holds an announcement's slot."""
    poster = WebhookPoster(
        transport or build_webhook_transport(settings),
        secret="",  # never used: every event is signed with its endpoint's own secrets
        concurrency=settings.campaign_webhook_concurrency,
        timeout=settings.campaign_webhook_timeout_seconds,
    )
    return WebhookRelay(
        graph=graph, sender=poster, box=settings.secret_box(), queue=queues.webhooks, clock=clock
    )


def run_sweep(
    settings: Settings,
    graph: Graph,
    queue: Queue,
    *,
    clock: Clock = system_clock,
    webhooks_queue: Queue | None = None,
) -> SweepResult:
    """One sweep; ``webhooks_queue`` (the relay's) also gets a job per event-webhook endpoint due."""
    window = stuck_window_seconds(
        delay_seconds=settings.campaign_dispatch_delay_seconds,
        page_budget_seconds=settings.campaign_dispatch_stuck_seconds,
    )
    now = clock()
    # Due schedules first: a schedule started here is an ordinary sending dispatch for the sweep below.
    fired = fire_due(graph, queue, now=now, settings=DispatchSettings.from_settings(settings))
    result = sweep(
        graph,
        queue,
        now=now,
        stuck_after_seconds=window,
        max_page_failures=settings.campaign_dispatch_max_page_failures,
        uncertain_after_seconds=settings.campaign_email_uncertain_after_seconds,
    )
    # A delete retires its campaign at once and reaps the rest in bounded transactions; one cut short
    # (a crash, a timeout) is finished here rather than by the next delete.
    reap_deleted_campaigns(graph)
    dedup_since = format_ts(now - timedelta(days=settings.campaign_feedback_dedup_days))
    expired = expire_feedback_records(graph, before=dedup_since)
    retained_since = format_ts(now - timedelta(days=settings.campaign_event_retention_days))
    events_expired = expire_delivered(graph, before=retained_since)
    late = raise_late(graph, now=now)  # before the relay: a dispatch.late event goes out with this sweep
    relayed = [] if webhooks_queue is None else enqueue_due(graph, webhooks_queue, now=now)
    return replace(
        result, scheduled=fired, feedback_expired=expired, events_expired=events_expired, webhooks=relayed,
        late=late,
    )  # fmt: skip


def build_worker(
    settings: Settings,
    graph: Graph,
    *,
    queues: Queues | None = None,
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
    sweep_every: float | None = 60.0,
    wait_seconds: float = 1.0,
    email_provider: EmailProvider | None = None,
) -> Worker:
    queues = queues or build_queues(settings)
    sweeper = (
        None
        if sweep_every is None
        else (
            lambda: run_sweep(settings, graph, queues.dispatch, clock=clock, webhooks_queue=queues.webhooks)
        )
    )
    return Worker(
        table=build_job_table(
            settings, graph, queues, transport=transport, clock=clock, email_provider=email_provider
        ),
        dispatch_queue=queues.dispatch,
        delivery_queue=queues.delivery,
        delivery_threads=settings.campaign_worker_threads,
        # SQS hands out at most 10 per receive; the local queue settles a larger batch per commit.
        delivery_batch=MAX_RECEIVE_BATCH if isinstance(queues.delivery, LocalQueue) else 10,
        sweeper=sweeper,
        sweep_every=sweep_every or 60.0,
        hold=lambda: not graph.reachable and not graph.probe(),
        wait_seconds=wait_seconds,
    )


def start_worker_metrics(settings: Settings, graph: Graph, queues: Queues) -> MetricsServer | None:
    """The worker's ``/metrics`` on METRICS_PORT (None when unset): its counters plus the scrape-time
    gauges of both queues and of the dispatches; and its ``/readyz``, 503 while the graph is away."""
    if settings.metrics_port is None:
        return None
    settings.require_metrics()
    named = {"dispatch": queues.dispatch, "delivery": queues.delivery}
    gauges = scrape_gauges(graph, {n: q for n, q in named.items() if isinstance(q, StatsQueue)})
    token = settings.metrics_bearer_token
    return start_metrics_server(
        serving_registry(gauges, multiprocess_dir=settings.prometheus_multiproc_dir),
        host=settings.metrics_host,
        port=settings.metrics_port,
        token=token.get_secret_value() if token is not None else None,
        ready=graph.probe,  # 503 while the graph is away: the worker holds its queues meanwhile
    )


def run_worker(settings: Settings | None = None) -> None:
    """Foreground worker until SIGTERM/SIGINT (``campaign-engine worker``)."""
    settings = settings or Settings()
    graph = open_graph(settings)
    where = address_of(settings.neo4j_uri)  # never the credentials a URI may carry
    if not graph.probe():  # held until it answers (runner.py); said at once, not after a first job's wait
        log.error("worker.graph_unreachable graph=%s: check NEO4J_URI; waiting for it", where)
    else:  # the tenant seed now; with the graph away, before the first load that finds it back
        try:
            tenant_directory(settings, graph).records()
        except ServiceUnavailable:  # gone again since the probe: a start-up is never fatal for it
            log.warning("worker.graph_unreachable graph=%s: the tenant seed waits for its first load", where)
    queues = build_queues(settings)
    metrics_server = start_worker_metrics(settings, graph, queues)
    try:
        stop = threading.Event()
        install_stop_signals(stop)
        build_worker(settings, graph, queues=queues).run(stop)
    finally:
        if metrics_server is not None:
            metrics_server.close()
        graph.close()
