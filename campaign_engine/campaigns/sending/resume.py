"""``campaigns.resumeDispatch``: a ``failed`` or ``paused`` Dispatch resumes from its durable cursor.

A walk fails for good after ``CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES`` failed attempts in a row
(``delivery/jobs.py``, ``delivery/sweeper.py``), and an email walk after
``CAMPAIGN_EMAIL_MAX_DEFERRALS`` back-pressure deferrals in a row; once an operator fixed the cause (or
the provider accepts mail again), this is the way back: both counts reset.

A walk is ``paused`` by the health guard (``delivery/health_guard.py``) when its own bounce, complaint
or rejection rate crossed its limit; resuming is the admin's decision to go on regardless. So that the
guard does not pause again at once on the very numbers the admin judged, the resume restarts the guard's
window: the counters of this moment are stored as ``guardBase*`` (and ``guardSince``), and the guard
judges only what is accepted, bounced, complained about or refused after it, with
``CAMPAIGN_GUARD_MIN_SAMPLE`` counted afresh (``domain/dispatch_health.py``). The pause's reason
moves to ``pastErrors``.
A walk paused ``approval_exceeded`` (``delivery/approval_reach.py``: a live segment grew past the reach
its approval showed) resumes only with a new approval of the campaign's current preview, which counts
the recipients still to reach: its reach is added to what was sent so far as the new ``reachCap``, and
the approval is used up (``approval.py``; missing, the resume is FORBIDDEN and becomes a request with
``action: resume``). Under a tenant's policy, so does one whose campaign's content or audience changed
since it went out (``approval_people.changed_since_send``), when the rest reaches the threshold.
Either resume records a ``dispatch.resumed`` event in its transaction.
Lock order is campaign, then Dispatch, as for a confirmation.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from campaign_engine.campaigns.sending.approval import (
    Approval,
    ApprovalMissing,
    ApprovalPolicy,
    ApprovalStale,
    check_approval,
    record_refusal,
)
from campaign_engine.campaigns.sending.approval_people import changed_since_send
from campaign_engine.campaigns.sending.dispatch import compute_preview, reviewed
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, dispatch_from_node
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.domain.dispatch import PageJob, send_blocked
from campaign_engine.domain.errors import Conflict, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import Queue, QueueError

__all__ = ["resume_dispatch"]

log = logging.getLogger(__name__)

_RESUME_FIND = "MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign) RETURN c.id AS campaignId"

# Taken after the campaign lock (order campaign -> Dispatch), so a confirmation cannot interleave.
_RESUME_LOCK = "dispatch_resume_lock"  # cypher/sending/dispatch_resume_lock.cypher

# A paused one restarts the health guard's window at the counters of now (module docstring).
_RESUME = "dispatch_resume"  # cypher/sending/dispatch_resume.cypher

# A new approval's reach is added to what the walk reached so far.
_REAPPROVED = (
    "MATCH (d:Dispatch {id: $dispatchId}) SET d.reachCap = coalesce(d.enqueued, 0) + $reach, "
    "d.approvedBy = $approvedBy, d.approvedAt = $approvedAt, d.pauseCode = null, d.pauseApproved = null, "
    "d.pauseReach = null"
)
# Any approval at all: a grown audience needs one whatever its size.
_ALWAYS = ApprovalPolicy(min_recipients=0)


def _reapproved(
    tx: Tx,
    current: dict[str, Any],
    campaign: dict[str, Any],
    *,
    settings: DispatchSettings | None,
    now: datetime,
    actor: str | None,
    policy: ApprovalPolicy = _ALWAYS,
) -> Approval | None:
    """The new approval a walk paused ``approval_exceeded``, or one whose campaign changed since it went
    out, resumes with (inside the campaign lock); None when the rest is below ``policy``'s threshold."""
    if settings is None:
        raise Conflict(f"dispatch '{current['id']}' needs a new approval to resume")
    computed = compute_preview(tx, campaign_id=campaign["id"], now=now, settings=settings)
    approval = check_approval(
        tx, policy=policy, campaign=campaign, expected_token=computed.preview.preview_token,
        current=reviewed(computed), dispatcher=actor, action="resume",
    )  # fmt: skip
    if approval is None:
        return None
    tx.run(
        _REAPPROVED, dispatchId=current["id"], reach=approval.reach.get(current["channel"], 0),
        approvedBy=approval.approved_by, approvedAt=approval.approved_at,
    ).consume()  # fmt: skip
    return approval


