"""The channel testers behind the API's ``sendTestToMe``: built here, typed by ``campaigns/self_test.py``'s
``ChannelTester`` port, so the API never builds a delivery adapter itself."""

from __future__ import annotations

from campaign_engine.campaigns.self_test import ChannelTester
from campaign_engine.config import Settings
from campaign_engine.delivery.email.provider import EmailProvider
from campaign_engine.delivery.email.self_test import EmailSelfTester
from campaign_engine.delivery.notify.self_test import NotifySelfTester
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring.email import build_email_provider
from campaign_engine.wiring.queues import build_delivery_queue
from campaign_engine.wiring.tenants import tenant_directory

__all__ = ["build_email_self_tester", "build_self_testers"]


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
