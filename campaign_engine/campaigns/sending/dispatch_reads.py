"""A Dispatch as admins and operators read it: its counters, schedule and progress (``getDispatch``,
``listDispatches``, the console, ``dispatch watch``). Writes live where they happen: ``dispatch.py``
creates Dispatches, the page walks and workers move them."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from campaign_engine.campaigns.sending.deadline_watch import behind
from campaign_engine.campaigns.sending.plan_live import LivePlan, live_plan
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.dispatch import DispatchStatus
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.reasons import DecisionReason, GuardRate
from campaign_engine.domain.tenancy import CampaignRefOut
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph

__all__ = [
    "ApprovalExceeded",
    "DeadlineOut",
    "DispatchPublic",
    "PauseReason",
    "TestDecision",
    "dispatch_from_node",
    "get_dispatch",
    "list_dispatches",
]

"""The API's models are read and written by their camelCase aliases; Python names work too."""


class PauseReason(CamelModel):
    """Why the health guard paused a Dispatch: the rate over its limit, and as a sentence."""

    rate: GuardRate
    value: float
    limit: float
    sample: int
    """Accepted emails (answered attempts, for ``rejection``) the rate is over."""
    message: str
    """Readable, e.g. ``hard_bounce_rate 0.03 > 0.02 (over 200)``."""


class ApprovalExceeded(CamelModel):
    """Why a walk paused under the approval policy: its next page would reach more people than its
    approval showed (``delivery/approval_reach.py``); resumeDispatch goes on after a new approval."""

    reason: Literal["approval_exceeded"] = "approval_exceeded"
    approved: int
    """The recipients the approval covers on this channel."""
    reach: int
    """The recipients the next page would have brought the walk to."""
    message: str


class VariantRateOut(CamelModel):
    variant_id: str
    numerator: int
    """Test recipients of this variant with the metric."""
    denominator: int
    """Test recipients of this variant the send reached (emailed, for ``emailClicked``)."""
    rate: float


class TestDecision(CamelModel):
    """The decision of a test wave: the winner, each variant's rate, who decided and when."""

    __test__ = False  # not a pytest class

    winner: str
    reason: DecisionReason | None = Field(
        default=None,
        description="why the winner won: highest_rate; tie (the first tied variant is sent); "
        "insufficient_evidence (no metric event in any arm, or an arm reached nobody: the first variant "
        "is sent); chosen (an admin's chooseVariant); null for a decision made before reasons were kept",
    )
    rates: list[VariantRateOut]
    decided_by: Annotated[str, Field(description="an admin's id, or system:test-wave")]
    decided_at: str


class DeadlineOut(CamelModel):
    """A send's deadline (``campaigns/sending/deadline.py``) and how it is keeping to it."""

    deliver_by: str | dict[str, Any]
    """As the caller gave it: an instant, or ``{localTime, timeZone | perRecipient}``."""
    label: str
    """How it reads: ``2026-12-07 07:00 UTC``, ``07:00 on 2026-12-07 in their time``."""
    latest_at: str
    """The last recipient's deadline (for local times, the latest of their zones')."""
    accept_late: bool
    late_forecast: int
    """Recipients of this channel the confirmation foresaw getting it late (accepted with acceptLate)."""
    wave_delay_seconds: int | None = None
    """The pause between waves it is paced to (null: the configured one)."""
    late_at: str | None = None
    """When the live estimate first fell behind the deadline (``dispatch.late`` was raised then)."""
    behind_seconds: int | None = None
    """While sending: how far the live estimate finishes past ``latestAt`` (null: on time or done)."""


