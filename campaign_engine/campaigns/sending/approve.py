"""``campaigns.approveDispatch``: a second publisher approves exactly one preview (``approval.py``)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from campaign_engine.campaigns.definitions import emit_event
from campaign_engine.campaigns.sending.approval import Approved, Reviewed, approval_event, gated, promote
from campaign_engine.campaigns.sending.approval_people import not_by, who_may_approve
from campaign_engine.campaigns.sending.dispatch import _Computed, compute_preview, reviewed
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.locked_preview import confirmed, still_current
from campaign_engine.campaigns.sending.send_blocks import why_blocked
from campaign_engine.domain.errors import BadRequest, Conflict, Forbidden, NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign

__all__ = ["approve_dispatch"]

_APPROVE = "approval_approve"  # cypher/sending/approval_approve.cypher
_ACTIONS = (
    "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId}) RETURN collect(DISTINCT r.action) AS actions"
)
# What a publish request pinned of what members see (``Reviewed.shown_token``).
_PINNED_SHOWN = (
    "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId, previewToken: $previewToken, "
    "action: 'publish'}) RETURN r.shownToken AS shown LIMIT 1"
)


def record_approval(
    tx: Tx,
    graph: Graph,
    *,
    campaign: dict[str, Any],
    preview_token: str,
    current: Reviewed,
    accept_fallback: bool,
    approver: str,
    now: datetime,
    audit: AuditContext | None,
    deadline: tuple[str | None, bool] = (None, False),
) -> Approved:
    """Inside the campaign's lock: the approver saw exactly the current preview and counts as a second
    person for it; otherwise FORBIDDEN naming who may approve, and nothing is recorded."""
    shown_only = preview_token != current.token and _shown_unchanged(tx, campaign, preview_token, current)
    if preview_token != current.token and not shown_only:
        raise Conflict("the preview changed since it was reviewed; preview again and approve the new token")
    excluded = not_by(tx, campaign)
    if approver in excluded:
        raise Forbidden(
            f"approval of {campaign_ref(campaign['id'])} needs {who_may_approve(excluded)}: you asked for "
            "this send or changed its content or audience since its last approved send"
        )
    if shown_only:
        return _approve_shown(tx, graph, campaign=campaign, preview_token=preview_token, current=current,
                              excluded=excluded, approver=approver, now=now, audit=audit)  # fmt: skip
    record = tx.run(
        statement(_APPROVE), campaignId=campaign["id"], previewToken=preview_token, approver=approver,
        now=format_ts(now), recipients=current.recipients, acceptFallback=accept_fallback,
        reach=json.dumps(current.reach, sort_keys=True), deliverBy=deadline[0], acceptLate=deadline[1],
    ).single()  # fmt: skip
    assert record is not None
    record_audit(tx, audit, target_type="campaign", target_id=campaign["id"], campaign=campaign,
                 revision_before=campaign["revision"], revision_after=campaign["revision"],
                 detail={"approved": preview_token, "recipients": current.recipients,
                         "notBy": excluded, "acceptFallback": accept_fallback,
                         "untranslated": current.untranslated, "published": gated(campaign),
                         **({"deliverBy": deadline[0], "acceptLate": deadline[1]} if deadline[0] else {}),
                         })  # fmt: skip
    actions = tx.run(_ACTIONS, campaignId=campaign["id"]).single(strict=True)["actions"]
    if gated(campaign):  # the approver saw exactly this revision: it is the one people see now
        promote(tx, campaign, now=now)
    emit_event(tx, graph, "approval.granted", campaign, now,
               **approval_event(",".join(sorted(actions)), current.recipients, approver))  # fmt: skip
    node = dict(record["approval"])
    return Approved(
        campaign_id=campaign["id"], preview_token=preview_token, approved_by=node["approvedBy"],
        approved_at=node["approvedAt"], recipients=current.recipients, accept_fallback=accept_fallback,
        untranslated=current.untranslated,
    )  # fmt: skip


def _shown_unchanged(tx: Tx, campaign: dict[str, Any], preview_token: str, current: Reviewed) -> bool:
    """A gated campaign's ``publish`` request whose in-app card and its members are as requested: the
    whole preview may have moved since (a send in flight skips whom it reached), what members see has not."""
    if not gated(campaign):
        return False
    record = tx.run(_PINNED_SHOWN, campaignId=campaign["id"], previewToken=preview_token).single()
    return record is not None and record["shown"] == current.shown_token


def _approve_shown(
    tx: Tx,
    graph: Graph,
    *,
    campaign: dict[str, Any],
    preview_token: str,
    current: Reviewed,
    excluded: list[str],
    approver: str,
    now: datetime,
    audit: AuditContext | None,
) -> Approved:
    """A ``publish`` request approved for what members see alone: the revision is shown; no send is
    approved (the whole preview moved, so no dispatch could use it)."""
    record_audit(tx, audit, target_type="campaign", target_id=campaign["id"], campaign=campaign,
                 revision_before=campaign["revision"], revision_after=campaign["revision"],
                 detail={"approved": preview_token, "inApp": current.in_app, "notBy": excluded,
                         "published": True})  # fmt: skip
    promote(tx, campaign, now=now)
    emit_event(tx, graph, "approval.granted", campaign, now,
               **approval_event("publish", current.in_app, approver))  # fmt: skip
    return Approved(
        campaign_id=campaign["id"], preview_token=preview_token, approved_by=approver,
        approved_at=format_ts(now), recipients=current.in_app,
    )  # fmt: skip


_REQUESTED_DEADLINE = (
    "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId, previewToken: $previewToken}) "
    "WHERE r.deliverBy IS NOT NULL RETURN r.deliverBy AS deliverBy, r.acceptLate AS acceptLate LIMIT 1"
)


def _requested(tx: Tx, campaign_id: str, preview_token: str) -> tuple[str | None, bool]:
    """The deadline a held send of this preview asked for: what its approval pins, unless told otherwise."""
    row = tx.run(_REQUESTED_DEADLINE, campaignId=campaign_id, previewToken=preview_token).single()
    return (None, False) if row is None else (row["deliverBy"], bool(row["acceptLate"]))


def approve_dispatch(
    graph: Graph,
    *,
    campaign_id: str,
    preview_token: str,
    approver: str,
    now: datetime,
    settings: DispatchSettings,
    audit: AuditContext | None = None,
    accept_fallback: bool = False,
    deadline: tuple[str | None, bool] | None = None,
) -> Approved:
    """Approve the send of exactly this preview (``approval.py``): verified under the campaign lock, so
    the preview the approver saw is the campaign's at the approval's commit (``locked_preview.py``).
    ``accept_fallback`` approves a ``missing_translation`` preview as it is (its readers get the base
    content) and is pinned, as is ``deadline`` (``deadline.pin``: deliverBy and acceptLate; None: the
    one the held send asked), which the send must then ask as approved."""
    args: dict[str, Any] = {"campaign_id": campaign_id, "now": now, "settings": settings}

    def tx_fn(tx: Tx, read: _Computed | None) -> Approved:
        locked = lock_campaign(tx, campaign_id)
        if locked is None:
            raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
        still_current(read, locked)
        computed = read or compute_preview(tx, **args)
        preview = computed.preview
        blocked = preview.blocked_reason
        fallback = blocked == "missing_translation"
        # A gated campaign's approval shows its revision in the app, whether or not it can be sent.
        if blocked is not None and not (accept_fallback and fallback) and (fallback or not gated(locked)):
            raise BadRequest(why_blocked(blocked))
        asked = deadline if deadline is not None else _requested(tx, campaign_id, preview_token)
        return record_approval(
            tx, graph, campaign=locked, preview_token=preview_token, current=reviewed(computed),
            accept_fallback=accept_fallback and blocked == "missing_translation", approver=approver,
            now=now, audit=audit, deadline=asked,
        )  # fmt: skip

    return confirmed(graph, tx_fn, compute_preview, args, action="approval")
