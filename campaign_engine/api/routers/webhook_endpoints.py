"""``webhookEndpoints.*``: event webhooks, the tenant's own subscriptions to its events.

Endpoints belong to the tenant of the credential that made them; another tenant's is NOT_FOUND. URLs are
checked against the same egress rules as every webhook when set, not first at the relay's POST.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.tenants import webhook_endpoints as endpoints
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.content import Text
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.profile import WebhookUrl
from campaign_engine.domain.webhook_events import EVENT_TYPES, WILDCARD, EventType
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.wiring import egress_rules

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs; each
# handler also finds the endpoint in the caller's tenant.
ACCESS: dict[str, Access] = {
    "create": "admin",
    "list": "admin",
    "update": "admin",
    "delete": "admin",
    "rotateSecret": "admin",
    "deliveries": "admin",
    "replay": "admin",
}
router = ProcedureRouter("webhookEndpoints", ACCESS)

DEFAULT_OVERLAP_SECONDS = 86_400  # the old secret signs beside the new one for a day
Subscribed = list[EventType | Annotated[str, Field(pattern=r"^\*$")]]
_EVENTS_DOC = f"event types ({', '.join(EVENT_TYPES)}) or {WILDCARD!r} for all"


class CreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: WebhookUrl
    events: Annotated[Subscribed, Field(min_length=1, max_length=len(EVENT_TYPES), description=_EVENTS_DOC)]
    description: Annotated[Text | None, Field(max_length=500)] = None


class EndpointRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=r"^wep_[0-9a-f]{24}$")]


class UpdateInput(EndpointRef):
    url: WebhookUrl | None = None
    events: Annotated[Subscribed | None, Field(min_length=1, max_length=len(EVENT_TYPES))] = None
    description: Annotated[Text | None, Field(max_length=500)] = None
    enabled: bool | None = Field(None, description="false pauses it; true resumes one disabled by failures")


class DeliveriesInput(EndpointRef):
    cursor: Annotated[str | None, Field(max_length=100)] = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50


class ReplayInput(EndpointRef):
    since: UtcDatetime


class Rotated(BaseModel):
    secret: str = Field(
        description="the new whsec_ secret, shown only here; the old one signs beside it for 24 h"
    )


class Replayed(BaseModel):
    queued: int = Field(description="events queued again for the endpoint, oldest first")


def _checked(ctx: Context, url: str) -> str:
    try:
        egress_rules(ctx.services.settings).check(url)
    except EgressBlocked as exc:
        raise BadRequest(f"url: {exc.reason}", issues=[{"path": ["url"], "message": exc.reason}]) from None
    return url


def _owned(ctx: Context, endpoint_id: str) -> str:
    """The endpoint's tenant, if the caller may manage it; else NOT_FOUND (existence never disclosed)."""
    tenant = endpoints.endpoint_tenant(ctx.services.graph, endpoint_id)
    if tenant is None or (tenant != ctx.tenant_id and not ctx.admin().is_admin):
        raise NotFound(f"webhook endpoint '{endpoint_id}' not found")
    ctx.require("admin", tenant_id=tenant)
    return tenant


@router.mutation("create")
def create(ctx: Context, data: CreateInput) -> endpoints.EndpointCreated:
    """A new endpoint in the caller's tenant; the answer is the only time its ``whsec_`` secret is shown."""
    ctx.require("admin")
    return endpoints.create_endpoint(
        ctx.services.graph, ctx.services.secret_box, tenant_id=ctx.tenant_id, url=_checked(ctx, data.url),
        events=sorted(set(data.events)), description=data.description, now=ctx.services.clock(),
        audit=ctx.audit(),
    )  # fmt: skip


@router.query("list")
def list_(ctx: Context) -> endpoints.EndpointList:
    """The tenant's endpoints, oldest first: state, failures, why one is disabled, events waiting."""
    ctx.require("admin")
    return endpoints.list_endpoints(ctx.services.graph, tenant_id=ctx.tenant_id)


@router.mutation("update")
def update(ctx: Context, data: UpdateInput) -> endpoints.EndpointPublic:
    """Change the named fields; ``enabled: true`` resumes an endpoint disabled by failures."""
    tenant = _owned(ctx, data.id)
    changes = data.model_dump(exclude={"id"}, exclude_unset=True)
    if changes.get("url") is not None:
        _checked(ctx, changes["url"])
    if "events" in changes and changes["events"] is not None:
        changes["events"] = sorted(set(changes["events"]))
    if any(changes.get(k, "") is None for k in ("url", "events", "enabled")):
        raise BadRequest("url, events and enabled cannot be null")
    return endpoints.update_endpoint(
        ctx.services.graph, endpoint_id=data.id, changes=changes, now=ctx.services.clock(),
        audit=ctx.audit(tenant_id=tenant),
    )  # fmt: skip


@router.mutation("delete")
def delete(ctx: Context, data: EndpointRef) -> Ok:
    """Delete the endpoint with its queued events and its delivery history."""
    tenant = _owned(ctx, data.id)
    endpoints.delete_endpoint(ctx.services.graph, endpoint_id=data.id, audit=ctx.audit(tenant_id=tenant))
    return Ok()


@router.mutation("rotateSecret")
def rotate_secret(ctx: Context, data: EndpointRef) -> Rotated:
    """A new secret; for 24 h every event carries a signature by each, so the receiver can switch."""
    tenant = _owned(ctx, data.id)
    secret = endpoints.rotate_endpoint_secret(
        ctx.services.graph, ctx.services.secret_box, endpoint_id=data.id,
        overlap_seconds=DEFAULT_OVERLAP_SECONDS, now=ctx.services.clock(), audit=ctx.audit(tenant_id=tenant),
    )  # fmt: skip
    return Rotated(secret=secret)


@router.query("deliveries")
def deliveries(ctx: Context, data: DeliveriesInput) -> endpoints.DeliveryPage:
    """Every attempt, newest first: event id and type, time, status code, latency, next retry."""
    _owned(ctx, data.id)
    return endpoints.list_attempts(
        ctx.services.graph, endpoint_id=data.id, cursor=data.cursor, limit=data.limit
    )


@router.mutation("replay")
def replay(ctx: Context, data: ReplayInput) -> Replayed:
    """Send again, in order and with their own ids, the endpoint's events since ``since``."""
    tenant = _owned(ctx, data.id)
    queued = endpoints.replay_endpoint(
        ctx.services.graph, endpoint_id=data.id, since=data.since, audit=ctx.audit(tenant_id=tenant)
    )
    return Replayed(queued=queued)
