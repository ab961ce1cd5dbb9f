"""What a tenant record says about its lane: whether its campaigns may be critical, and its weight.

Read inside the transactions that need it (a campaign made critical, a dispatch started or fired), so
a ``tenants.update {allowCritical, weight}`` applies to the next of them; the page walks read the
weight with the campaign they guard (``dispatch_read_guard.cypher``).
"""

from __future__ import annotations

from campaign_engine.domain.errors import Forbidden
from campaign_engine.graph.graph import Tx

__all__ = ["require_critical_allowed", "tenant_lane"]

_LANE = "MATCH (t:Tenant {tenantId: $tenantId}) RETURN t.allowCritical AS allowCritical, t.weight AS weight"


def tenant_lane(tx: Tx, tenant_id: str | None) -> tuple[bool, int | None]:
    """(may its campaigns be critical, its weight within a lane); a tenant without a record: (True,
    None), the defaults (domain/priority.py)."""
    record = None if tenant_id is None else tx.run(_LANE, tenantId=tenant_id).single()
    if record is None:
        return True, None
    return record["allowCritical"] is not False, record["weight"]


def require_critical_allowed(tx: Tx, tenant_id: str | None) -> None:
    """FORBIDDEN when the tenant forbids critical campaigns (``tenants.update {allowCritical: false}``):
    asked where a campaign becomes critical and again where a critical one is dispatched."""
    if not tenant_lane(tx, tenant_id)[0]:
        raise Forbidden(
            f"tenant '{tenant_id}' does not allow critical campaigns (a platform admin sets allowCritical)"
        )