class DispatchPublic(CamelModel):
    dispatch_id: str
    campaign_id: CampaignRefOut
    campaign_created_at: str
    channel: str
    status: DispatchStatus
    pages: int
    enqueued: int
    acknowledged: int
    rejected: int
    suppressed: int
    # Email dispatches: emailed = accepted by the provider; uncertain = claimed, fate unknown (an
    # operator must look; never retried); throttled = deferred by back-pressure, not an error.
    emailed: int = 0
    throttled: int = 0
    uncertain: int = 0
    # Both channels: recipients held back by CAMPAIGN_FREQUENCY_CAPS, each once; never retried by this
    # dispatch (delivery/frequency_cap.py).
    capped: int = 0
    cursor: str | None = None
    started_at: str | None = None
    """When it started sending; None while ``scheduled`` (and for a schedule that never fired)."""
    last_progress_at: str
    finished_at: str | None = None
    next_page_at: str | None = None
    last_error: str | None = None
    # Consecutive failed attempts at the page after `cursor` (CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES fails
    # the dispatch); pastErrors: the lastError of each failure a resumeDispatch cleared, oldest first.
    page_failures: int = 0
    past_errors: list[str] = []
    # Scheduled dispatches (campaigns/sending/schedule.py): when, how late it may still start, and what a
    # change since the confirmed preview does (hold for review, or send to the current recipients).
    send_at: str | None = None
    scheduled_at: str | None = None
    max_late_seconds: int | None = None
    on_change: str | None = None
    # A per-recipient schedule's local time (sendAt is then when the first zone, UTC+14,
    # reaches it). Members not yet ready (their local time, quiet hours) are read but wait: deferred and
    # missed (ready more than maxLateSeconds before the pass began) count the current walk of the
    # audience, `pass` numbers it (1 = the first), and nextPageAt says when the next pass starts.
    send_local_time: str | None = None
    per_recipient: bool = False
    deferred: int = 0
    missed: int = 0
    pass_number: Annotated[int, Field(alias="pass")] = 1
    # The second publisher who approved this send under the tenant's approval policy.
    approved_by: str | None = None
    approved_at: str | None = None
    # The health guard: email feedback counted on the Dispatch that sent it (first hard bounce
    # or complaint of each send), and, while `paused`, why and since when (resumeDispatch goes on).
    hard_bounces: int = 0
    complaints: int = 0
    paused_at: str | None = None
    pause_reason: PauseReason | ApprovalExceeded | None = None
    # The A/B test wave: the experiment this send runs, its phase (`testing`: only the test
    # wave is sent, the rest waits until nextPageAt = decideAt; `rest`: decided, everyone else gets only
    # the winner) and, once decided, the decision.
    experiment: Experiment | None = None
    phase: Literal["testing", "rest"] | None = None
    decide_at: str | None = None
    decision: TestDecision | None = None
    # The review's forecast kept at the confirmation, re-estimated from the progress so far (plan_live.py).
    plan: LivePlan | None = None
    # A deadline (deliverBy), its pace, and whether the send fell behind it.
    deadline: DeadlineOut | None = None


_GET = "dispatch_get"  # cypher/sending/dispatch_get.cypher

_LIST = "dispatch_list"  # cypher/sending/dispatch_list.cypher


def dispatch_from_node(node: dict[str, Any]) -> DispatchPublic:
    per_recipient = node.get("sendLocalTime") is not None
    reason: dict[str, Any] | None = None
    if node.get("status") == "paused" and node.get("pauseCode") == "approval_exceeded":
        reason = {
            "approved": node["pauseApproved"],
            "reach": node["pauseReach"],
            "message": node["pauseReason"],
        }
    elif node.get("status") == "paused" and node.get("pauseRate") is not None:
        reason = {
            "rate": node["pauseRate"],
            "value": node["pauseValue"],
            "limit": node["pauseLimit"],
            "sample": node["pauseSample"],
            "message": node["pauseReason"],
        }
    wire = {**node, "dispatchId": node["id"], "perRecipient": per_recipient, "pauseReason": reason,
            "experiment": json.loads(node["experiment"]) if node.get("experiment") else None,
            "decision": json.loads(node["decision"]) if node.get("decision") else None,
            "plan": live_plan(node), "deadline": _deadline(node)}  # fmt: skip
    return DispatchPublic.model_validate(wire)


def _deadline(node: dict[str, Any]) -> DeadlineOut | None:
    spelled = node.get("deliverBy")
    if not spelled:
        return None
    judged = behind(node) if node.get("status") == "sending" else None
    over = round(judged[1]) if judged is not None and judged[1] > 0 else None
    return DeadlineOut(
        deliver_by=json.loads(spelled) if spelled.startswith("{") else spelled, label=node["deliverByLabel"],
        latest_at=node["deliverByAt"], accept_late=bool(node.get("acceptLate")),
        late_forecast=int(node.get("lateForecast") or 0), wave_delay_seconds=node.get("waveDelaySeconds"),
        late_at=node.get("lateAt"), behind_seconds=over,
    )  # fmt: skip


def get_dispatch(graph: Graph, dispatch_id: str) -> DispatchPublic:
    rows = graph.read(
        lambda tx: [dict(r["dispatch"]) for r in tx.run(statement(_GET), dispatchId=dispatch_id)]
    )
    if not rows:
        raise NotFound(f"dispatch '{dispatch_id}' not found")
    return dispatch_from_node(rows[0])


def list_dispatches(graph: Graph, campaign_id: str) -> list[DispatchPublic]:
    rows = graph.read(
        lambda tx: [dict(r["dispatch"]) for r in tx.run(statement(_LIST), campaignId=campaign_id)]
    )
    return [dispatch_from_node(row) for row in rows]
