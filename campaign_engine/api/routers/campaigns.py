"""``campaigns.*`` admin procedures for definitions and lifecycle."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import CampaignRef, Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.audience import segments
from campaign_engine.campaigns.audience.explain import RecipientExplanation, explain_recipient
from campaign_engine.campaigns.audience.segments import SegmentInput
from campaign_engine.campaigns.sending.approval import ApprovalPolicy, policy_of
from campaign_engine.campaigns.sending.approval_people import editors_of
from campaign_engine.campaigns.sending.approval_publish import review_publish
from campaign_engine.domain.campaign import (
    CampaignCreate,
    CampaignDefinition,
    CampaignId,
    CampaignPatch,
    CampaignPublic,
    CampaignStatus,
)
from campaign_engine.domain.segment import SegmentPreview
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenant_lane import require_critical_allowed

__all__ = ["ACCESS", "review_publish_of", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "create": "author",
    "get": "viewer",
    "list": "viewer",
    "update": "author",
    "setStatus": "publisher",
    "delete": "publisher",
    "explainRecipient": "viewer",
    "duplicate": "author",
    "previewSegment": "author",
}
router = ProcedureRouter("campaigns", ACCESS)


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: CampaignStatus | None = None
    cursor: Annotated[str, Field(max_length=64)] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50


class RecipientRef(CampaignRef):
    profile_id: Annotated[str, Field(min_length=1, max_length=128)]


class StatusInput(CampaignRef):
    status: CampaignStatus


class DuplicateInput(CampaignRef):
    id: CampaignId = Field(description="the new campaign's id")
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=None, description="the new campaign's name (default: the original's)"
    )


@router.mutation("create")
def create(ctx: Context, data: CampaignCreate) -> CampaignPublic:
    """Create a campaign in draft; its tenant comes from the request."""
    _check_priority(ctx, data.priority)
    return definitions.create_campaign(
        ctx.services.graph, data=data, tenant_id=ctx.tenant_id, now=ctx.services.clock(), audit=ctx.audit(),
        adult_age=ctx.services.settings.campaign_adult_age,
    )  # fmt: skip


@router.mutation("duplicate")
def duplicate(ctx: Context, data: DuplicateInput) -> CampaignPublic:
    """Start from an earlier campaign: its definition (translations included) as a new draft, never its
    audience, state or dispatches. The copy's editors are its copier and the source's editors since its
    last approved send: none of them may approve the copy's send."""
    source_id = ctx.campaign(data.campaign_id)
    source = definitions.get_campaign(ctx.services.graph, source_id)
    wire = CampaignDefinition.model_validate(source.model_dump(by_alias=True, include=_DEFINITION)).wire()
    copy = CampaignCreate.model_validate({**wire, "id": data.id, "name": data.name or source.name})
    _check_priority(ctx, copy.priority)
    return definitions.create_campaign(
        ctx.services.graph, data=copy, tenant_id=ctx.tenant_id, now=ctx.services.clock(), audit=ctx.audit(),
        adult_age=ctx.services.settings.campaign_adult_age, editors=editors_of(ctx.services.graph, source_id),
    )  # fmt: skip


_DEFINITION = set(CampaignDefinition.model_fields)


def _check_priority(ctx: Context, priority: str | None) -> None:
    """A critical campaign skips quiet hours and frequency caps: only a publisher may make one (FORBIDDEN
    naming the role), and only where the tenant allows it (``tenants.update {allowCritical}``)."""
    if priority == "critical":
        ctx.require("publisher")
        ctx.services.graph.read(require_critical_allowed, ctx.tenant_id)


@router.query("get")
def get(ctx: Context, data: CampaignRef) -> CampaignPublic:
    """One campaign with its definition and lifecycle fields."""
    return definitions.get_campaign(ctx.services.graph, ctx.campaign(data.campaign_id))


@router.query("list")
def list_(ctx: Context, data: ListInput) -> definitions.CampaignPage:
    """Campaigns ordered by id, keyset-paged."""
    return definitions.list_campaigns(
        ctx.services.graph, tenant_id=ctx.tenant_id, status=data.status, cursor=data.cursor, limit=data.limit
    )


