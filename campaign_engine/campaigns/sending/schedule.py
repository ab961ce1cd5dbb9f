"""Scheduled dispatch: confirm a reviewed send now, let the sweeper start it at ``sendAt``, exactly once.

``schedule_dispatch`` checks the preview token like ``dispatch`` does and records one Dispatch per
delivery channel in status ``scheduled`` with ``sendAt``, ``maxLateSeconds``, ``onChange`` and the
confirmed token. Nothing is enqueued: the sweeper (local worker loop, Lambda schedule) calls
``fire_due``, which takes each due schedule under its campaign lock and decides, in one transaction:

- already fired or cancelled (another sweeper won): nothing, so several sweepers fire it once;
- past ``sendAt + maxLateSeconds`` (the machine was down): ``missed``, nothing sent; a stale
  announcement is worse than none, and the admin sees why;
- the campaign is no longer live (paused, archived; a deleted one takes its Dispatches with it):
  ``cancelled`` with the reason;
- a critical campaign whose tenant has since forbidden critical ones (``allowCritical``): ``failed``,
  as a dispatch then is refused: nothing may skip quiet hours on an allowance withdrawn;
- the recomputed preview differs from the confirmed token (definition or recipients changed):
  ``needs_review``, unless the admin chose ``onChange: "send_current"``;
- a deadline (``deliverBy``) the send can no longer meet, unless scheduled with ``acceptLate``:
  ``failed`` with the verdict's words (``schedule_deadline.py``);
- otherwise ``sending``: from here it is an ordinary dispatch, and its first page jobs are enqueued
  after the commit (a lost enqueue is re-armed by the sweeper, as for ``dispatch``).

A per-recipient schedule (``{"localTime": ..., "perRecipient": true}``) stores ``sendLocalTime``
and fires when the first zone (UTC+14) reaches that time; from there the page walks hold each recipient
until their own zone does (``delivery/readiness.py``), and ``maxLateSeconds`` also guards each of them.

The schedule does not advance the campaign revision (``dispatch`` does): the token it holds must still
match at fire time when nothing changed. One pending schedule per campaign keeps that token honest.
Past 350 lines on purpose: confirming and firing apply one set of rules to one token.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.campaigns.sending.approval import (
    ApprovalMissing,
    ApprovalPolicy,
    ApprovalStale,
    check_approval,
    fallback_approved,
    reach_cap,
    record_refusal,
)
from campaign_engine.campaigns.sending.deadline import check_deliver_by, kept, pin, refuse_late
from campaign_engine.campaigns.sending.dispatch import _Computed, compute_preview, reviewed, start_pages
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, dispatch_from_node
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.locked_preview import confirmed, still_current
from campaign_engine.campaigns.sending.schedule_deadline import at_fire, judged
from campaign_engine.campaigns.sending.schedule_input import ScheduleInput
from campaign_engine.campaigns.sending.send_blocks import why_blocked
from campaign_engine.campaigns.sending.test_wave import check_experiment, experiment_json, start_test
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.dispatch import DeliveryChannel, PageJob
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound
from campaign_engine.domain.priority import job_lane
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.tenant_lane import require_critical_allowed, tenant_lane
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.queue.port import Queue

__all__ = [
    "cancel_scheduled",
    "fire_due",
    "schedule_dispatch",
]

log = logging.getLogger(__name__)

_WALKED: tuple[DeliveryChannel, ...] = ("notify", "email")


_PENDING = "schedule_pending"  # cypher/sending/schedule_pending.cypher

_CREATE_SCHEDULED = "schedule_create"  # cypher/sending/schedule_create.cypher


def schedule_dispatch(
    graph: Graph,
    *,
    data: ScheduleInput,
    now: datetime,
    settings: DispatchSettings,
    audit: AuditContext | None = None,
    approval_policy: ApprovalPolicy | None = None,
) -> list[DispatchPublic]:
    """Confirm the reviewed preview for a send at ``sendAt``; one Dispatch per channel, ``scheduled``.
    Under ``approval_policy`` a large one needs its approval now, and a change before it fires holds
    it for review (``onChange: send_current`` would send what nobody approved)."""
    send_at = data.instant()
    if send_at <= now:
        raise BadRequest("sendAt is in the past; dispatch now instead, or choose a later time")
    check_deliver_by(data.deliver_by, start=send_at, local_start=data.local_time())
    if approval_policy is not None and data.on_change != "review":
        raise BadRequest(
            "this tenant requires approval of large sends: onChange must be 'review'",
            issues=[{"path": ["onChange"], "message": "must be 'review' under an approval policy"}],
        )
    ids = {ch: f"dsp_{uuid.uuid4().hex}" for ch in _WALKED}
    schedule_id = f"sch_{uuid.uuid4().hex}"
    stamp = format_ts(now)
    share = data.experiment.test_share if data.experiment else None
    args: dict[str, Any] = {"campaign_id": data.campaign_id, "now": now, "settings": settings,
                            "test_share": share}  # fmt: skip

    def tx_fn(tx: Tx, read: _Computed | None) -> list[dict[str, Any]]:
        locked = lock_campaign(tx, data.campaign_id)
        if locked is None:
            raise NotFound(f"campaign '{campaign_ref(data.campaign_id)}' not found")
        still_current(read, locked)
        if locked.get("priority") == "critical":  # as dispatch asks; and again when it fires
            require_critical_allowed(tx, locked.get("tenantId"))
        if tx.run(statement(_PENDING), campaignId=data.campaign_id).single() is not None:
            raise Conflict("this campaign already has a scheduled dispatch; cancel it first")
        computed = read or compute_preview(tx, **args)
        if data.expected_preview_token != computed.preview.preview_token:
            raise Conflict("the dispatch preview is stale; preview again and confirm the new token")
        reason = computed.preview.blocked_reason
        # The window is judged at sendAt: a campaign may be scheduled for the moment it starts.
        ends_at = computed.campaign.get("endsAt")
        if reason == "not_started" and send_at >= parse_ts(computed.campaign["startsAt"]):
            reason = None
        elif reason is None and ends_at and send_at >= parse_ts(ends_at):
            reason = "ended"
        token = computed.preview.preview_token
        # An approval that accepted the fallback pinned it: the schedule needs no second flag.
        fallback = data.accept_fallback or fallback_approved(tx, campaign_id=data.campaign_id, token=token)
        if reason == "missing_translation" and fallback:
            reason = None
        if reason is not None:
            raise BadRequest(why_blocked(reason))
        approval = check_approval(
            tx, policy=approval_policy, campaign=computed.campaign,
            expected_token=data.expected_preview_token, current=reviewed(computed),
            dispatcher=audit.actor if audit else None, action="schedule",
            accept_fallback=data.accept_fallback, deadline=pin(data.deliver_by, data.accept_late),
        )  # fmt: skip
        approved: dict[str, Any] = {"approvedBy": approval.approved_by if approval else None,
                    "approvedAt": approval.approved_at if approval else None}  # fmt: skip
        channels = [ch for ch in _WALKED if ch in (computed.campaign.get("channels") or [])]
        if data.experiment is not None:  # checked again when it fires: a test decided meanwhile refuses it
            check_experiment(tx, computed.campaign, data.experiment, walked=list(channels),
                             test_wave=computed.preview.test_wave,
                             min_per_variant=settings.experiment_min_per_variant)  # fmt: skip
        keep: dict[str, dict[str, Any]] = {}
        late: dict[str, Any] = {}
        if data.deliver_by is not None:  # judged as if it started at sendAt; again when it fires
            verdict, _ = judged(tx, computed, start=send_at, settings=settings, deliver_by=data.deliver_by,
                                experiment=data.experiment, local_time=data.local_time())  # fmt: skip
            refuse_late(verdict, accept_late=data.accept_late)
            keep = {
                ch: kept(verdict, data.deliver_by, accept_late=data.accept_late, channel=ch)
                for ch in channels
            }
            late = {"deliverBy": verdict.deliver_by, "acceptLate": data.accept_late, "late": verdict.late}
        record_audit(tx, audit, target_type="campaign", target_id=data.campaign_id, campaign=locked,
                     revision_before=locked["revision"], revision_after=locked["revision"],
                     detail={"scheduleId": schedule_id, "sendAt": format_ts(send_at),
                             **approved, **late})  # fmt: skip
        return [
            dict(record["dispatch"])
            for record in tx.run(
                statement(_CREATE_SCHEDULED),
                campaignId=data.campaign_id,
                dispatches=[
                    {
                        "id": ids[ch],
                        "channel": ch,
                        "reachCap": reach_cap(approval_policy, approval, ch),
                        "deadline": keep.get(ch, {}),
                    }
                    for ch in channels
                ],
                scheduleId=schedule_id,
                sendAt=format_ts(send_at),
                sendLocalTime=data.local_time(),
                maxLateSeconds=data.max_late_seconds,
                onChange=data.on_change,
                acceptFallback=fallback,
                experiment=experiment_json(data.experiment),
                token=data.expected_preview_token,
                now=stamp,
                **approved,
            )
        ]

    try:
        rows = confirmed(graph, tx_fn, compute_preview, args, action="schedule")
    except (ApprovalMissing, ApprovalStale) as refused:
        record_refusal(graph, audit, campaign_id=data.campaign_id, refused=refused)
        raise
    log.info("dispatch.scheduled schedule_id=%s campaign_id=%s", schedule_id, data.campaign_id)
    return [dispatch_from_node(row) for row in rows]


_SCHEDULE_OF = "schedule_of"  # cypher/sending/schedule_of.cypher

_SET_STATUS = "schedule_set_status"  # cypher/sending/schedule_set_status.cypher


def cancel_scheduled(
    graph: Graph, *, dispatch_id: str, now: datetime, audit: AuditContext | None = None
) -> int:
    """Cancel the schedule ``dispatch_id`` belongs to (all its channels); CONFLICT once it has fired."""

    def tx_fn(tx: Tx) -> int:
        found = tx.run(statement(_SCHEDULE_OF), dispatchId=dispatch_id).single()
        if found is None:
            raise NotFound(f"dispatch '{dispatch_id}' not found")
        if found["scheduleId"] is None:
            raise BadRequest("this dispatch was not scheduled")
        locked = lock_campaign(tx, found["campaignId"])  # serialises with fire_due: one of the two wins
        changed = tx.run(
            statement(_SET_STATUS),
            scheduleId=found["scheduleId"],
            status="cancelled",
            reason="cancelled",
            now=format_ts(now),
        ).single()
        assert changed is not None
        if not changed["changed"]:
            raise Conflict("this scheduled dispatch has already fired, been cancelled or missed")
        revision = None if locked is None else locked["revision"]
        record_audit(tx, audit, target_type="dispatch", target_id=dispatch_id, campaign=locked,
                     revision_before=revision, revision_after=revision,
                     detail={"scheduleId": found["scheduleId"]})  # fmt: skip
        return int(changed["changed"])

    return graph.write(tx_fn)


_DUE = "schedule_due"  # cypher/sending/schedule_due.cypher

_SCHEDULED = "schedule_list"  # cypher/sending/schedule_list.cypher

# As ``dispatch``: the revision advances (the token confirmed one send) and a dispatch of the campaign
# still sending is superseded by this one.
_START = "schedule_start"  # cypher/sending/schedule_start.cypher


def fire_due(
    graph: Graph,
    queue: Queue,
    *,
    now: datetime,
    settings: DispatchSettings,
    limit: int = 100,
) -> dict[str, str]:
    """Start, miss, cancel or hold every schedule due at ``now``; returns scheduleId -> what happened.

    Safe to run from several sweepers at once: each schedule is decided under its campaign lock, and
    only a schedule still ``scheduled`` under that lock is decided at all."""
    stamp = format_ts(now)
    due = graph.read(lambda tx: tx.run(statement(_DUE), now=stamp, limit=limit).data())
    outcomes: dict[str, str] = {}
    for row in due:
        outcome, jobs = graph.write(
            _fire_one,
            row["scheduleId"],
            row["campaignId"],
            now=now,
            settings=settings,
            graph=graph,
        )
        if jobs:  # committed: the first pages may now be enqueued (a lost enqueue is re-armed)
            start_pages(queue, jobs, campaign_id=row["campaignId"])
        outcomes[row["scheduleId"]] = outcome
        log.info("dispatch.schedule_fired schedule_id=%s outcome=%s", row["scheduleId"], outcome)
    return outcomes


def _fire_one(
    tx: Tx,
    schedule_id: str,
    campaign_id: str,
    *,
    now: datetime,
    settings: DispatchSettings,
    graph: Graph | None = None,
) -> tuple[str, list[PageJob]]:
    """Decide one due schedule under its campaign lock (see the module docstring for the order).
    With ``graph``, a start records ``dispatch.started`` and a refusal ``dispatch.failed`` in this
    transaction, as a confirmed dispatch and a failed walk do."""
    stamp = format_ts(now)
    locked = lock_campaign(tx, campaign_id) or {}
    dispatches = tx.run(statement(_SCHEDULED), scheduleId=schedule_id).data()
    if not dispatches:
        return "already_decided", []
    first = dispatches[0]["dispatch"]
    late_by = now - parse_ts(first["sendAt"])
    if late_by > timedelta(seconds=int(first["maxLateSeconds"])):
        reason = f"missed: the sweeper ran {int(late_by.total_seconds())} s after sendAt"
        return _decide(tx, schedule_id, "missed", reason, stamp), []
    experiment = Experiment.model_validate_json(first["experiment"]) if first.get("experiment") else None
    share = experiment.test_share if experiment else None
    computed = compute_preview(tx, campaign_id=campaign_id, now=now, settings=settings, test_share=share)
    status = computed.campaign.get("status")
    if status != "live":
        return _decide(tx, schedule_id, "cancelled", f"campaign_{status}", stamp), []
    if locked.get("priority") == "critical" and not tenant_lane(tx, locked.get("tenantId"))[0]:
        # The tenant forbade critical campaigns after this was scheduled: nothing skips quiet hours now.
        record_dispatch_events(tx, graph, "dispatch.failed", [d["dispatch"]["id"] for d in dispatches],
                               now=stamp, reason="critical_not_allowed")  # fmt: skip
        reason = (
            "the tenant no longer allows critical campaigns (allowCritical): make it normal, schedule again"
        )
        return _decide(tx, schedule_id, "failed", reason, stamp), []
    if computed.preview.preview_token != first["previewToken"] and first.get("onChange") != "send_current":
        reason = "the campaign or its recipients changed since the preview was confirmed"
        return _decide(tx, schedule_id, "needs_review", reason, stamp), []
    blocked = computed.preview.blocked_reason
    if blocked == "missing_translation" and first.get("acceptFallback"):
        blocked = None
    if blocked is not None:
        record_dispatch_events(tx, graph, "dispatch.failed", [d["dispatch"]["id"] for d in dispatches],
                               now=stamp, reason=blocked)  # fmt: skip
        return _decide(tx, schedule_id, "failed", why_blocked(blocked), stamp), []
    if experiment is not None:
        walked = [str(d["dispatch"]["channel"]) for d in dispatches]
        try:
            check_experiment(tx, computed.campaign, experiment, walked=walked,
                             test_wave=computed.preview.test_wave,
                             min_per_variant=settings.experiment_min_per_variant)  # fmt: skip
        except BadRequest as refused:
            return _decide(tx, schedule_id, "failed", str(refused), stamp), []
    late, keep = at_fire(tx, computed, first, now=now, settings=settings, experiment=experiment)
    if late is not None:
        record_dispatch_events(tx, graph, "dispatch.failed", [d["dispatch"]["id"] for d in dispatches],
                               now=stamp, reason="deadline")  # fmt: skip
        return _decide(tx, schedule_id, "failed", late, stamp), []
    created_at = str(dispatches[0]["createdAt"])
    started = tx.run(statement(_START), campaignId=campaign_id, scheduleId=schedule_id, now=stamp,
                     fields=keep).data()  # fmt: skip
    start_test(tx, campaign_id=campaign_id, experiment=experiment, dispatch_ids=[r["id"] for r in started],
               now=now)  # fmt: skip
    record_dispatch_events(tx, graph, "dispatch.started", [r["id"] for r in started], now=stamp,
                           recipients=computed.preview.recipient_count, scheduled=True)  # fmt: skip
    tenant = computed.campaign.get("tenantId")
    lane = job_lane(computed.campaign.get("priority"), tenant, tenant_lane(tx, tenant)[1])
    first_page = {"campaign_id": campaign_id, "campaign_created_at": created_at, "lane": lane}
    return "sending", [PageJob(dispatch_id=r["id"], channel=r["channel"], **first_page) for r in started]


def _decide(tx: Tx, schedule_id: str, status: str, reason: str, stamp: str) -> str:
    tx.run(statement(_SET_STATUS), scheduleId=schedule_id, status=status, reason=reason, now=stamp).consume()
    return status
