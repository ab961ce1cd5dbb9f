"""Two-person approval of large sends.

Under a tenant's policy ``approval: {minRecipients: N}``, a dispatch or schedule whose preview reaches N
recipients or more needs ``campaigns.approveDispatch`` first, by a publisher the approval counts for
(``approval_people.py``: not a requester, not anyone who changed the campaign since its last approved
send; people, so an API key is its minter) and who does not then dispatch it. Any other approver is
refused FORBIDDEN at approval, naming who may approve: nothing is recorded that dispatch would refuse.
An approval pins one preview token, and the token digests the definition, its revision, every
recipient and their languages (``dispatch.py``), so any change since voids it: the dispatch then
answers CONFLICT naming the stale approval. It also pins ``acceptFallback`` (readers without their
language get the base content: the send needs no second flag) and the reach per channel it showed,
which caps the walk (``approval_reach.py``), and a deadline (``deliverBy``, ``acceptLate``): a send
asking another is refused as stale. Checks run inside the dispatch's own locked transaction,
against the preview computed there, so no edit can slip between approval and send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from campaign_engine.campaigns.definitions import emit_event
from campaign_engine.campaigns.sending.approval_people import not_by, who_may_approve
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import Conflict, Forbidden
from campaign_engine.domain.tenancy import CampaignRefOut, campaign_ref
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "Approval",
    "ApprovalAction",
    "ApprovalMissing",
    "ApprovalPolicy",
    "ApprovalStale",
    "Approved",
    "Reviewed",
    "approval_event",
    "check_approval",
    "fallback_approved",
    "gated",
    "policy_of",
    "promote",
    "reach_cap",
    "record_refusal",
    "request_publish",
]

ApprovalAction = Literal["publish", "dispatch", "schedule", "resume"]
_APPROVALS = "approval_list"  # cypher/sending/approval_list.cypher
_CONSUME = "MATCH (x:DispatchApproval {campaignId: $campaignId}) DELETE x"
# A refused send becomes a request (one per campaign and preview); the dispatch that uses an approval
# closes the campaign's requests.
_REQUEST = "approval_request"  # cypher/sending/approval_request.cypher
_CLOSE_REQUESTS = "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId}) DELETE r"
# The approved revision a gated campaign shows (approval_publish.py): the current one, once approved.
_PROMOTE = (
    "MATCH (c:Campaign {id: $id}) SET c.shownDefinition = c.definition, c.shownVersion = c.updatedAt, "
    "c.shownSince = $now"
)
_CLOSE_PUBLISH = "MATCH (r:DispatchApprovalRequest {campaignId: $id, action: 'publish'}) DELETE r"
# The tenant record's policy (tenants.update), read on every dispatch: a policy just set applies at once.
_POLICY = "MATCH (t:Tenant {tenantId: $tenantId}) RETURN t.approval AS approval"


class ApprovalMissing(Forbidden):
    """The policy applies and no usable approval is there (kept in the trail as a refusal). With
    ``request``, the refused preview becomes a request a second publisher sees (``awaiting``)."""

    def __init__(self, message: str, *, request: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.request = request


class ApprovalStale(Conflict):
    """An approval exists, for a preview that is no longer the campaign's."""


@dataclass(frozen=True)
class ApprovalPolicy:
    min_recipients: int


@dataclass(frozen=True)
class Reviewed:
    """What a preview showed, as an approval pins it: its token, its recipients (distinct, and per
    walked channel) and the readers who get the base content, by their language."""

    token: str
    recipients: int
    shown_token: str = ""
    """The token of who sees the in-app card alone: what a ``publish`` request's approval needs unchanged."""
    reach: dict[str, int] = field(default_factory=dict)
    untranslated: dict[str, int] = field(default_factory=dict)
    in_app: int = 0
    """Members who see its in-app card: what a ``publish`` request counts."""


