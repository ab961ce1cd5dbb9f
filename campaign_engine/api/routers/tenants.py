"""``tenants.*`` (issue 21 item 1): tenant records, editable without a redeploy.

Platform admins create, edit and list tenants; a tenant's own admins may also ``get`` theirs (issue 21
item 1): its table row admits admins of the caller's tenant, and the handler checks the tenant it names,
as ``access.*`` does. After a committed edit this process forgets
its cached records, so its next email, preview or capped statement reads the edit; other processes read
it within the directory's TTL (5 s).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.domain.tenant import TenantCreate, TenantPatch, TenantPublic
from campaign_engine.graph import tenants
from campaign_engine.graph.tenant_directory import tenants_of

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "create": "platform",
    "update": "platform",
    "get": "admin",  # of the tenant it names, checked in the handler
    "list": "platform",
}
router = ProcedureRouter("tenants", ACCESS)


class TenantRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tenant_id: Annotated[str, Field(alias="tenantId", min_length=1, max_length=64)]


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cursor: Annotated[str, Field(max_length=64)] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50


@router.mutation("create")
def create(ctx: Context, data: TenantCreate) -> TenantPublic:
    """A new tenant record; CONFLICT when the tenantId exists."""
    graph, now = ctx.services.graph, ctx.services.clock()
    created = tenants.create_tenant(graph, data=data, now=now, audit=ctx.audit())
    tenants_of(graph, ctx.services.settings).invalidate()
    return created


@router.mutation("update")
def update(ctx: Context, data: TenantPatch) -> TenantPublic:
    """Partial patch: omitted fields are kept, null clears an optional one; NOT_FOUND when missing."""
    graph, now = ctx.services.graph, ctx.services.clock()
    updated = tenants.update_tenant(graph, patch=data, now=now, audit=ctx.audit())
    tenants_of(graph, ctx.services.settings).invalidate()
    return updated


@router.query("get")
def get(ctx: Context, data: TenantRef) -> TenantPublic:
    """One tenant record, for its own admins and platform admins; NOT_FOUND when missing."""
    ctx.require("admin", tenant_id=data.tenant_id)
    return tenants.get_tenant(ctx.services.graph, data.tenant_id)


@router.query("list")
def list_(ctx: Context, data: ListInput) -> tenants.TenantPage:
    """Tenant records ordered by tenantId, keyset-paged."""
    return tenants.list_tenants(ctx.services.graph, cursor=data.cursor, limit=data.limit)
