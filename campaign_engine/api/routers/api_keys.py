"""``apiKeys.*``: machine credentials of one tenant and one role (``campaigns/tenants/api_keys.py``), managed
by the tenant's admins. A key is sent as ``Authorization: Bearer cek_...`` and shown only at creation."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access, Role
from campaign_engine.api.context import Context
from campaign_engine.api.routers.access import TenantRef
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.tenants import api_keys
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.content import Text
from campaign_engine.domain.errors import NotFound

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs; each
# handler also requires the role in the key's tenant.
ACCESS: dict[str, Access] = {
    "create": "admin",
    "list": "admin",
    "revoke": "admin",
}
router = ProcedureRouter("apiKeys", ACCESS)


class CreateInput(TenantRef):
    name: Annotated[Text, Field(min_length=1, max_length=200)]
    role: Role
    expires_at: UtcDatetime | None = None


class KeyRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]


@router.mutation("create")
def create(ctx: Context, data: CreateInput) -> api_keys.ApiKeyCreated:
    """A new key for the tenant with one role; the answer is the only time the key is shown."""
    ctx.require("admin", tenant_id=data.tenant_id)
    return api_keys.create_key(
        ctx.services.graph, tenant_id=data.tenant_id, name=data.name, role=data.role,
        expires_at=data.expires_at, now=ctx.services.clock(), audit=ctx.audit(tenant_id=data.tenant_id),
    )  # fmt: skip


@router.query("list")
def list_(ctx: Context, data: TenantRef) -> api_keys.ApiKeyList:
    """The tenant's keys, oldest first, with last use and revocation; never a key or its hash."""
    ctx.require("admin", tenant_id=data.tenant_id)
    return api_keys.list_keys(ctx.services.graph, tenant_id=data.tenant_id)


@router.mutation("revoke")
def revoke(ctx: Context, data: KeyRef) -> api_keys.ApiKeyPublic:
    """Refused by every API process from this call's commit on; a key of another tenant is NOT_FOUND."""
    tenant = api_keys.key_tenant(ctx.services.graph, data.id)
    if tenant is None or (tenant != ctx.tenant_id and not ctx.admin().is_admin):
        raise NotFound(f"api key '{data.id}' not found")
    ctx.require("admin", tenant_id=tenant)
    return api_keys.revoke_key(
        ctx.services.graph, key_id=data.id, now=ctx.services.clock(), audit=ctx.audit(tenant_id=tenant)
    )