class Approved(CamelModel):
    campaign_id: CampaignRefOut
    preview_token: str
    approved_by: str
    approved_at: str
    recipients: int
    accept_fallback: bool = False
    untranslated: dict[str, int] = Field(
        default_factory=dict, description="readers who get the base content, by their language"
    )


@dataclass(frozen=True)
class Approval:
    """What a dispatch under the policy was approved with, for its Dispatch records."""

    approved_by: str
    approved_at: str
    accept_fallback: bool = False
    reach: dict[str, int] = field(default_factory=dict)


def reach_cap(policy: ApprovalPolicy | None, approval: Approval | None, channel: str) -> int | None:
    """How many recipients a Dispatch on ``channel`` may reach (``delivery/approval_reach.py``): under
    the policy, what its approval showed there, or, unapproved, one less than the policy's threshold."""
    if policy is None:
        return None
    return approval.reach.get(channel, 0) if approval is not None else policy.min_recipients - 1


def gated(node: dict[str, Any]) -> bool:
    """The campaign shows an approved revision (``shownVersion`` set, maybe to none yet)."""
    return node.get("shownVersion") is not None


def promote(tx: Tx, node: dict[str, Any], *, now: datetime) -> None:
    """The campaign's current revision becomes the one it shows; its ``publish`` requests close."""
    tx.run(_PROMOTE, id=node["id"], now=format_ts(now)).consume()
    tx.run(_CLOSE_PUBLISH, id=node["id"]).consume()


def approval_event(action: str, recipients: int, person: str | None, **more: Any) -> dict[str, Any]:
    """The data of an ``approval.requested`` / ``approval.granted`` event (ids and counts only)."""
    return {"action": action, "recipients": recipients, "by": person, **more}


def policy_of(graph: Graph, tenant_id: str) -> ApprovalPolicy | None:
    def tx_fn(tx: Tx) -> str | None:
        record = tx.run(_POLICY, tenantId=tenant_id).single()
        return None if record is None else record["approval"]

    stored = graph.read(tx_fn)
    return None if not stored else ApprovalPolicy(min_recipients=int(json.loads(stored)["minRecipients"]))


def request_publish(tx: Tx, node: dict[str, Any], current: Reviewed, *, audit: AuditContext | None) -> None:
    """A change of a gated live campaign held for a second publisher, as a ``publish`` request."""
    person, at = (audit.actor, audit.at) if audit else (None, None)
    tx.run(
        statement(_REQUEST), campaignId=node["id"], requestedBy=person, requestedAt=at,
        previewToken=current.token, shownToken=current.shown_token, recipients=current.in_app,
        revision=node["revision"], action="publish",
        acceptFallback=False, untranslated=json.dumps(current.untranslated, sort_keys=True),
        deliverBy=None, acceptLate=False,
    ).consume()  # fmt: skip
    record_audit(tx, audit, target_type="campaign", target_id=node["id"], campaign=node,
                 revision_before=node["revision"], revision_after=node["revision"],
                 detail={"held": "publish", "inApp": current.in_app,
                         "previewToken": current.token})  # fmt: skip


def _approvals(tx: Tx, campaign_id: str) -> list[dict[str, Any]]:
    return [dict(row["approval"]) for row in tx.run(statement(_APPROVALS), campaignId=campaign_id)]


def fallback_approved(tx: Tx, *, campaign_id: str, token: str) -> bool:
    """An approval of exactly this preview accepted its fallback readers: the send needs no flag."""
    return any(a["previewToken"] == token and a.get("acceptFallback") for a in _approvals(tx, campaign_id))


