"""Reviewed dispatch: preview what a send would do and confirm it once (its progress: ``dispatch_reads``).

``preview_dispatch`` is read-only and returns a token that digests the definition, revision and the
sorted eligible recipients, read in keyset pages as a running digest (memory bounded by a page, not
the audience). ``dispatch`` recomputes the same thing and confirms it under the campaign lock: a stale
token is CONFLICT, and success advances the revision so one token confirms one send. The recompute
runs before the lock and is re-verified under it by the campaign's lock counter, so a long audience
walk never holds the lock that audience edits wait for. The Dispatch
record commits *before* the first page job is enqueued (the lock is released first); if that enqueue
fails the dispatch still stands and the sweeper re-arms it ("duplicate over drop").

A new dispatch supersedes a dispatch of the same campaign still ``sending`` (it is marked stopped), so
two confirmations never leave two chains walking one audience.

One module past 350 lines on purpose: the preview's model, its one pass and the confirmation that
recomputes it must change together; the forecast the preview carries lives in ``plan.py``.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from campaign_engine.campaigns.sending import deadline as deadlines
from campaign_engine.campaigns.sending.approval import (
    ApprovalMissing,
    ApprovalPolicy,
    ApprovalStale,
    Reviewed,
    check_approval,
    fallback_approved,
    reach_cap,
    record_refusal,
)
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.locked_preview import confirmed, read_by_statement, still_current
from campaign_engine.campaigns.sending.plan import ChannelPlan, forecast
from campaign_engine.campaigns.sending.preview_pass import PREVIEW_PAGE, Tally, pinned
from campaign_engine.campaigns.sending.send_blocks import blocked_reason, undeliverable, why_blocked
from campaign_engine.campaigns.sending.test_wave import check_experiment, start_test
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.dispatch import (
    DeliveryChannel,
    PageJob,
    TokenDigest,
    preview_token,
)
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound
from campaign_engine.domain.priority import JobLane, job_lane
from campaign_engine.domain.reasons import BlockedReason
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Statements, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.tenant_lane import require_critical_allowed, tenant_lane
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import Queue, QueueError

__all__ = [
    "PREVIEW_PAGE",
    "DispatchPreview",
    "DispatchStarted",
    "compute_preview",
    "dispatch",
    "preview_dispatch",
    "reviewed",
    "start_pages",
]

log = logging.getLogger(__name__)


class DispatchPreview(CamelModel):
    audience_count: int
    already_notified_count: int
    recipient_count: int
    notification_recipient_count: int
    email_recipient_count: int
    preview_token: str
    blocked_reason: BlockedReason | None = None
    locale_counts: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="per channel, the served language -> its recipients"
    )
    untranslated: dict[str, int] = Field(
        default_factory=dict,
        description="a recipient language the campaign has no translation for -> recipients who get the base",
    )
    test_wave: dict[str, int] | None = Field(
        default=None,
        description="asked with an experiment: the test wave's recipients per variant; the token "
        "is the same with or without it",
    )
    guardian_recipient_count: int = Field(
        default=0,
        description="distinct guardians reached on any channel in place of members the age policy"
        " excludes (minors: guardians); included in recipientCount and the per-channel counts",
    )
    guardian_notification_recipient_count: int = Field(
        default=0, description="of notificationRecipientCount, the routed guardians"
    )
    guardian_email_recipient_count: int = Field(
        default=0, description="of emailRecipientCount, the routed guardians"
    )
    guardian_locale_counts: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="of localeCounts, the routed guardians: per channel, the language of the guardian "
        "copy served -> guardians",
    )
    guardian_untranslated: dict[str, int] = Field(
        default_factory=dict,
        description="of untranslated, the routed guardians: a language the guardian copy has no "
        "translation for -> guardians who get its base",
    )
    in_app_recipient_count: int = Field(
        default=0, description="members who see the in-app card (a campaign with one); the token pins them"
    )
    plan: dict[str, ChannelPlan] = Field(
        default_factory=dict, description="per walked channel, the forecast if confirmed now (plan.py)"
    )
    deadline: deadlines.DeadlineVerdict | None = Field(
        default=None, description="asked with deliverBy: whether the plan meets it, and who would be late"
    )


class DispatchStarted(CamelModel):
    dispatch_id: str
    channels: list[DeliveryChannel]
    dispatch_ids: dict[str, str] = {}


class _Computed(BaseModel):
    campaign: dict[str, Any]
    preview: DispatchPreview
    shown_token: str
    """The token of who sees the in-app card alone (``Reviewed.shown_token``)."""
    zones: dict[str, Counter[str]] = {}  # per channel, recipients by time zone (the forecast's)


def reviewed(computed: _Computed) -> Reviewed:
    """What an approval of this preview pins (``approval.py``)."""
    preview = computed.preview
    return Reviewed(
        token=preview.preview_token, shown_token=computed.shown_token, recipients=preview.recipient_count,
        reach={"notify": preview.notification_recipient_count, "email": preview.email_recipient_count},
        untranslated=preview.untranslated, in_app=preview.in_app_recipient_count,
    )  # fmt: skip


def compute_preview(
    tx: Statements,
    *,
    campaign_id: str,
    now: datetime,
    settings: DispatchSettings,
    test_share: float | None = None,
) -> _Computed:
    """The preview in one pass over the audience in keyset pages: the token is a running digest, so
    no recipient list is ever held whole. The campaign is read first; its
    ``campaignStateLock`` is the version ``dispatch`` re-verifies under the lock. Read outside the lock,
    each page is a statement (``read_by_statement``): a deadline bounds a page, not the walk."""
    record = tx.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS campaign", id=campaign_id).single()
    if record is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    campaign = dict(record["campaign"])
    head: dict[str, Any] = {
        "campaign_id": campaign["id"], "created_at": campaign["createdAt"],
        "revision": int(campaign["revision"]), "definition": campaign["definition"],
    }  # fmt: skip
    tally = Tally(test_share=test_share, shown=TokenDigest(**head, scope="inApp"))
    token = preview_token(
        **head,
        profile_ids=pinned(
            tx,
            campaign=campaign,
            now=now,
            adult_age=settings.adult_age,
            max_recipients=settings.max_recipients,
            tally=tally,
        ),
    )
    tally.recipients += len(tally.guardians)  # routed guardians are never members (graph/rules/routing.py)
    reason = blocked_reason(campaign, now=format_ts(now)) or undeliverable(campaign, settings.deliverable)
    if reason is None and not tally.recipients:
        reason = "no_recipients"
    fallbacks = sum(tally.untranslated.values())
    if reason is None and tally.recipients and fallbacks / tally.recipients > settings.untranslated_max_share:
        reason = "missing_translation"  # dispatch and scheduleDispatch then need acceptFallback
    preview = DispatchPreview(
        audience_count=tally.audience,
        already_notified_count=tally.notified,
        recipient_count=tally.recipients,
        notification_recipient_count=tally.notify,
        email_recipient_count=tally.email,
        preview_token=token,
        blocked_reason=reason,
        locale_counts={ch: dict(sorted(c.items())) for ch, c in tally.locales.items() if c},
        untranslated=dict(sorted(tally.untranslated.items())),
        test_wave=None if test_share is None else dict(sorted(tally.test_wave.items())),
        guardian_recipient_count=len(tally.guardians),
        guardian_notification_recipient_count=tally.guardian_notify,
        guardian_email_recipient_count=tally.guardian_email,
        guardian_locale_counts={ch: dict(sorted(c.items())) for ch, c in tally.guardian_locales.items() if c},
        guardian_untranslated=dict(sorted(tally.guardian_untranslated.items())),
        in_app_recipient_count=tally.in_app,
    )
    assert tally.shown is not None
    return _Computed(campaign=campaign, preview=preview, shown_token=tally.shown.token(), zones=tally.zones)


def preview_dispatch(
    graph: Graph,
    *,
    campaign_id: str,
    now: datetime,
    settings: DispatchSettings,
    experiment: Experiment | None = None,
    deliver_by: deadlines.DeliverBy | None = None,
) -> DispatchPreview:
    """With ``experiment``, also the test wave's size per variant (checked as ``dispatch`` would
    check it); with ``deliver_by``, the deadline's verdict and the plan paced to it (``deadline.py``)."""
    deadlines.check_deliver_by(deliver_by, start=now)

    computed = read_by_statement(graph, compute_preview, campaign_id=campaign_id, now=now, settings=settings,
                                 test_share=experiment.test_share if experiment else None)  # fmt: skip

    def tx_fn(tx: Tx) -> _Computed:
        if experiment is not None:
            walked = [ch for ch in _WALKED_CHANNELS if ch in (computed.campaign.get("channels") or [])]
            check_experiment(tx, computed.campaign, experiment, walked=list(walked),
                             test_wave=computed.preview.test_wave,
                             min_per_variant=settings.experiment_min_per_variant)  # fmt: skip
        preview = computed.preview
        counts = {"notify": preview.notification_recipient_count, "email": preview.email_recipient_count}
        preview.plan = forecast(tx, campaign=computed.campaign, counts=counts, zones=computed.zones,
                                pace=settings.pace, now=now, experiment=experiment)  # fmt: skip
        if deliver_by is not None:
            preview.deadline, preview.plan = deadlines.judge(
                campaign=computed.campaign, plans=preview.plan, zones=computed.zones, pace=settings.pace,
                now=now, deliver_by=deliver_by, experiment=experiment)  # fmt: skip
        return computed

    return graph.read(tx_fn).preview


