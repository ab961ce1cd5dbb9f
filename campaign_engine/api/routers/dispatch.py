"""``campaigns.*`` procedures of the reviewed dispatch: preview, confirm, and progress."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import CampaignRef, Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.sending import dispatch as dispatching
from campaign_engine.campaigns.sending import dispatch_reads as reads
from campaign_engine.campaigns.sending.approval import Approved, policy_of
from campaign_engine.campaigns.sending.approval_awaiting import AwaitingList, awaiting
from campaign_engine.campaigns.sending.approve import approve_dispatch
from campaign_engine.campaigns.sending.choose_variant import choose_variant as choose
from campaign_engine.campaigns.sending.deadline import DeliverBy, pin
from campaign_engine.campaigns.sending.resume import resume_dispatch as resume
from campaign_engine.campaigns.sending.schedule import cancel_scheduled, schedule_dispatch
from campaign_engine.campaigns.sending.schedule_input import ScheduleInput
from campaign_engine.campaigns.sending.uncertain_emails import UncertainEmailPage, list_uncertain_emails
from campaign_engine.domain.ab_variants import Experiment, VariantId
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.queue.port import Queue

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "previewDispatch": "author",
    "dispatch": "publisher",
    "approveDispatch": "publisher",
    "listAwaitingApproval": "viewer",
    "scheduleDispatch": "publisher",
    "cancelScheduledDispatch": "publisher",
    "getDispatch": "viewer",
    "resumeDispatch": "publisher",
    "listDispatches": "viewer",
    "listUncertainEmails": "viewer",
    "chooseVariant": "admin",
}
router = ProcedureRouter("campaigns", ACCESS)


class DispatchInput(CampaignRef):
    expected_preview_token: Annotated[str | None, Field(max_length=200)] = None
    accept_fallback: bool = Field(
        default=False,
        description="send although the preview says missing_translation: those readers get the base content",
    )
    experiment: Experiment | None = Field(
        default=None,
        description="an A/B test wave: testShare of the recipients get their variant first; after "
        "decideAfterSeconds the variant with the highest rate of metric wins and the rest get only it",
    )
    deliver_by: DeliverBy | None = Field(
        default=None,
        description="deliver to everyone by then: an RFC 3339 instant, or {localTime, timeZone} or "
        "{localTime, perRecipient: true} (that time in each recipient's zone); the send is paced to meet "
        "it, or refused (PRECONDITION_FAILED) naming the binding constraint and how many would be late",
    )
    accept_late: bool = Field(
        default=False, description="send although deliverBy cannot be met (recorded in the audit trail)"
    )


class PreviewInput(CampaignRef):
    experiment: Experiment | None = Field(
        default=None, description="also report the test wave's recipients per variant"
    )
    deliver_by: DeliverBy | None = Field(
        default=None, description="also judge this deadline: the plan's verdict and who would be late"
    )


class ApproveInput(CampaignRef):
    preview_token: Annotated[str, Field(min_length=1, max_length=200)]
    accept_fallback: bool = Field(
        default=False,
        description="approve a missing_translation preview as it is: readers without their language get "
        "the base content; pinned, so the send needs no acceptFallback of its own",
    )
    deliver_by: DeliverBy | None = Field(
        default=None,
        description="the send's deadline as approved (absent: the one the held send asked): the send "
        "must then ask exactly this one",
    )
    accept_late: bool = Field(default=False, description="lateness accepted, as approved (pinned too)")


class DispatchRef(CamelModel):
    model_config = ConfigDict(extra="forbid")

    dispatch_id: Annotated[str, Field(min_length=1, max_length=100)]


class ChooseVariantInput(DispatchRef):
    variant_id: VariantId


class UncertainEmailsInput(DispatchRef):
    after: Annotated[str | None, Field(max_length=200)] = None
    limit: Annotated[int, Field(ge=1, le=500)] = 100


def _queue(ctx: Context) -> Queue:
    queue = ctx.services.dispatch_queue
    if queue is None:
        raise ServiceUnavailable("the dispatch queue is not configured")
    return queue


@router.query("previewDispatch")
def preview_dispatch(ctx: Context, data: PreviewInput) -> dispatching.DispatchPreview:
    """What a dispatch would send now, with the token that confirms exactly this."""
    return dispatching.preview_dispatch(
        ctx.services.graph,
        campaign_id=ctx.campaign(data.campaign_id),
        now=ctx.services.clock(),
        settings=ctx.services.dispatch_settings,
        experiment=data.experiment,
        deliver_by=data.deliver_by,
    )


@router.mutation("dispatch")
def dispatch(ctx: Context, data: DispatchInput) -> dispatching.DispatchStarted:
    """Confirm a send (stale token: CONFLICT) and start walking the audience in waves."""
    return dispatching.dispatch(
        ctx.services.graph,
        _queue(ctx),
        campaign_id=ctx.campaign(data.campaign_id),
        expected_token=data.expected_preview_token,
        now=ctx.services.clock(),
        settings=ctx.services.dispatch_settings,
        audit=ctx.audit(),
        approval_policy=policy_of(ctx.services.graph, ctx.tenant_id),
        accept_fallback=data.accept_fallback,
        experiment=data.experiment,
        deliver_by=data.deliver_by,
        accept_late=data.accept_late,
    )


@router.mutation("approveDispatch")
def approve(ctx: Context, data: ApproveInput) -> Approved:
    """Approve the send of exactly this preview, as the second publisher a tenant's approval policy
    asks for: not a requester, not anyone who changed the campaign since its last approved send
    (FORBIDDEN naming who may approve), and not who will dispatch it. A change since the preview is
    CONFLICT; a later change voids the approval. An API key approves as the person who minted it."""
    return approve_dispatch(
        ctx.services.graph,
        campaign_id=ctx.campaign(data.campaign_id),
        preview_token=data.preview_token,
        approver=ctx.admin().person,
        now=ctx.services.clock(),
        settings=ctx.services.dispatch_settings,
        audit=ctx.audit(),
        accept_fallback=data.accept_fallback,
        deadline=None if data.deliver_by is None else pin(data.deliver_by, data.accept_late),
    )


@router.query("listAwaitingApproval")
def list_awaiting(ctx: Context) -> AwaitingList:
    """Sends of this tenant its approval policy held back, newest first: each one's action, preview
    token, size, untranslated readers by language, requester, who may approve (``notBy``, ``mayApprove``)
    and, once approved, who approved (changedSince: edited since, approve a new preview)."""
    return awaiting(ctx.services.graph, tenant_id=ctx.tenant_id)


@router.mutation("scheduleDispatch")
def schedule(ctx: Context, data: ScheduleInput) -> list[reads.DispatchPublic]:
    """Confirm a reviewed send for ``sendAt`` (an RFC 3339 instant, or ``{localTime, timeZone}``): one
    Dispatch per channel, ``scheduled``. The sweeper starts it within a sweep period of ``sendAt``;
    past ``sendAt + maxLateSeconds`` it is ``missed``; a change since the preview holds it as
    ``needs_review`` unless ``onChange`` is ``send_current``. A stale token is CONFLICT."""
    return schedule_dispatch(
        ctx.services.graph,
        data=data.model_copy(update={"campaign_id": ctx.campaign(data.campaign_id)}),
        now=ctx.services.clock(),
        settings=ctx.services.dispatch_settings,
        audit=ctx.audit(),
        approval_policy=policy_of(ctx.services.graph, ctx.tenant_id),
    )


@router.mutation("cancelScheduledDispatch")
def cancel_schedule(ctx: Context, data: DispatchRef) -> Ok:
    """Cancel a scheduled dispatch (every channel of it); CONFLICT once it has fired."""
    cancel_scheduled(
        ctx.services.graph,
        dispatch_id=ctx.dispatch(data.dispatch_id),
        now=ctx.services.clock(),
        audit=ctx.audit(),
    )
    return Ok()


@router.query("getDispatch")
def get_dispatch(ctx: Context, data: DispatchRef) -> reads.DispatchPublic:
    """How far a send got, and why it stopped if it did."""
    return reads.get_dispatch(ctx.services.graph, ctx.dispatch(data.dispatch_id))


@router.mutation("resumeDispatch")
def resume_dispatch(ctx: Context, data: DispatchRef) -> reads.DispatchPublic:
    """Resume a failed or paused dispatch from its cursor (anything else, or a newer dispatch:
    CONFLICT). One paused ``approval_exceeded``, or under an approval policy one whose campaign changed
    since it went out, needs a new approval of the current preview first."""
    return resume(
        ctx.services.graph, _queue(ctx), dispatch_id=ctx.dispatch(data.dispatch_id), now=ctx.services.clock(),
        audit=ctx.audit(), settings=ctx.services.dispatch_settings,
        approval_policy=policy_of(ctx.services.graph, ctx.tenant_id),
    )  # fmt: skip


@router.mutation("chooseVariant")
def choose_variant(ctx: Context, data: ChooseVariantInput) -> reads.DispatchPublic:
    """Decide a testing dispatch's A/B test now, for ``variantId``: the rest of the audience
    gets only it. Not testing or already decided: CONFLICT; a variant the campaign lacks: BAD_REQUEST."""
    return choose(
        ctx.services.graph,
        _queue(ctx),
        dispatch_id=ctx.dispatch(data.dispatch_id),
        variant_id=data.variant_id,
        now=ctx.services.clock(),
        audit=ctx.audit(),
    )


@router.query("listDispatches")
def list_dispatches(ctx: Context, data: CampaignRef) -> list[reads.DispatchPublic]:
    """Every dispatch of a campaign, newest first."""
    return reads.list_dispatches(ctx.services.graph, ctx.campaign(data.campaign_id))


@router.query("listUncertainEmails")
def list_uncertain(ctx: Context, data: UncertainEmailsInput) -> UncertainEmailPage:
    """Recipients of an email dispatch whose fate is unknown (never retried blindly), keyset-paged."""
    return list_uncertain_emails(
        ctx.services.graph, dispatch_id=ctx.dispatch(data.dispatch_id), after=data.after, limit=data.limit
    )
