"""``access.*``: who holds which role in a tenant. Tenant admins manage their own tenant's
grants; platform admins any tenant's. Grants take effect on the next call (``api/context.py``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from campaign_engine.api.access import Access, Role
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.tenants import access_grants
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.patterns import ProfileIdStr
from campaign_engine.domain.tenancy import TenantId

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs; each
# handler also requires the role in the tenant its input names.
ACCESS: dict[str, Access] = {
    "grant": "admin",
    "revoke": "admin",
    "list": "admin",
    "me": "user",
}
router = ProcedureRouter("access", ACCESS)


class TenantRef(CamelModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: TenantId


class Me(CamelModel):
    """Who the caller is here: what the console shows and what it lets them do."""

    profile_id: str
    tenant_id: Annotated[str, Field(description="the tenant this credential acts in")]
    role: Role | None = Field(description="the caller's highest role in that tenant; platform admins: admin")
    platform: bool = Field(description="a platform admin: every role in every tenant")
    tenants: list[str] = Field(
        default_factory=list,
        description="the tenants the caller holds a granted role in, which the console may act in;"
        " a platform admin acts in any (tenants.list)",
    )


class GrantInput(TenantRef):
    subject: Annotated[ProfileIdStr, Field(description="a JWT `sub`: the profileId the role is bound to")]
    role: Role


@router.mutation("grant")
def grant(ctx: Context, data: GrantInput) -> access_grants.Grant:
    """Bind ``subject`` to ``role`` in the tenant; granting a held role changes nothing."""
    ctx.require("admin", tenant_id=data.tenant_id)
    return access_grants.grant_role(
        ctx.services.graph, tenant_id=data.tenant_id, subject=data.subject, role=data.role,
        now=ctx.services.clock(), audit=ctx.audit(tenant_id=data.tenant_id),
    )  # fmt: skip


@router.mutation("revoke")
def revoke(ctx: Context, data: GrantInput) -> Ok:
    """Remove one grant; NOT_FOUND when the subject does not hold it. Effective on the next call."""
    ctx.require("admin", tenant_id=data.tenant_id)
    access_grants.revoke_role(
        ctx.services.graph,
        tenant_id=data.tenant_id,
        subject=data.subject,
        role=data.role,
        audit=ctx.audit(tenant_id=data.tenant_id),
    )
    return Ok()


@router.query("me")
def me(ctx: Context) -> Me:
    """The signed-in caller, the tenant their credential acts in and their role there."""
    caller = ctx.user()
    role: Role | None = "admin" if caller.is_admin else ctx.role_in(ctx.tenant_id)
    # An API key or a token naming a tenant acts there alone; a person's token may act where granted.
    held = (
        []
        if caller.is_admin or caller.tenant_id
        else access_grants.tenants_of(ctx.services.graph, subject=caller.profile_id)
    )
    return Me(
        profile_id=caller.profile_id,
        tenant_id=ctx.tenant_id,
        role=role,
        platform=caller.is_admin,
        tenants=held,
    )


@router.query("list")
def list_(ctx: Context, data: TenantRef) -> access_grants.GrantList:
    """The tenant's grants by subject (roles a JWT carries as claims are not listed: the identity
    provider holds those)."""
    ctx.require("admin", tenant_id=data.tenant_id)
    return access_grants.list_grants(ctx.services.graph, tenant_id=data.tenant_id)
