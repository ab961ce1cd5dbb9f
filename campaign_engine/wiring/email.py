"""The email channel's adapters: the provider CAMPAIGN_EMAIL_PROVIDER names and the page worker."""

from __future__ import annotations

from functools import partial

from campaign_engine.campaigns.sending.deadline_watch import note_late
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.email.postmark import PostmarkProvider
from campaign_engine.delivery.email.provider import EmailProvider
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring.queues import Queues
from campaign_engine.wiring.tenants import health_guard, tenant_directory

__all__ = ["build_email_provider", "build_email_worker"]


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
    # EmailWorker copies both maps when it is built: this reads the records once, here (as it was left:
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
        guard=health_guard(settings, graph),
        watch=partial(note_late, graph),  # a send behind its deadline is announced at its next page
    )
