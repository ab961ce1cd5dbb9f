"""An approval covers the reach it showed: a walk never sends past its Dispatch's ``reachCap``.

Under a tenant's approval policy each Dispatch carries ``reachCap`` (``campaigns/sending/approval.py``:
the approved preview's recipients on its channel, or the policy's threshold less one for a send too
small to need approval). A live segment can grow while the walk goes on, so before a page is enqueued
the walk asks ``over_reach``; past the cap the Dispatch pauses before that page, with
``pauseCode: approval_exceeded`` and the counts, in one transaction with its audit entry and the
``dispatch.paused`` event. ``campaigns.resumeDispatch`` goes on only after a new approval.

The email walk asks inside its claim transaction, which then rolls back (``OverReach``): nothing of
the page is claimed, and the walk pauses as the notify walk does.
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

__all__ = ["OverReach", "over_reach", "pause_over_reach"]

_PAUSE = "approval_reach_pause"  # cypher/delivery/approval_reach_pause.cypher


def over_reach(dispatch: Mapping[str, Any], page: int, *, in_flight: int = 0) -> int | None:
    """The reach this page would bring the Dispatch to, when that is past its cap; else None.

    Reached so far: what earlier pages enqueued less the email claims given back on throttling (a
    throttled recipient is claimed again later, and counted then), plus ``in_flight``: pages this walk
    claimed whose record has not committed yet (counted twice if it has: the walk then stops early
    and its successor, with nothing in flight, asks again exactly)."""
    cap = dispatch.get("reachCap")
    reached = int(dispatch.get("enqueued") or 0) - int(dispatch.get("throttled") or 0)
    reach = reached + in_flight + page
    return reach if cap is not None and page and reach > int(cap) else None


class OverReach(Exception):
    """Raised in a claim transaction whose page would cross the Dispatch's reach cap: the claim rolls
    back, and the walk pauses (``pause_over_reach``) with what the claim read."""

    def __init__(self, reach: int, dispatch: Mapping[str, Any], campaign: Mapping[str, Any]) -> None:
        super().__init__(f"approval_exceeded: the next page would reach {reach}")
        self.reach, self.dispatch, self.campaign = reach, dispatch, campaign


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
