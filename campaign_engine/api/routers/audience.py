"""``campaigns.*`` admin procedures for audiences, stats and self-tests (exempt from the rate limit)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.campaigns import review_publish_of
from campaign_engine.api.routers.common import CampaignRef
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns import self_test
from campaign_engine.campaigns.audience import members as audience
from campaign_engine.campaigns.audience import stats
from campaign_engine.campaigns.sending.approval import policy_of
from campaign_engine.domain.audience import AudienceSource
from campaign_engine.graph.rules.policy import Policy

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "previewAudience": "author",
    "addAudience": "author",
    "removeAudience": "author",
    "getAudience": "viewer",
    "getStats": "viewer",
    "sendTestToMe": "author",
}
router = ProcedureRouter("campaigns", ACCESS)


class SourceInput(CampaignRef):
    source: AudienceSource


class AudiencePageInput(CampaignRef):
    cursor: Annotated[str, Field(max_length=128)] | None = None
    limit: Annotated[int, Field(ge=1, le=500)] = 100


def _policy(ctx: Context) -> Policy:
    return Policy.of(ctx.services.settings, ctx.services.clock())


# A mutation only in transport: a source of 10,000 DIDs does not fit in a GET query string.
@router.mutation("previewAudience")
def preview_audience(ctx: Context, data: SourceInput) -> audience.AudienceCount:
    """Count the distinct eligible profiles a source matches; writes nothing (POST for large sources)."""
    return audience.preview_audience(
        ctx.services.graph,
        campaign_id=ctx.campaign(data.campaign_id),
        source=data.source,
        policy=_policy(ctx),
    )


@router.mutation("addAudience")
def add_audience(ctx: Context, data: SourceInput) -> audience.AudienceCount:
    """Add the eligible profiles a source matches; `added` counts new memberships only. Under an
    approval policy, new members of a live campaign see its card once a second publisher approves."""
    campaign_id, approval = ctx.campaign(data.campaign_id), policy_of(ctx.services.graph, ctx.tenant_id)
    added = audience.add_audience(
        ctx.services.graph, campaign_id=campaign_id, source=data.source,
        policy=_policy(ctx), audit=ctx.audit(), shown=approval is not None,
    )  # fmt: skip
    review_publish_of(ctx, campaign_id, approval)
    return added


@router.mutation("removeAudience")
def remove_audience(ctx: Context, data: SourceInput) -> audience.Removed:
    """Remove the memberships of the profiles a source matches."""
    return audience.remove_audience(
        ctx.services.graph, campaign_id=ctx.campaign(data.campaign_id), source=data.source,
        policy=_policy(ctx), audit=ctx.audit(),
    )  # fmt: skip


@router.query("getAudience")
def get_audience(ctx: Context, data: AudiencePageInput) -> audience.AudiencePage:
    """Eligible members ordered by profileId, keyset-paged."""
    return audience.get_audience(
        ctx.services.graph, campaign_id=ctx.campaign(data.campaign_id), cursor=data.cursor, limit=data.limit,
        policy=_policy(ctx),
    )  # fmt: skip


@router.query("getStats")
def get_stats(ctx: Context, data: CampaignRef) -> stats.CampaignStats:
    """Distinct-profile counts: audience, enrolled, shown, clicked, dismissed, notified, emailed."""
    return stats.get_stats(
        ctx.services.graph, campaign_id=ctx.campaign(data.campaign_id), policy=_policy(ctx)
    )


@router.mutation("sendTestToMe")
def send_test_to_me(ctx: Context, data: CampaignRef) -> self_test.SelfTestResult:
    """Send the campaign to the calling admin only, on every testable channel."""
    testers = ctx.services.self_test_testers
    return self_test.send_test_to_me(
        ctx.services.graph, admin_id=ctx.admin().profile_id, campaign_id=ctx.campaign(data.campaign_id),
        now=ctx.services.clock(), testers=testers, audit=ctx.audit(),
    )  # fmt: skip
