"""The notify channel's adapters: the safe webhook transport, its egress rules, the page walk and
the per-recipient notification worker with its signing poster."""

from __future__ import annotations

from functools import partial

from campaign_engine.campaigns.sending.deadline_watch import note_late
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.notify.formats import Formats
from campaign_engine.delivery.notify.gate import SendGate
from campaign_engine.delivery.notify.lcn import BearerTokens
from campaign_engine.delivery.notify.page_walk import PageWorker
from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.egress.policy import DestinationRules, EgressBlocked
from campaign_engine.egress.transport import AsyncSafeTransport, make_webhook_transport
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring.engine_did import engine_did
from campaign_engine.wiring.queues import Queues
from campaign_engine.wiring.tenants import health_guard, tenant_directory

__all__ = ["build_notification_worker", "build_page_worker", "build_webhook_transport", "egress_rules"]


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
        guard=health_guard(settings, graph),
        watch=partial(note_late, graph),  # a send behind its deadline is announced at its next page
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
    engine = engine_did(settings)  # a bad or missing CAMPAIGN_DID_KEY stops the worker at start
    sender = WebhookPoster(
        transport or build_webhook_transport(settings),
        secret=secret.get_secret_value(),
        concurrency=settings.campaign_webhook_concurrency,
        timeout=settings.campaign_webhook_timeout_seconds,
        gate=SendGate(graph),
        bearer=None if engine is None else BearerTokens(engine),
    )
    tenants = tenant_directory(settings, graph)
    formats = Formats(
        default=settings.notifications_format,
        tenants=tenants.formats(),  # a tenant's notificationFormat: its own campaigns' sends only
        did="" if engine is None else engine.did,
        domain=settings.domain_name,
    )
    return NotificationWorker(
        graph=graph,
        sender=sender,
        clock=clock,
        sender_name=settings.notifications_sender,
        default_webhook=settings.notifications_webhook_url,
        adult_age=settings.campaign_adult_age,
        frequency_caps=tenants.frequency_caps(),
        tenant_names=tenants.names(),  # the payload's sender: the campaign's tenant
        secret_box=settings.secret_box(),  # a malformed CAMPAIGN_SECRETS_KEY stops the worker at start
        formats=formats,
        expect_tenant=tenants.expect,
    )