def resume_dispatch(
    graph: Graph,
    queue: Queue,
    *,
    dispatch_id: str,
    now: datetime,
    audit: AuditContext | None = None,
    settings: DispatchSettings | None = None,
    approval_policy: ApprovalPolicy | None = None,
) -> DispatchPublic:
    """Resume a ``failed`` or ``paused`` Dispatch from its durable cursor (``campaigns.resumeDispatch``).

    Only ``failed`` and ``paused`` resume: ``completed`` has nothing left, and ``stopped`` means a pause, the
    window, a deletion or a newer confirmation ended it, so the campaign's own status and a new
    dispatch say what happens next (already notified or emailed recipients are skipped). The campaign
    must be the same incarnation and able to send on the channel, and no newer Dispatch of the same
    channel may exist (it walks, or walked, the audience itself). The failure count resets and
    ``lastError`` moves to ``pastErrors``. The page job is enqueued after the commit: if that send
    fails the sweeper re-arms the walk; a duplicate is absorbed by the cursor CAS.
    """
    stamp = format_ts(now)

    def tx_fn(tx: Tx) -> DispatchPublic:
        found = tx.run(_RESUME_FIND, dispatchId=dispatch_id).single()
        campaign = None if found is None else lock_campaign(tx, found["campaignId"])
        if campaign is None:
            raise NotFound(f"dispatch '{dispatch_id}' not found")
        row = tx.run(statement(_RESUME_LOCK), dispatchId=dispatch_id, campaignId=campaign["id"]).single()
        if row is None:  # the campaign was deleted or recreated before we held its lock
            raise NotFound(f"dispatch '{dispatch_id}' not found")
        current = dict(row["dispatch"])
        _check_resumable(current, campaign, newer=row["newer"], now=stamp)
        approval, actor = None, audit.actor if audit else None
        if current.get("status") == "paused" and current.get("pauseCode") == "approval_exceeded":
            approval = _reapproved(tx, current, campaign, settings=settings, now=now, actor=actor)
        elif approval_policy is not None and changed_since_send(tx, campaign, dispatch_id):
            approval = _reapproved(tx, current, campaign, settings=settings, now=now, actor=actor,
                                   policy=approval_policy)  # fmt: skip
        resumed = tx.run(
            statement(_RESUME),
            dispatchId=dispatch_id,
            campaignId=campaign["id"],
            failedAt=current.get("finishedAt") or current.get("pausedAt") or stamp,
            now=stamp,
        ).single(strict=True)
        record_audit(tx, audit, target_type="dispatch", target_id=dispatch_id, campaign=campaign,
                     revision_before=campaign["revision"], revision_after=campaign["revision"],
                     detail={"channel": current["channel"], "cursor": current.get("cursor"),
                             "from": current.get("status"),
                             "pauseReason": current.get("pauseReason"),
                             **({"approvedBy": approval.approved_by} if approval else {})})  # fmt: skip
        record_dispatch_events(tx, graph, "dispatch.resumed", [dispatch_id], now=stamp,
                               **{"from": current.get("status")})  # fmt: skip
        return dispatch_from_node(dict(resumed["dispatch"]))

    try:
        resumed = graph.write(tx_fn)
    except (ApprovalMissing, ApprovalStale) as refused:
        campaign_id = graph.read(lambda tx: tx.run(_RESUME_FIND, dispatchId=dispatch_id).single(strict=True))
        record_refusal(graph, audit, campaign_id=str(campaign_id["campaignId"]), refused=refused)
        raise
    job = PageJob.model_validate(
        {
            "dispatchId": resumed.dispatch_id,
            "campaignId": resumed.campaign_id,
            "campaignCreatedAt": resumed.campaign_created_at,
            "channel": resumed.channel,
            "cursor": resumed.cursor,
        }
    )
    try:
        send_pages(queue, [job])
    except QueueError:
        log.warning("dispatch.resume_enqueue_failed dispatch_id=%s", dispatch_id)
    log.info("dispatch.resumed dispatch_id=%s campaign_id=%s", dispatch_id, resumed.campaign_id)
    return resumed


def _check_resumable(
    dispatch_node: dict[str, Any], campaign: dict[str, Any], *, newer: dict[str, Any] | None, now: str
) -> None:
    """Why this Dispatch must not resume, as a CONFLICT the admin can act on (checked under the locks)."""
    dispatch_id, status = dispatch_node["id"], dispatch_node.get("status")
    if status not in ("failed", "paused"):
        advice = {
            "sending": "it is still sending",
            "completed": "it completed; there is nothing left to send",
            "stopped": "a stopped dispatch is not resumed: once the campaign is live, dispatch again "
            "(recipients already reached are skipped)",
        }.get(str(status), f"its status is {status}")
        raise Conflict(
            f"dispatch '{dispatch_id}' cannot be resumed: only a failed or paused dispatch can; {advice}"
        )
    if dispatch_node.get("campaignCreatedAt") != campaign.get("createdAt"):
        raise Conflict(
            f"dispatch '{dispatch_id}' belongs to an earlier incarnation of campaign '{campaign['id']}'"
        )
    reason = send_blocked(campaign, channels=[dispatch_node["channel"]], missing="channel_removed", now=now)
    if reason is not None:
        raise Conflict(f"dispatch '{dispatch_id}' cannot be resumed: the campaign cannot send ({reason})")
    if newer is not None:
        raise Conflict(
            f"dispatch '{dispatch_id}' cannot be resumed: the newer dispatch '{newer['id']}' of the same "
            f"channel ({newer['status']}) supersedes it"
        )
