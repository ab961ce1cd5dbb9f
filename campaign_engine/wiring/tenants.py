"""The process's tenant records, seeded from the tenant settings and checked at start."""

from __future__ import annotations

from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.render import EmailConfigError, cta_url_for
from campaign_engine.delivery.health_guard import HealthGuard
from campaign_engine.domain.dispatch_health import GuardLimits
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import TenantDirectory, tenants_of
from campaign_engine.graph.tenants import settings_seed

__all__ = ["health_guard", "tenant_directory"]


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


def health_guard(settings: Settings, graph: Graph) -> HealthGuard:
    """The page walks' health guard: ``CAMPAIGN_GUARD_*``, each overridden by the campaign's
    tenant record where it sets one (read through the directory's 5 s view, so an edit needs no restart)."""
    limits = GuardLimits(
        min_sample=settings.campaign_guard_min_sample,
        max_hard_bounce_rate=settings.campaign_guard_max_hard_bounce_rate,
        max_complaint_rate=settings.campaign_guard_max_complaint_rate,
        max_rejection_rate=settings.campaign_guard_max_rejection_rate,
    )
    return HealthGuard(limits=limits, tenant=tenant_directory(settings, graph).tenant)
