"""``tenants.*``: tenant records, editable without a redeploy.

Platform admins create, edit and list tenants; a tenant's own admins may also ``get`` theirs: its
table row admits admins of the caller's tenant, and the handler checks the tenant it names, as
``access.*`` does; ``updateLayout`` and ``previewLayout`` let those admins edit and
preview the tenant's email layout, and nothing else of its record. After a committed edit this process forgets
its cached records, so its next email, preview or capped statement reads the edit; other processes read
it within the directory's TTL (5 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.delivery.email.render import branding_for, render_email
from campaign_engine.delivery.email.sender import sender_for
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.tenant import (
    LayoutPatch,
    LayoutPreviewInput,
    TenantCreate,
    TenantPatch,
    TenantPublic,
)
from campaign_engine.graph import tenants
from campaign_engine.graph.tenant_directory import branding_entry, tenants_of
from campaign_engine.unsubscribe.tokens import unsubscribe_url

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "create": "platform",
    "update": "platform",
    "get": "admin",  # of the tenant it names, checked in the handler
    "list": "platform",
    "updateLayout": "admin",  # of the tenant it names, checked in the handler
    "previewLayout": "admin",  # of the tenant it names, checked in the handler
}
router = ProcedureRouter("tenants", ACCESS)


class TenantRef(CamelModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: Annotated[str, Field(min_length=1, max_length=64)]


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


class LayoutPreview(BaseModel):
    subject: str
    html: str
    text: str
    sender: str = Field(description="the From header the tenant's email carries with this layout")


@dataclass(frozen=True)
class _SampleCopy:
    subject: str = "A sample announcement"
    title: str = "This is how your announcements look"
    body: str = "The campaign's own text goes here.\nEvery line of it is shown as written."
    ctaLabel: str = "Open the announcement"  # the EmailCopyLike protocol reads wire names
    heroImageUrl: str | None = None


_PREVIEW_TOKEN = "preview"  # noqa: S105 - not a signed token: the unsubscribe page says the link does not work


@router.mutation("updateLayout")
def update_layout(ctx: Context, data: LayoutPatch) -> TenantPublic:
    """The tenant's email layout, by its own admins or platform admins: omitted fields
    are kept, null clears one; nothing else of the record can change here. NOT_FOUND when missing."""
    ctx.require("admin", tenant_id=data.tenant_id)
    graph, now = ctx.services.graph, ctx.services.clock()
    updated = tenants.update_layout(graph, patch=data, now=now, audit=ctx.audit())
    tenants_of(graph, ctx.services.settings).invalidate()
    return updated


@router.query("previewLayout")
def preview_layout(ctx: Context, data: LayoutPreviewInput) -> LayoutPreview:
    """A sample email in the stored layout, or with ``layout`` (a proposed patch) over it, rendered by the
    renderer and sender rule the worker uses, so the console shows it before saving. Writes nothing."""
    ctx.require("admin", tenant_id=data.tenant_id)
    settings = ctx.services.settings
    proposed = tenants.layout_applied(tenants.get_tenant(ctx.services.graph, data.tenant_id), data.layout)
    entries = {data.tenant_id: branding_entry(proposed, settings.email_from)}
    origin = proposed.app_origin or f"https://{settings.domain_name}"
    rendered = render_email(
        copy=_SampleCopy(),
        branding=branding_for(entries, data.tenant_id, data.tenant_id),
        cta_url=f"{origin}/m/sample",
        unsubscribe_url=unsubscribe_url(settings.domain_name, _PREVIEW_TOKEN),
    )
    # The sender rule reads the other records too: the address a tenant borrows, and whether it owns it.
    records = {**tenants_of(ctx.services.graph, settings).branding(), **entries}
    sender = sender_for(records, data.tenant_id, settings.campaign_default_tenant_id) or settings.email_from
    return LayoutPreview(subject=rendered.subject, html=rendered.html, text=rendered.text, sender=sender)


@router.query("list")
def list_(ctx: Context, data: ListInput) -> tenants.TenantPage:
    """Tenant records ordered by tenantId, keyset-paged."""
    return tenants.list_tenants(ctx.services.graph, cursor=data.cursor, limit=data.limit)
