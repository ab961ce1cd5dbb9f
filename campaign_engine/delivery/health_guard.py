"""The health guard's share of the page walks: check before a page, pause by itself.

Both walks ask ``HealthGuard.breach`` at the start of every page, with the Dispatch node they already
read (the email claim's guard read, the notify page's ``read_guard``): the counters it judges are kept
on the node by the transactions that learn them, so a check is arithmetic, no query
(``domain/dispatch_health.py``). A breach pauses the Dispatch in ONE transaction (``pause``) that also
writes the audit entry (actor ``system:health-guard``) and the ``dispatch.paused`` event; only the
holder of the cursor pauses (the same compare-and-set as a stop), so a stale duplicate changes nothing.
The metric and the log line follow the commit. From then on every page job meets ``status: paused`` at
the gate and ends without sending; the sweeper only re-arms ``sending`` ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.dispatch_health import Breach, GuardLimits, breach_of
from campaign_engine.domain.tenant import TenantPublic
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.observability import metrics

__all__ = ["SYSTEM_ACTOR", "HealthGuard", "pause", "paused", "system_audit"]

log = logging.getLogger(__name__)

SYSTEM_ACTOR = "system:health-guard"
"""Who the audit trail names for a pause nobody asked for."""
_PROCEDURE = "delivery.healthGuard"

TenantRecord = Callable[[str | None], TenantPublic | None]
"""The tenant's record (or the default tenant's): ``TenantDirectory.tenant``, a 5 s cached view."""

# Lock first, then the cursor check (dispatch_cursor's rule): only the walk holding the cursor pauses.
_PAUSE = "health_guard_pause"  # cypher/delivery/health_guard_pause.cypher


@dataclass(frozen=True)
class HealthGuard:
    """The settings' limits, each replaced by the campaign's tenant's override where it has one."""

    limits: GuardLimits = field(default_factory=GuardLimits)
    tenant: TenantRecord | None = None

    def limits_for(self, tenant_id: str | None) -> GuardLimits:
        record = None if self.tenant is None else self.tenant(tenant_id)
        if record is None:
            return self.limits
        base = self.limits
        return GuardLimits(
            min_sample=base.min_sample,
            max_hard_bounce_rate=_first(record.guard_max_hard_bounce_rate, base.max_hard_bounce_rate),
            max_complaint_rate=_first(record.guard_max_complaint_rate, base.max_complaint_rate),
            max_rejection_rate=_first(record.guard_max_rejection_rate, base.max_rejection_rate),
        )

    def breach(self, dispatch: Mapping[str, Any], campaign: Mapping[str, Any] | None) -> Breach | None:
        """The rate of ``dispatch`` above its limit, if any; cheap enough for every page."""
        tenant_id = None if campaign is None else campaign.get("tenantId")
        return breach_of(dispatch, self.limits_for(tenant_id))


def _first(override: float | None, default: float) -> float:
    return default if override is None else override


def pause(
    tx: Tx,
    job: PageJob,
    breach: Breach,
    *,
    audit: AuditContext,
    campaign: Mapping[str, Any],
    now: str,
    graph: Graph | None = None,
) -> bool:
    """Pause ``job``'s Dispatch for ``breach`` if this job holds its cursor; the audit entry and the
    ``dispatch.paused`` event in the same transaction. True when it paused. ``audit`` is drawn outside
    the transaction function (its id and time), so a driver retry writes the same entry."""
    paused = tx.run(
        statement(_PAUSE),
        dispatchId=job.dispatch_id,
        cursor=job.cursor or "",
        now=now,
        message=breach.message,
        rate=breach.rate,
        value=breach.value,
        limit=breach.limit,
        sample=breach.sample,
    ).single()
    if paused is None:
        return False
    record_audit(tx, audit, target_type="dispatch", target_id=job.dispatch_id, campaign=dict(campaign),
                 revision_before=campaign.get("revision"), revision_after=campaign.get("revision"),
                 detail={"channel": job.channel, "cursor": job.cursor, **breach.wire()})  # fmt: skip
    record_dispatch_events(tx, graph, "dispatch.paused", [job.dispatch_id], now=now, **breach.wire())
    return True


def system_audit(job: PageJob, campaign: Mapping[str, Any], *, at: str) -> AuditContext:
    """The entry of a pause by the guard: no caller, so the system is the actor and the dispatch id
    stands in for the request id (every line of the page names it too)."""
    return AuditContext(
        actor=SYSTEM_ACTOR,
        procedure=_PROCEDURE,
        request_id=job.dispatch_id,
        at=at,
        tenant_id=str(campaign.get("tenantId") or ""),
    )


def paused(job: PageJob, breach: Breach) -> None:
    """After the pause committed: the metric and the log line operators alert on."""
    metrics.guard_paused(job.channel, breach.rate)
    log.warning(
        "dispatch.guard_paused",
        extra={
            "dispatchId": job.dispatch_id,
            "channel": job.channel,
            "rate": breach.rate,
            "value": breach.value,
            "limit": breach.limit,
            "sample": breach.sample,
        },
    )
