"""An approval covers the reach it showed: a walk never sends past its Dispatch's ``reachCap``.

Under a tenant's approval policy each Dispatch carries ``reachCap`` (``campaigns/sending/approval.py``:
the approved preview's recipients on its channel, or the policy's threshold less one for a send too
small to need approval). A live segment can grow while the walk goes on, so before a page is enqueued
the walk asks ``over_reach``; past the cap the Dispatch pauses before that page, with
``pauseCode: approval_exceeded`` and the counts, in one transaction with its audit entry and the
``dispatch.paused`` event. ``campaigns.resumeDispatch`` goes on only after a new approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaign_engine.delivery.health_guard import system_audit
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.graph.audit import record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_dispatch_events

__all__ = ["over_reach", "pause_over_reach"]

_PAUSE = "approval_reach_pause"  # cypher/delivery/approval_reach_pause.cypher


def over_reach(dispatch: Mapping[str, Any], page: int) -> int | None:
    """The reach this page would bring the Dispatch to, when that is past its cap; else None."""
    cap = dispatch.get("reachCap")
    reach = int(dispatch.get("enqueued") or 0) + page
    return reach if cap is not None and page and reach > int(cap) else None


def pause_over_reach(
    graph: Graph,
    job: PageJob,
    *,
    dispatch: Mapping[str, Any],
    campaign: Mapping[str, Any],
    reach: int,
    now: str,
) -> bool:
    """Pause before the page; True when this job held the cursor and paused."""
    approved = int(dispatch["reachCap"])
    message = (
        f"approval_exceeded: the approval covers {approved} recipients; the next page would reach {reach}"
    )
    audit = system_audit(job, campaign, at=now)  # drawn outside: a re-run writes the same entry
    wire = {"reason": "approval_exceeded", "approved": approved, "reach": reach}

    def tx_fn(tx: Tx) -> bool:
        done = tx.run(
            statement(_PAUSE), dispatchId=job.dispatch_id, cursor=job.cursor or "", now=now,
            message=message, approved=approved, reach=reach,
        ).single()  # fmt: skip
        if done is None:
            return False
        record_audit(tx, audit, target_type="dispatch", target_id=job.dispatch_id, campaign=dict(campaign),
                     revision_before=campaign.get("revision"), revision_after=campaign.get("revision"),
                     detail={"channel": job.channel, "cursor": job.cursor, **wire})  # fmt: skip
        record_dispatch_events(tx, graph, "dispatch.paused", [job.dispatch_id], now=now, **wire)
        return True

    return graph.write(tx_fn)