_WALKED_CHANNELS: tuple[DeliveryChannel, ...] = ("notify", "email")

_SUPERSEDE = "dispatch_supersede"  # cypher/sending/dispatch_supersede.cypher

# One Dispatch (own cursor) per delivery channel of the campaign; the revision advances once.
_CREATE = "dispatch_create"  # cypher/sending/dispatch_create.cypher


def dispatch(
    graph: Graph,
    queue: Queue,
    *,
    campaign_id: str,
    expected_token: str | None,
    now: datetime,
    settings: DispatchSettings,
    audit: AuditContext | None = None,
    approval_policy: ApprovalPolicy | None = None,
    accept_fallback: bool = False,
    experiment: Experiment | None = None,
    deliver_by: deadlines.DeliverBy | None = None,
    accept_late: bool = False,
) -> DispatchStarted:
    """Confirm a send; under ``approval_policy`` a large one needs its approval (``approval.py``), and
    the dispatcher is the audit actor. The preview (a pass over the whole audience) is read *before*
    the campaign lock and re-verified under it by the lock counter, so adds, enrolments and edits of
    the campaign wait for a node read, not for the audience walk (``locked_preview.py``).
    ``experiment``: a test wave (``test_wave.py``), refused before anything is written when the
    campaign cannot run it.
    ``deliver_by``: paced to meet it, or PRECONDITION_FAILED with nothing written unless ``accept_late``
    (``deadline.py``); the audit entry keeps both and the late count."""
    deadlines.check_deliver_by(deliver_by, start=now)
    # Ids are drawn outside the tx function: a driver retry keeps them.
    ids: dict[DeliveryChannel, str] = {ch: f"dsp_{uuid.uuid4().hex}" for ch in _WALKED_CHANNELS}
    stamp = format_ts(now)
    args: dict[str, Any] = {"campaign_id": campaign_id, "now": now, "settings": settings,
                            "test_share": experiment.test_share if experiment else None}  # fmt: skip

    def tx_fn(tx: Tx, read: _Computed | None) -> tuple[str, list[DeliveryChannel], JobLane]:
        locked = lock_campaign(tx, campaign_id)
        if locked is None:
            raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
        weight = tenant_lane(tx, locked.get("tenantId"))[1]
        if locked.get("priority") == "critical":  # the tenant may have forbidden it since it was set
            require_critical_allowed(tx, locked.get("tenantId"))
        still_current(read, locked)
        computed = read or compute_preview(tx, **args)
        preview = computed.preview
        if expected_token is not None and expected_token != preview.preview_token:
            raise Conflict("the dispatch preview is stale; preview again and confirm the new token")
        fallback = preview.blocked_reason == "missing_translation" and (
            accept_fallback or fallback_approved(tx, campaign_id=campaign_id, token=preview.preview_token)
        )  # an approval that accepted the fallback pinned it: no second flag
        if preview.blocked_reason is not None and not fallback:
            raise BadRequest(why_blocked(preview.blocked_reason))
        approval = check_approval(
            tx, policy=approval_policy, campaign=computed.campaign, expected_token=expected_token,
            current=reviewed(computed), dispatcher=audit.actor if audit else None,
            accept_fallback=accept_fallback, deadline=deadlines.pin(deliver_by, accept_late),
        )  # fmt: skip
        approved: dict[str, Any] = {"approvedBy": approval.approved_by if approval else None,
                    "approvedAt": approval.approved_at if approval else None}  # fmt: skip
        walked = [ch for ch in _WALKED_CHANNELS if ch in (computed.campaign.get("channels") or [])]
        if experiment is not None:
            check_experiment(tx, computed.campaign, experiment, walked=list(walked),
                             test_wave=preview.test_wave,
                             min_per_variant=settings.experiment_min_per_variant)  # fmt: skip
        tx.run(statement(_SUPERSEDE), campaignId=campaign_id, now=stamp).consume()
        planned = forecast(tx, campaign=computed.campaign, zones=computed.zones, pace=settings.pace, now=now,
                           counts=reviewed(computed).reach, experiment=experiment)  # fmt: skip
        # A deadline refused here rolls the supersede back with the rest: nothing is written.
        planned, keep, late = deadlines.meet(campaign=computed.campaign, plans=planned, zones=computed.zones,
                                   pace=settings.pace, now=now, deliver_by=deliver_by,
                                   accept_late=accept_late, experiment=experiment)  # fmt: skip
        rows: list[dict[str, Any]] = [
            {"id": ids[ch], "channel": ch, "plan": {**planned[ch].stored(), **keep.get(ch, {})}}
            for ch in walked
        ]
        caps = {ids[ch]: reach_cap(approval_policy, approval, ch) for ch in walked}
        row = tx.run(
            statement(_CREATE), campaignId=campaign_id, now=stamp, **approved,
            dispatches=[{**r, "reachCap": caps[r["id"]]} for r in rows],
        ).single()  # fmt: skip
        assert row is not None
        start_test(tx, campaign_id=campaign_id, experiment=experiment, dispatch_ids=[r["id"] for r in rows],
                   now=now)  # fmt: skip
        record_dispatch_events(tx, graph, "dispatch.started", [r["id"] for r in rows], now=stamp,
                               recipients=preview.recipient_count)  # fmt: skip
        tested = {"experiment": experiment.model_dump(by_alias=True)} if experiment else {}
        record_audit(tx, audit, target_type="campaign", target_id=campaign_id, campaign=locked,
                     revision_before=locked["revision"], revision_after=locked["revision"] + 1,
                     detail={"dispatchIds": [r["id"] for r in rows], "recipients": preview.recipient_count,
                             **approved, **tested, **late})  # fmt: skip
        return str(row["createdAt"]), walked, job_lane(locked.get("priority"), locked.get("tenantId"), weight)

    try:
        created_at, channels, lane = confirmed(graph, tx_fn, compute_preview, args, action="dispatch")
    except (ApprovalMissing, ApprovalStale) as refused:
        record_refusal(graph, audit, campaign_id=campaign_id, refused=refused)
        raise
    # The lock is released and the Dispatch committed: queue I/O may now fail without losing the send.
    first = {"campaign_id": campaign_id, "campaign_created_at": created_at, "lane": lane}
    jobs = [PageJob(dispatch_id=ids[ch], channel=ch, **first) for ch in channels]
    start_pages(queue, jobs, campaign_id=campaign_id)
    return DispatchStarted(
        dispatch_id=ids[channels[0]], channels=channels, dispatch_ids={ch: ids[ch] for ch in channels}
    )


def start_pages(queue: Queue, jobs: list[PageJob], *, campaign_id: str) -> None:
    """Enqueue the first page job of each channel of a committed Dispatch. A failed enqueue loses nothing:
    the Dispatch is ``sending`` and the sweeper re-arms it ("duplicate over drop")."""
    try:
        send_pages(queue, jobs)
    except QueueError:
        log.warning("dispatch.first_page_enqueue_failed campaign_id=%s", campaign_id)
    log.info("dispatch.started dispatch_id=%s campaign_id=%s", jobs[0].dispatch_id, campaign_id)
