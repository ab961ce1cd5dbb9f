"""Two-person approval of large sends.

Under a tenant's policy ``approval: {minRecipients: N}``, a dispatch or schedule whose preview reaches N
recipients or more needs ``campaigns.approveDispatch`` first, by a publisher who is neither the one who
dispatches nor the campaign's last editor. An approval pins one preview token, and the token digests the
definition, its revision and every recipient (``dispatch.py``), so any change since voids it: the
dispatch then answers CONFLICT naming the stale approval. Checks run inside the dispatch's own locked
transaction, against the preview computed there, so no edit can slip between approval and send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import Conflict, Forbidden
from campaign_engine.domain.tenancy import CampaignRefOut, campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "Approval",
    "ApprovalMissing",
    "ApprovalPolicy",
    "ApprovalStale",
    "Approved",
    "AwaitingApproval",
    "AwaitingList",
    "awaiting",
    "check_approval",
    "last_editor",
    "policy_of",
    "record_approval",
    "record_refusal",
]

# The mutations that make someone the campaign's editor: what it says and who receives it.
_EDITS = ["campaigns.create", "campaigns.update", "campaigns.addAudience", "campaigns.removeAudience"]
_LAST_EDITOR = "approval_last_editor"  # cypher/sending/approval_last_editor.cypher
_APPROVALS = "approval_list"  # cypher/sending/approval_list.cypher
_APPROVE = "approval_approve"  # cypher/sending/approval_approve.cypher
_CONSUME = "MATCH (x:DispatchApproval {campaignId: $campaignId}) DELETE x"
# A refused send becomes a request (one per campaign and preview); the dispatch that uses an approval
# closes the campaign's requests.
_REQUEST = "approval_request"  # cypher/sending/approval_request.cypher
_CLOSE_REQUESTS = "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId}) DELETE r"
_AWAITING = "approval_awaiting"  # cypher/sending/approval_awaiting.cypher
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


class Approved(CamelModel):
    campaign_id: CampaignRefOut
    preview_token: str
    approved_by: str
    approved_at: str
    recipients: int


@dataclass(frozen=True)
class Approval:
    """What a dispatch under the policy was approved with, for its Dispatch records."""

    approved_by: str
    approved_at: str


def policy_of(graph: Graph, tenant_id: str) -> ApprovalPolicy | None:
    def tx_fn(tx: Tx) -> str | None:
        record = tx.run(_POLICY, tenantId=tenant_id).single()
        return None if record is None else record["approval"]

    stored = graph.read(tx_fn)
    return None if not stored else ApprovalPolicy(min_recipients=int(json.loads(stored)["minRecipients"]))


def last_editor(tx: Tx, campaign: dict[str, Any]) -> str | None:
    record = tx.run(
        statement(_LAST_EDITOR), campaignId=campaign["id"], createdAt=campaign["createdAt"], edits=_EDITS
    ).single()
    return None if record is None else str(record["actor"])


def record_approval(
    tx: Tx,
    *,
    campaign: dict[str, Any],
    preview_token: str,
    current_token: str,
    recipients: int,
    approver: str,
    now: datetime,
    audit: AuditContext | None,
) -> Approved:
    """Inside the campaign's lock: the approver saw exactly the current preview and did not author it."""
    if preview_token != current_token:
        raise Conflict("the preview changed since it was reviewed; preview again and approve the new token")
    editor = last_editor(tx, campaign)
    if editor == approver:
        raise Forbidden("approval needs a second publisher: you are the campaign's last editor")
    record = tx.run(
        statement(_APPROVE), campaignId=campaign["id"], previewToken=preview_token, approver=approver,
        now=format_ts(now), recipients=recipients,
    ).single()  # fmt: skip
    assert record is not None
    record_audit(tx, audit, target_type="campaign", target_id=campaign["id"], campaign=campaign,
                 revision_before=campaign["revision"], revision_after=campaign["revision"],
                 detail={"approved": preview_token, "recipients": recipients,
                         "lastEditor": editor})  # fmt: skip
    node = dict(record["approval"])
    return Approved(
        campaign_id=campaign["id"], preview_token=preview_token, approved_by=node["approvedBy"],
        approved_at=node["approvedAt"], recipients=recipients,
    )  # fmt: skip


def check_approval(
    tx: Tx,
    *,
    policy: ApprovalPolicy | None,
    campaign: dict[str, Any],
    expected_token: str | None,
    current_token: str,
    recipients: int,
    dispatcher: str | None,
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
    if recipients < policy.min_recipients:
        return None
    approvals = [dict(row["approval"]) for row in tx.run(statement(_APPROVALS), campaignId=campaign["id"])]
    current = next((a for a in approvals if a["previewToken"] == current_token), None)
    ref = campaign_ref(campaign["id"])
    if current is None and approvals:
        raise ApprovalStale(
            f"the approval of {ref} by {approvals[0]['approvedBy']} is stale: the campaign changed since it "
            "was approved; preview again and have the new token approved (campaigns.approveDispatch)"
        )
    if current is None:
        raise ApprovalMissing(
            f"a send to {recipients} recipients needs approval (campaigns.approveDispatch) by a second "
            f"publisher: this tenant's policy is {policy.min_recipients} or more",
            request={
                "previewToken": current_token,
                "recipients": recipients,
                "revision": campaign["revision"],
            },
        )
    if current["approvedBy"] == dispatcher:
        raise ApprovalMissing(
            "approval needs a second publisher: you approved this send, another must dispatch it"
        )
    tx.run(_CONSUME, campaignId=campaign["id"]).consume()
    tx.run(_CLOSE_REQUESTS, campaignId=campaign["id"]).consume()
    return Approval(approved_by=current["approvedBy"], approved_at=current["approvedAt"])


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
            tx.run(
                statement(_REQUEST), campaignId=campaign_id, requestedBy=audit.actor if audit else None,
                requestedAt=audit.at if audit else None, **request,
            ).consume()  # fmt: skip

    graph.write(tx_fn)


class AwaitingApproval(CamelModel):
    """A send a publisher asked for and the policy held back until a second publisher approves it."""

    campaign_id: CampaignRefOut
    name: str
    preview_token: str
    recipients: int
    requested_by: str | None
    requested_at: str | None
    changed_since: bool = Field(
        description="the campaign was edited after the request: approving it will be refused as stale"
    )


class AwaitingList(BaseModel):
    records: list[AwaitingApproval]


def awaiting(graph: Graph, *, tenant_id: str) -> AwaitingList:
    """The tenant's requests not yet approved, newest first (at most 200)."""
    rows = graph.read(lambda tx: [row.data() for row in tx.run(statement(_AWAITING), tenantId=tenant_id)])
    return AwaitingList(records=[AwaitingApproval.model_validate(row) for row in rows])
