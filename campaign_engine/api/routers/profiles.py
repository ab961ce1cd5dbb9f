"""``profiles.*`` admin procedures: the recipients of campaigns."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access, Role
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.profiles import receiver_secrets
from campaign_engine.campaigns.profiles import records as profiles
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, Forbidden, NotFound
from campaign_engine.domain.profile import ProfileOut, ProfileUpsert, UpsertResult, WebhookSecret
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.wiring import egress_rules

__all__ = ["ACCESS", "ROUTE_ROLE", "UPSERT_ROLE", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
# The writers of a tenant's view of a person, and of a receiver in it (docs/people.md).
UPSERT_ROLE: Role = "author"
ROUTE_ROLE: Role = "admin"
ACCESS: dict[str, Access] = {
    "upsert": UPSERT_ROLE,
    "get": "viewer",
    "delete": "admin",
    "rotateWebhookSecret": ROUTE_ROLE,
}
router = ProcedureRouter("profiles", ACCESS)


class ProfileRef(CamelModel):
    model_config = ConfigDict(extra="forbid")

    profile_id: Annotated[str, Field(min_length=1, max_length=128)]


class Deleted(BaseModel):
    deleted: bool


DEFAULT_OVERLAP_SECONDS = 86_400  # a day for the receiver to deploy the new secret
MAX_OVERLAP_SECONDS = 30 * 86_400


class RotateWebhookSecret(CamelModel):
    model_config = ConfigDict(extra="forbid")

    profile_id: Annotated[str, Field(min_length=1, max_length=128)]
    overlap_seconds: Annotated[int, Field(ge=0, le=MAX_OVERLAP_SECONDS)] = DEFAULT_OVERLAP_SECONDS
    """How long the replaced secret keeps signing beside the new one (0: it stops at once)."""
    secret: Annotated[WebhookSecret | None, Field(repr=False)] = None
    """The new secret; omitted, the engine generates one and answers it once."""


class Rotated(CamelModel):
    profile_id: str
    secret: str | None = Field(description="the generated secret, shown only here; null when supplied")


@router.mutation("upsert")
def upsert(ctx: Context, data: ProfileUpsert) -> UpsertResult:
    """Create or update up to 1000 profiles atomically; they join the caller's tenant (``tenants``:
    platform credentials only).

    A row changes only the fields it names: an omitted field keeps its value, an explicit null clears it."""
    try:
        # Only the owner writes a route: a row naming a receiver or its secret, even to clear it, needs
        # the role that rotates the secret (campaigns/profiles/records.py refuses the batch otherwise).
        may_route = ctx.require(ROUTE_ROLE) is not None
    except Forbidden:
        may_route = False
    rules = egress_rules(ctx.services.settings)
    for index, row in enumerate(data.profiles):
        if row.notifications_webhook:  # refused here, not first found out at every POST to it
            try:
                rules.check(row.notifications_webhook)
            except EgressBlocked as exc:
                raise BadRequest(f"profiles.{index}.notificationsWebhook: {exc.reason}") from None
    platform = ctx.admin().is_admin
    return profiles.upsert_profiles(
        ctx.services.graph,
        data,
        tenant_id=ctx.tenant_id,
        platform=platform,
        audit=ctx.audit(),
        secrets=ctx.services.secret_box,
        adult_age=ctx.services.settings.campaign_adult_age,
        clock=ctx.services.clock,
        may_route=may_route,
    )


@router.query("get")
def get(ctx: Context, data: ProfileRef) -> ProfileOut:
    """One profile with its contact methods, tags and connections; a tenant's credential reads only
    its members, and only their connections within it."""
    return profiles.get_profile(ctx.services.graph, data.profile_id, tenant_id=ctx.scope())


@router.mutation("delete")
def delete(ctx: Context, data: ProfileRef) -> Deleted:
    """Delete a profile with its memberships, engagement states and pending tests; a tenant's credential
    takes it out of the tenant (the person goes once no tenant holds them)."""
    if not profiles.delete_profile(
        ctx.services.graph, data.profile_id, tenant_id=ctx.scope(), audit=ctx.audit()
    ):
        raise NotFound(f"profile '{data.profile_id}' not found")
    return Deleted(deleted=True)


@router.mutation("rotateWebhookSecret")
def rotate_webhook_secret(ctx: Context, data: RotateWebhookSecret) -> Rotated:
    """A new secret for the profile's own receiver; the old one keeps signing for ``overlapSeconds``
    (each POST then carries both signatures), so the receiver can switch without missing a message."""
    generated = receiver_secrets.rotate_webhook_secret(
        ctx.services.graph,
        ctx.services.secret_box,
        profile_id=data.profile_id,
        overlap_seconds=data.overlap_seconds,
        now=int(ctx.services.clock().timestamp()),
        secret=data.secret,
        tenant_id=ctx.scope(),
        audit=ctx.audit(),
    )
    return Rotated(profile_id=data.profile_id, secret=generated)
