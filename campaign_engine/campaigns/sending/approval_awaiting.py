"""The requests awaiting a second publisher, as ``campaigns.listAwaitingApproval`` and the console's
Approvals page show them: what each covers, who asked, who may approve (``approval.py`` decides), and
for a ``publish`` request what would change in what people see (``approval_publish.py``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from campaign_engine.campaigns.sending.approval import ApprovalAction
from campaign_engine.campaigns.sending.approval_people import not_by, who_may_approve
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.tenancy import CampaignRefOut
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["AwaitingApproval", "AwaitingList", "Change", "awaiting", "changes_of"]

_AWAITING = "approval_awaiting"  # cypher/sending/approval_awaiting.cypher


class AwaitingApproval(CamelModel):
    """A send a publisher asked for and the policy held back until a second publisher approves it;
    once approved it stays listed, naming who approved, until the send uses the approval."""

    campaign_id: CampaignRefOut
    name: str
    action: ApprovalAction = "dispatch"
    preview_token: str
    recipients: int
    requested_by: str | None
    requested_at: str | None
    changed_since: bool = Field(
        description="the campaign was edited after the request: approving it will be refused as stale"
    )
    untranslated: dict[str, int] = Field(
        default_factory=dict,
        description="readers who would get the base content, by their language: approve with "
        "acceptFallback to send it so",
    )
    accept_fallback: bool = Field(default=False, description="the requester asked to send the fallback")
    deliver_by: str | None = Field(
        default=None, description="the deadline the requester asked (an instant, or {localTime, ...} as JSON)"
    )
    accept_late: bool = Field(default=False, description="the requester asked to send although some are late")
    not_by: list[str] = Field(
        default_factory=list,
        description="people an approval would not count for: the requesters and everyone who changed "
        "the campaign since its last approved send",
    )
    may_approve: str = Field(default="another publisher", description="who may approve, in words")
    approved_by: str | None = Field(default=None, description="who approved the campaign's send, if anyone")
    approved_at: str | None = None
    approved_preview_token: str | None = Field(
        default=None, description="the preview approved: this request's, or a newer one after a change"
    )
    live_change: bool = Field(
        default=False,
        description="a publish request of a campaign whose members see an approved revision: a change, "
        "not its go-live",
    )
    changes: list[Change] = Field(
        default_factory=list,
        description="a publish request: the fields that differ from the revision people see, old -> new",
    )


class Change(CamelModel):
    """One top-level field of the definition that differs from the revision people see (JSON text)."""

    field: str
    old: str | None
    new: str | None


def changes_of(draft: str | None, shown: str | None) -> list[Change]:
    """What a ``publish`` request would change in what people see: each differing field, old -> new."""
    if draft is None:
        return []
    before, after = json.loads(shown or "{}"), json.loads(draft)
    return [
        Change(field=key, old=_text(before.get(key)), new=_text(after.get(key)))
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class AwaitingList(BaseModel):
    records: list[AwaitingApproval]


def awaiting(graph: Graph, *, tenant_id: str) -> AwaitingList:
    """The tenant's open requests, newest first (at most 200), each with who may approve it."""

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        rows = [row.data() for row in tx.run(statement(_AWAITING), tenantId=tenant_id)]
        for row in rows:
            campaign = {"id": row["campaignId"], "createdAt": row.pop("createdAt")}
            row["notBy"] = not_by(tx, campaign)
            row["mayApprove"] = who_may_approve(row["notBy"])
            row["untranslated"] = json.loads(row["untranslated"] or "{}")
            row["acceptFallback"] = bool(row["acceptFallback"])
            row["action"] = row["action"] or "dispatch"
            row["liveChange"] = row["action"] == "publish" and row["shown"] is not None
            row["changes"] = changes_of(row.pop("draft"), row.pop("shown"))
        return rows

    return AwaitingList(records=[AwaitingApproval.model_validate(row) for row in graph.read(tx_fn)])