def review_publish_of(ctx: Context, campaign_id: str, policy: ApprovalPolicy | None) -> None:
    """After a write under an approval policy: show the change at once or hold it for a second
    publisher (``sending/approval_publish.py``), in its own audit entry of the same call."""
    if policy is not None:
        review_publish(
            ctx.services.graph, campaign_id=campaign_id, policy=policy,
            settings=ctx.services.dispatch_settings, now=ctx.services.clock(), audit=ctx.audit(),
        )  # fmt: skip


@router.mutation("update")
def update(ctx: Context, data: CampaignPatch) -> CampaignPublic:
    """Partial patch; null clears optional fields; expectedUpdatedAt guards against lost updates.
    Under an approval policy a live campaign's members keep seeing its approved revision until a
    second publisher approves the change (``listAwaitingApproval``, action ``publish``).

    expectedUpdatedAt is an instant compared to the millisecond: a value echoed through a JavaScript
    ``Date`` matches, an older one is CONFLICT."""
    campaign_id, policy = ctx.campaign(data.campaign_id), policy_of(ctx.services.graph, ctx.tenant_id)
    # Asked when it becomes critical; an edit that keeps it so (a whole definition sent back) is not.
    if (
        data.priority == "critical"
        and definitions.get_campaign(ctx.services.graph, campaign_id).priority != "critical"
    ):
        _check_priority(ctx, data.priority)
    updated = definitions.update_campaign(
        ctx.services.graph,
        patch=data.model_copy(update={"campaign_id": campaign_id}),
        now=ctx.services.clock(),
        audit=ctx.audit(),
        adult_age=ctx.services.settings.campaign_adult_age,
        shown=policy is not None,
    )
    review_publish_of(ctx, campaign_id, policy)
    return updated


@router.mutation("setStatus")
def set_status(ctx: Context, data: StatusInput) -> CampaignPublic:
    """Move a campaign through draft -> live <-> paused -> archived. Under an approval policy, going
    live with an in-app card for the policy's threshold or more members shows it only once a second
    publisher approves (``listAwaitingApproval``, action ``publish``)."""
    campaign_id, policy = ctx.campaign(data.campaign_id), policy_of(ctx.services.graph, ctx.tenant_id)
    changed = definitions.set_status(
        ctx.services.graph,
        campaign_id=campaign_id,
        status=data.status,
        now=ctx.services.clock(),
        audit=ctx.audit(),
        shown=policy is not None,
    )
    review_publish_of(ctx, campaign_id, policy)
    return changed


@router.mutation("delete")
def delete(ctx: Context, data: CampaignRef) -> Ok:
    """Delete a campaign with its audience, states, tests and dispatch records."""
    deletion.delete_campaign(
        ctx.services.graph, campaign_id=ctx.campaign(data.campaign_id), audit=ctx.audit()
    )
    return Ok()


# A mutation only in transport, as previewAudience: a rule tree does not belong in a GET query string.
@router.mutation("previewSegment")
def preview_segment(ctx: Context, data: SegmentInput) -> SegmentPreview:
    """Count the profiles of the caller's tenant a live segment matches now, before saving it; writes
    nothing. BAD_REQUEST names the path of a campaign the rule names that is not the tenant's."""
    return segments.preview_segment(
        ctx.services.graph, segment=data.segment, tenant_id=ctx.tenant_id, now=ctx.services.clock(),
        adult_age=ctx.services.settings.campaign_adult_age,
    )  # fmt: skip


@router.query("explainRecipient")
def explain(ctx: Context, data: RecipientRef) -> RecipientExplanation:
    """Whether the profile would receive the campaign now, per channel, every rule with its verdict,
    and what already happened to it; NOT_FOUND for an unknown campaign or profile."""
    return explain_recipient(
        ctx.services.graph,
        campaign_id=ctx.campaign(data.campaign_id),
        profile_id=data.profile_id,
        now=ctx.services.clock(),
        adult_age=ctx.services.settings.campaign_adult_age,
        caps=tenants_of(ctx.services.graph, ctx.services.settings).frequency_caps(),
    )
