"""The composition root of the worker edges: queues, the webhook client and workers from ``Settings``.

``campaign-engine worker``, the Lambda handlers and the API's dispatch queue all build their adapters
here, so the backend choice (local SQLite queue or SQS) and every tuning knob are read in one place.
Tests pass their own queues, clock or client instead of patching.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from datetime import timedelta

from campaign_engine.campaigns.definitions import reap_deleted_campaigns
from campaign_engine.campaigns.schedule import fire_due
from campaign_engine.campaigns.self_test import ChannelTester
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.email.postmark import PostmarkProvider
from campaign_engine.delivery.email.provider import EmailProvider
from campaign_engine.delivery.email.render import EmailConfigError, cta_url_for
from campaign_engine.delivery.email.self_test import EmailSelfTester
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.delivery.gauges import scrape_gauges
from campaign_engine.delivery.jobs import (
    JobTable,
    PageFailures,
    serve_deliveries,
    serve_pages,
)
from campaign_engine.delivery.notify.egress import DestinationRules, EgressBlocked
from campaign_engine.delivery.notify.gate import SendGate
from campaign_engine.delivery.notify.page_walk import PageWorker
from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.self_test import NotifySelfTester
from campaign_engine.delivery.notify.transport import AsyncSafeTransport, make_webhook_transport
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.delivery.queue.local import MAX_RECEIVE_BATCH, LocalQueue
from campaign_engine.delivery.queue.port import Queue
from campaign_engine.delivery.queue.sqs import SqsQueue, make_sqs_client
from campaign_engine.delivery.runner import Worker, install_stop_signals
from campaign_engine.delivery.sweeper import SweepResult, stuck_window_seconds, sweep
from campaign_engine.domain.types import Clock, format_ts, system_clock
from campaign_engine.feedback.store import expire_feedback_records
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.tenant_directory import TenantDirectory, tenants_of
from campaign_engine.graph.tenants import settings_seed
from campaign_engine.observability.metrics import serving_registry
from campaign_engine.observability.metrics_server import MetricsServer, start_metrics_server
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = [
    "Queues",
    "build_delivery_queue",
    "build_dispatch_queue",
    "build_email_provider",
    "build_email_self_tester",
    "build_email_worker",
    "build_job_table",
    "build_notification_worker",
    "build_page_worker",
    "build_queues",
    "build_self_testers",
    "build_webhook_transport",
    "build_worker",
    "egress_rules",
    "run_sweep",
    "run_worker",
    "start_worker_metrics",
    "tenant_directory",
]

log = logging.getLogger(__name__)

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
        rules=egress_rules(settings),
        max_connections=settings.campaign_webhook_concurrency,
    )


def egress_rules(settings: Settings) -> DestinationRules:
    """https to 443, 80 and CAMPAIGN_EGRESS_PORTS; http and any port only in local development."""
    return DestinationRules.of(
        local_development=settings.campaign_local_development, extra_ports=settings.campaign_egress_ports
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
    """The worker with its sender: the safe transport (``transport`` in tests), the pause gate, the
    signing poster. The worker owns the sender; ``worker.close()`` closes it and the transport."""
    settings.require_webhooks()
    secret = settings.notifications_webhook_secret
    assert secret is not None  # require_webhooks checked it
    if settings.notifications_webhook_url:  # the default inbox: refused at start, not at every POST
        try:
            egress_rules(settings).check(settings.notifications_webhook_url)
        except EgressBlocked as exc:
            raise ConfigError(f"NOTIFICATIONS_WEBHOOK_URL: {exc.reason}") from None
    sender = WebhookPoster(
        transport or build_webhook_transport(settings),
        secret=secret.get_secret_value(),
        concurrency=settings.campaign_webhook_concurrency,
        timeout=settings.campaign_webhook_timeout_seconds,
        gate=SendGate(graph),
    )
    return NotificationWorker(
        graph=graph,
        sender=sender,
        clock=clock,
        sender_name=settings.notifications_sender,
        default_webhook=settings.notifications_webhook_url,
        adult_age=settings.campaign_adult_age,
        frequency_caps=tenant_directory(settings, graph).frequency_caps(),
        secret_box=settings.secret_box(),  # a malformed CAMPAIGN_SECRETS_KEY stops the worker at start
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
            max_connections=settings.smtp_max_connections,
            max_messages_per_connection=settings.smtp_max_messages_per_connection,
            idle_seconds=settings.smtp_idle_seconds,
        )
    return None


def _check_origins(settings: Settings) -> None:
    """CAMPAIGN_APP_ORIGINS (the seed of the tenant records) with every origin's shape checked at start."""
    origins = settings.campaign_app_origins
    try:
        for tenant in origins:
            cta_url_for(origins=origins, tenant_id=tenant, default_tenant=tenant, campaign_id="check")
    except EmailConfigError as exc:
        raise ConfigError(str(exc)) from exc