def check_approval(
    tx: Tx,
    *,
    policy: ApprovalPolicy | None,
    campaign: dict[str, Any],
    expected_token: str | None,
    current: Reviewed,
    dispatcher: str | None,
    action: ApprovalAction = "dispatch",
    accept_fallback: bool = False,
    deadline: tuple[str | None, bool] = (None, False),
) -> Approval | None:
    """Inside the dispatch's lock, after its token check: None when the policy does not apply; the
    approval it goes out with; or FORBIDDEN / CONFLICT naming what is missing. The approval is used up."""
    if policy is None:
        return None
    if expected_token is None:
        raise ApprovalMissing(
            "this tenant requires approval of large sends: confirm a reviewed preview with "
            "expectedPreviewToken"
        )
    if current.recipients < policy.min_recipients:
        return None
    approvals = _approvals(tx, campaign["id"])
    approval = next((a for a in approvals if a["previewToken"] == current.token), None)
    ref = campaign_ref(campaign["id"])
    if approval is None and approvals:
        raise ApprovalStale(
            f"the approval of {ref} by {approvals[0]['approvedBy']} is stale: the campaign changed since it "
            "was approved; preview again and have the new token approved (campaigns.approveDispatch)"
        )
    if approval is None:
        others = not_by(tx, campaign)
        excluded = ([] if dispatcher is None else [dispatcher]) + [p for p in others if p != dispatcher]
        raise ApprovalMissing(
            f"a send to {current.recipients} recipients needs approval (campaigns.approveDispatch) by "
            f"{who_may_approve(excluded)}: this tenant's policy is {policy.min_recipients} or more; "
            "waiting for another publisher",
            request={
                "previewToken": current.token,
                "shownToken": current.shown_token,
                "recipients": current.recipients,
                "revision": campaign["revision"],
                "action": action,
                "acceptFallback": accept_fallback,
                "untranslated": json.dumps(current.untranslated, sort_keys=True),
                "deliverBy": deadline[0],
                "acceptLate": deadline[1],
            },
        )
    pinned = (approval.get("deliverBy"), bool(approval.get("acceptLate")))
    if pinned != deadline:  # the deadline, and lateness accepted, are part of what was approved
        raise ApprovalStale(
            f"the approval of {ref} by {approval['approvedBy']} pinned deliverBy {_spoken(pinned)}; this "
            f"send asks {_spoken(deadline)}: send with what was approved, or have this approved"
        )
    if approval["approvedBy"] == dispatcher:
        raise ApprovalMissing(
            "approval needs a second publisher: you approved this send, another must dispatch it"
        )
    tx.run(_CONSUME, campaignId=campaign["id"]).consume()
    tx.run(_CLOSE_REQUESTS, campaignId=campaign["id"]).consume()
    return Approval(
        approved_by=approval["approvedBy"], approved_at=approval["approvedAt"],
        accept_fallback=bool(approval.get("acceptFallback")), reach=json.loads(approval.get("reach") or "{}"),
    )  # fmt: skip


def _spoken(deadline: tuple[str | None, bool]) -> str:
    return f"{deadline[0] or 'none'}{' with acceptLate' if deadline[1] else ''}"


def record_refusal(
    graph: Graph, audit: AuditContext | None, *, campaign_id: str, refused: ApprovalMissing | ApprovalStale
) -> None:
    """A dispatch the policy refused, in the trail, and (for a missing approval) as a request awaiting a
    second publisher: its own transaction, since the refused one rolled back."""
    request = refused.request if isinstance(refused, ApprovalMissing) else None
    if audit is None and request is None:
        return

    def tx_fn(tx: Tx) -> None:
        detail = {"refused": str(refused)}
        record_audit(tx, audit, target_type="campaign", target_id=campaign_id, detail=detail)
        if request is not None:
            person = audit.actor if audit else None
            row = tx.run(
                statement(_REQUEST), campaignId=campaign_id, requestedBy=person,
                requestedAt=audit.at if audit else None, **request,
            ).single()  # fmt: skip
            if row is not None and row["created"] and row["at"]:
                emit_event(tx, graph, "approval.requested", dict(row["campaign"]), parse_ts(row["at"]),
                           **approval_event(request["action"], request["recipients"], person))  # fmt: skip

    graph.write(tx_fn)
