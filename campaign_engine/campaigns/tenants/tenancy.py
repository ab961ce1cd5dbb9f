"""The tenant boundary of admin calls: a tenant's campaign ref to its storage id (``domain/tenancy.py``).

Every admin procedure naming a campaign resolves it here first, so another tenant's campaign is exactly
as missing as one that never existed, and the use cases below keep working on storage ids.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.tenancy import namespaced_id
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["campaign_id_ever", "campaign_in_tenant", "dispatch_in_tenant"]

_CAMPAIGN = "MATCH (c:Campaign {tenantId: $tenantId, ref: $ref}) RETURN c.id AS id"
_DISPATCH = "tenancy_dispatch"  # cypher/tenants/tenancy_dispatch.cypher


def campaign_in_tenant(graph: Graph, *, tenant_id: str, ref: str) -> str:
    """The storage id of the tenant's campaign ``ref``; NOT_FOUND when the tenant has none."""

    def tx_fn(tx: Tx) -> str | None:
        record = tx.run(_CAMPAIGN, tenantId=tenant_id, ref=ref).single()
        return None if record is None else str(record["id"])

    storage_id = graph.read(tx_fn)
    if storage_id is None:
        raise NotFound(f"campaign '{ref}' not found")
    return storage_id


# A deleted campaign's trail stays readable by its ref: its storage id is the live campaign's, else the
# plain ref unless another tenant holds or held that id (then it was namespaced, domain/tenancy.py).
_EVER = "tenancy_ever"  # cypher/tenants/tenancy_ever.cypher


def campaign_id_ever(graph: Graph, *, tenant_id: str, ref: str) -> str:
    """The storage id the tenant's campaign ``ref`` has or had (audit entries outlive campaigns)."""

    def tx_fn(tx: Tx) -> str:
        params: dict[str, Any] = {
            "tenantId": tenant_id,
            "ref": ref,
            "namespaced": namespaced_id(tenant_id, ref),
        }
        record = tx.run(statement(_EVER), **params).single()
        assert record is not None
        return str(record["id"])

    return graph.read(tx_fn)


def dispatch_in_tenant(graph: Graph, *, tenant_id: str, dispatch_id: str) -> None:
    """NOT_FOUND unless the dispatch belongs to one of the tenant's campaigns."""

    def tx_fn(tx: Tx) -> bool:
        return tx.run(statement(_DISPATCH), tenantId=tenant_id, dispatchId=dispatch_id).single() is not None

    if not graph.read(tx_fn):
        raise NotFound(f"dispatch '{dispatch_id}' not found")