def tenant_directory(settings: Settings, graph: Graph) -> TenantDirectory:
    """This process's tenant records (``graph/tenant_directory.py``), seeded from the tenant settings
    before their first load. The settings are checked here, at start, as the seed they now are; nothing
    is read from the graph until a handler asks."""
    _check_origins(settings)
    directory = tenants_of(graph, settings)
    directory.seed_before_load(settings_seed(settings))
    return directory


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
    tenants = tenant_directory(settings, graph)
    # EmailWorker copies both maps when it is built: this reads the records once, here (issue 21 left:
    # the walk sees an edit after a restart until page_walk.py keeps the live views it is given).
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
        app_origins=tenants.app_origins(),
        tenants=tenants.branding(),
        default_tenant=settings.campaign_default_tenant_id,
        throttle_backoff_seconds=settings.campaign_email_throttle_backoff_seconds,
        max_deferrals=settings.campaign_email_max_deferrals,
        run_seconds=settings.campaign_email_run_seconds,
        frequency_caps=tenants.frequency_caps(),
    )


def build_email_self_tester(
    settings: Settings, graph: Graph, *, clock: Clock = system_clock, provider: EmailProvider | None = None
) -> EmailSelfTester | None:
    """The email part of ``sendTestToMe`` for the configured provider, or None without one."""
    provider = provider or build_email_provider(settings)
    if provider is None:
        return None
    tenants = tenant_directory(settings, graph)
    return EmailSelfTester(
        graph=graph,
        provider=provider,
        tokens=UnsubscribeTokens.from_settings(settings),
        domain_name=settings.domain_name,
        app_origins=tenants.app_origins(),
        tenants=tenants.branding(),
        default_tenant=settings.campaign_default_tenant_id,
        adult_age=settings.campaign_adult_age,
        clock=clock,
    )


def build_self_testers(settings: Settings, graph: Graph) -> dict[str, ChannelTester]:
    """The API's ``sendTestToMe`` channels: notify where this deployment can deliver notifications (a
    webhook secret is set); email where a provider is configured. A misconfigured provider or a webhook
    secret that is set but unusable fails here, at start; an unset one leaves its channel untestable."""
    testers: dict[str, ChannelTester] = {}
    email = build_email_self_tester(settings, graph)
    if email is not None:
        testers["email"] = email
    secret = settings.notifications_webhook_secret
    if secret is None or not secret.get_secret_value().strip():
        return testers
    settings.require_webhooks()
    return {**testers, "notify": NotifySelfTester(graph=graph, delivery_queue=build_delivery_queue(settings))}


def build_job_table(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    *,
    transport: AsyncSafeTransport | None = None,
    clock: Clock = system_clock,
    email_provider: EmailProvider | None = None,
) -> JobTable:
    """Every handler this deployment can run: notify pages and deliveries always (they need the webhook
    secret), email pages when an email provider is configured. The local worker and every Lambda
    handler serve their messages through this one table."""
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
    return JobTable(
        graph=graph,
        clock=clock,
        pages=pages,
        deliveries=serve_deliveries(notify, retry_base_seconds=base),
        closers=[notify.close] + ([email.close] if email is not None else []),
    )


def run_sweep(settings: Settings, graph: Graph, queue: Queue, *, clock: Clock = system_clock) -> SweepResult:
    window = stuck_window_seconds(
        delay_seconds=settings.campaign_dispatch_delay_seconds,
        page_budget_seconds=settings.campaign_dispatch_stuck_seconds,
    )
    now = clock()
    # Due schedules first: a schedule started here is an ordinary sending dispatch for the sweep below.
    fired = fire_due(
        graph,
        queue,
        now=now,
        adult_age=settings.campaign_adult_age,
        max_recipients=settings.campaign_preview_max_recipients,
        deliverable=settings.dispatch_channels,
    )
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
    return replace(result, scheduled=fired, feedback_expired=expired)


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
    gauges of both queues and of the dispatches."""
    if settings.metrics_port is None:
        return None
    settings.require_metrics()
    named = {"dispatch": queues.dispatch, "delivery": queues.delivery}
    gauges = scrape_gauges(graph, {n: q for n, q in named.items() if isinstance(q, LocalQueue | SqsQueue)})
    token = settings.metrics_bearer_token
    return start_metrics_server(
        serving_registry(gauges, multiprocess_dir=settings.prometheus_multiproc_dir),
        host=settings.metrics_host,
        port=settings.metrics_port,
        token=token.get_secret_value() if token is not None else None,
    )


def run_worker(settings: Settings | None = None) -> None:
    """Foreground worker until SIGTERM/SIGINT (``campaign-engine worker``)."""
    settings = settings or Settings()
    graph = open_graph(settings)
    if not graph.probe():  # held until it answers (runner.py); said at once, not after a first job's wait
        log.error("worker.graph_unreachable uri=%s: check NEO4J_URI; waiting for it", settings.neo4j_uri)
    else:  # the tenant seed now; with the graph away, before the first load that finds it back
        tenant_directory(settings, graph).records()
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
