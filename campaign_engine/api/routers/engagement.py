"""``campaigns.*`` user and discovery procedures. All of them share the per-profile rate limit
(``user`` access makes a procedure rate-limited in ``api/trpc.py``). The two hottest are coroutines:
their work is batched (``EngagementService``), so they wait on the event loop instead of in a thread."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import AppCampaignRef
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.engagement import enrollment
from campaign_engine.campaigns.engagement.models import EventKind, EventResult, MyCampaigns
from campaign_engine.campaigns.engagement.own_tests import Viewer
from campaign_engine.graph.rules.policy import Policy

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "getMyCampaigns": "user",
    "recordEvent": "user",
    "discover": "user",
    "enroll": "user",
    "leave": "user",
}
router = ProcedureRouter("campaigns", ACCESS)


class EventInput(AppCampaignRef):
    event: EventKind
    action_id: Annotated[str | None, Field(min_length=1, max_length=100)] = None
    test_id: Annotated[str | None, Field(min_length=1, max_length=64)] = None


def _policy(ctx: Context) -> Policy:
    return Policy.of(ctx.services.settings, ctx.services.clock())


@router.query("getMyCampaigns")
async def get_my_campaigns(ctx: Context) -> MyCampaigns:
    """The caller's live in-app campaigns with their own state (their own pending tests first, for a
    platform admin, or a tenant author or publisher in the test campaign's tenant)."""
    caller = ctx.user()
    viewer = Viewer(is_admin=caller.is_admin, tenant_id=caller.tenant_id, roles=caller.roles)
    return await ctx.services.engagement.my_campaigns_async(profile_id=caller.profile_id, viewer=viewer)


@router.mutation("recordEvent")
async def record_event(ctx: Context, data: EventInput) -> EventResult:
    """Record shown/clicked/dismissed, or acknowledge a self-test with testId."""
    return await ctx.services.engagement.record_event_async(
        profile_id=ctx.user().profile_id, campaign_id=data.campaign_id, event=data.event,
        action_id=data.action_id, test_id=data.test_id,
    )  # fmt: skip


@router.query("discover")
def discover(ctx: Context) -> enrollment.Discovered:
    """Live discoverable campaigns the caller may join and has not joined."""
    return enrollment.discover(ctx.services.graph, profile_id=ctx.user().profile_id, policy=_policy(ctx))


@router.mutation("enroll")
def enroll(ctx: Context, data: AppCampaignRef) -> enrollment.Enrolled:
    """Join a discoverable campaign (idempotent)."""
    caller = ctx.user()
    return enrollment.enroll(
        ctx.services.graph, profile_id=caller.profile_id, campaign_id=data.campaign_id, policy=_policy(ctx)
    )


@router.mutation("leave")
def leave(ctx: Context, data: AppCampaignRef) -> enrollment.Left:
    """Leave a campaign the caller joined by themselves."""
    caller = ctx.user()
    return enrollment.leave(ctx.services.graph, profile_id=caller.profile_id, campaign_id=data.campaign_id)
