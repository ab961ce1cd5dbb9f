"""The composition root of the worker edges: queues, the webhook client and workers from ``Settings``.

``campaign-engine worker``, the Lambda handlers and the API's dispatch queue all build their adapters
here, so the backend choice (local SQLite queue or SQS) and every tuning knob are read in one place.
Tests pass their own queues, clock or client instead of patching.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email_provider import EmailProvider
from campaign_engine.delivery.email_render import EmailConfigError, cta_url_for, parse_json_object
from campaign_engine.delivery.email_worker import EmailWorker
from campaign_engine.delivery.local_queue import MAX_RECEIVE_BATCH, LocalQueue
from campaign_engine.delivery.notification_worker import NotificationWorker
from campaign_engine.delivery.page_worker import PageWorker
from campaign_engine.delivery.postmark import PostmarkProvider
from campaign_engine.delivery.queue import Queue
from campaign_engine.delivery.runner import Worker, install_stop_signals
from campaign_engine.delivery.safe_transport import AsyncSafeTransport, make_webhook_transport
from campaign_engine.delivery.smtp_provider import SmtpProvider
from campaign_engine.delivery.sqs_queue import SqsQueue, make_sqs_client
from campaign_engine.delivery.sweeper import SweepResult, stuck_window_seconds, sweep
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = [
    "Queues",
    "build_delivery_queue",
    "build_dispatch_queue",
    "build_email_provider",
    "build_email_worker",
    "build_notification_worker",
    "build_page_worker",
    "build_queues",
    "build_webhook_transport",
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
    """The page-job queue: the API writes the first page of a dispatch (``Services.dispatch_queue``)."""
    if settings.campaign_queue_backend == "sqs":
        return _sqs(settings, settings.campaign_dispatch_queue_url, "CAMPAIGN_DISPATCH_QUEUE_URL")
    return _local(settings, DISPATCH_QUEUE)


def build_delivery_queue(settings: Settings) -> Queue:
    """The per-recipient queue: the API writes only an admin's notify self-test to it."""
    if settings.campaign_queue_backend == "sqs":
        return _sqs(settings, settings.campaign_delivery_queue_url, "CAMPAIGN_DELIVERY_QUEUE_URL")
    return _local(settings, DELIVERY_QUEUE)


def build_queues(settings: Settings) -> Queues:
    return Queues(dispatch=build_dispatch_queue(settings), delivery=build_delivery_queue(settings))


def build_webhook_transport(settings: Settings) -> AsyncSafeTransport:
    """The notification worker's safe transport; its ``WebhookPoster`` runs it on a private loop."""
    return make_webhook_transport(
        allow_private=settings.campaign_allow_private_webhooks,
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
    settings: Settings,
    graph: Graph,
    *,
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
) -> NotificationWorker:
    settings.require_webhooks()
    secret = settings.notifications_webhook_secret
    assert secret is not None  # require_webhooks checked it
    return NotificationWorker(
        graph=graph,
        transport=transport or build_webhook_transport(settings),
        clock=clock,
        secret=secret.get_secret_value(),
        sender=settings.notifications_sender,
        default_webhook=settings.notifications_webhook_url,
        adult_age=settings.campaign_adult_age,
        concurrency=settings.campaign_webhook_concurrency,
        timeout=settings.campaign_webhook_timeout_seconds,
    )


def build_email_provider(settings: Settings) -> EmailProvider | None:
    """The provider named by CAMPAIGN_EMAIL_PROVIDER (None for ``none``), after ``require_email``."""
    settings.require_email()
    if settings.campaign_email_provider == "postmark":
        assert settings.postmark_api_key is not None  # require_email checked it
        return PostmarkProvider(
            api_key=settings.postmark_api_key.get_secret_value(),
            stream=settings.postmark_broadcast_stream,
            sender=settings.email_from,
            base_url=settings.postmark_api_url,
        )
    if settings.campaign_email_provider == "smtp":
        return SmtpProvider(
            host=settings.smtp_host,
            port=settings.smtp_port,
            sender=settings.email_from,
            username=settings.smtp_username,
            password=settings.smtp_password.get_secret_value() if settings.smtp_password else None,
        )
    return None


def build_email_worker(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    *,
    provider: EmailProvider | None = None,
    clock: Clock = system_clock,
) -> EmailWorker | None:
    """The email page worker, or None when no provider is configured (and none is passed)."""
    provider = provider or build_email_provider(settings)
    if provider is None:
        return None
    settings.require_email()
    origins = parse_json_object(settings.campaign_app_origins, setting="CAMPAIGN_APP_ORIGINS")
    try:  # every configured origin is checked at start, not at its first page
        for tenant in origins:
            cta_url_for(origins=origins, tenant_id=tenant, default_tenant=tenant, campaign_id="check")
    except EmailConfigError as exc:
        raise ConfigError(str(exc)) from exc
    return EmailWorker(
        graph=graph,
        provider=provider,
        tokens=UnsubscribeTokens.from_settings(settings),
        dispatch_queue=queues.dispatch,
        clock=clock,
        page_size=settings.campaign_email_page_size,
        delay_seconds=settings.campaign_dispatch_delay_seconds,
        adult_age=settings.campaign_adult_age,
        domain_name=settings.domain_name,
        app_origins=origins,
        tenants=parse_json_object(settings.campaign_tenants, setting="CAMPAIGN_TENANTS"),
        default_tenant=settings.campaign_default_tenant_id,
        throttle_backoff_seconds=settings.campaign_email_throttle_backoff_seconds,
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
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
    sweep_every: float | None = 60.0,
    wait_seconds: float = 1.0,
    email_provider: EmailProvider | None = None,
) -> Worker:
    queues = queues or build_queues(settings)
    sweeper = (
        None if sweep_every is None else (lambda: run_sweep(settings, graph, queues.dispatch, clock=clock))
    )
    return Worker(
        page_worker=build_page_worker(settings, graph, queues, clock=clock),
        notification_worker=build_notification_worker(settings, graph, transport=transport, clock=clock),
        dispatch_queue=queues.dispatch,
        delivery_queue=queues.delivery,
        delivery_threads=settings.campaign_worker_threads,
        # SQS hands out at most 10 per receive; the local queue settles a larger batch per commit.
        delivery_batch=MAX_RECEIVE_BATCH if isinstance(queues.delivery, LocalQueue) else 10,
        retry_base_seconds=settings.campaign_delivery_retry_seconds,
        sweeper=sweeper,
        sweep_every=sweep_every or 60.0,
        wait_seconds=wait_seconds,
        email_worker=build_email_worker(settings, graph, queues, provider=email_provider, clock=clock),
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
