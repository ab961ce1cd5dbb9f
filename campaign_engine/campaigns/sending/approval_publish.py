"""What people see is an approved revision: in-app cards and web views under a tenant's approval policy.

Under ``approval: {minRecipients: N}`` a live campaign carries its approved revision beside its draft:
``shownDefinition`` (the definition JSON a second publisher approved), ``shownVersion`` (that
revision's updatedAt, the card cache's key; ``''`` while none is approved) and ``shownSince`` (when:
members added later wait for the next approval; self-enrolled ones do not). ``getMyCampaigns``, the
guardian cards, the live-segment cards and the web view serve that revision
(``cypher/engagement/my_campaigns.cypher``); a campaign without ``shownVersion`` serves its draft, as
without a policy.

A write that would make content visible takes ``definitions.shown_before`` into its own transaction
(going live: nothing shown yet; the first change of a campaign live before the policy: what it showed
so far), so nothing unapproved shows between its commit and ``review_publish``. That review, in the next
transaction under the campaign lock, shows the change at once when its in-app card reaches fewer than
N members (nothing needs a second person) and otherwise holds it as a ``publish`` request, approved
like any other with ``campaigns.approveDispatch``: an approval of a gated campaign's current preview
(``approve.py``) makes that revision the shown one (``promote``). The request also pins what
members see alone (the card and who sees it): a send walking meanwhile moves the whole preview, so an
approval of that part still shows the revision, and approves no send.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from campaign_engine.campaigns.definitions import emit_event, locked_campaign
from campaign_engine.campaigns.sending.approval import (
    ApprovalPolicy,
    approval_event,
    gated,
    promote,
    request_publish,
)
from campaign_engine.campaigns.sending.dispatch import compute_preview, reviewed
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["review_publish"]

# Members added since the shown revision's approval, not by themselves: they wait for an approval.
_GROWN = (
    "MATCH (c:Campaign {id: $id})<-[m:IN_CAMPAIGN_AUDIENCE]-() "
    "WHERE NOT m.selfEnrolled AND m.addedAt > c.shownSince RETURN count(*) > 0 AS grown"
)


def _changed(tx: Tx, node: dict[str, Any]) -> bool:
    if node.get("shownVersion") == "" or node.get("definition") != node.get("shownDefinition"):
        return True
    record = tx.run(_GROWN, id=node["id"]).single()
    return bool(record and record["grown"])


def review_publish(
    graph: Graph,
    *,
    campaign_id: str,
    policy: ApprovalPolicy | None,
    settings: DispatchSettings,
    now: datetime,
    audit: AuditContext | None,
) -> str | None:
    """After a write of a gated live campaign: ``"shown"`` when its change reaches fewer than the
    policy's threshold in the app (shown at once), ``"held"`` when it waits for a second publisher (a
    ``publish`` request, an ``approval.requested`` event), None when nothing changed what is shown."""
    if policy is None:
        return None

    def tx_fn(tx: Tx) -> str | None:
        node = locked_campaign(tx, campaign_id)
        if node.get("status") != "live" or not gated(node) or not _changed(tx, node):
            return None
        current = reviewed(compute_preview(tx, campaign_id=campaign_id, now=now, settings=settings))
        if current.in_app < policy.min_recipients:
            promote(tx, node, now=now)
            record_audit(tx, audit, target_type="campaign", target_id=campaign_id, campaign=node,
                         revision_before=node["revision"], revision_after=node["revision"],
                         detail={"shown": node["updatedAt"], "inApp": current.in_app})  # fmt: skip
            return "shown"
        request_publish(tx, node, current, audit=audit)
        emit_event(tx, graph, "approval.requested", node, now,
                   **approval_event("publish", current.in_app, audit.actor if audit else None))  # fmt: skip
        return "held"

    return graph.write(tx_fn)
