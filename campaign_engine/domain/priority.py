"""A campaign's priority and the worker lane it sends in.

``critical`` (a school's "buses are delayed") is set by a publisher only, where the tenant allows it
(``allowCritical``), and skips quiet hours and frequency caps; it never skips opt-outs, suppressions,
the age policy or consent, which are not scheduling but permission. ``bulk`` yields to everything else.
The worker serves the lanes strictly in ``LANE_RANK`` order at page granularity, and tenants within a
lane by weighted fair share (``queue/lanes.py``, docs/lanes.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from campaign_engine.domain.camel import CamelModel

__all__ = [
    "DEFAULT_WEIGHT",
    "LANE_RANK",
    "JobLane",
    "Priority",
    "Weight",
    "campaign_lane",
    "job_lane",
    "priority_change",
    "skips_pacing_rules",
]

Priority = Literal["critical", "normal", "bulk"]

LANE_RANK: dict[str, int] = {"critical": 0, "normal": 1, "bulk": 2}
"""Lower is served first; ranks are what the local queue stores and orders by."""

DEFAULT_WEIGHT = 1
Weight = Annotated[int, Field(ge=1, le=100)]


class JobLane(CamelModel):
    """The lane a page job travels in: its priority and the tenant whose share it draws on. Absent on
    a job = ``normal`` of no tenant, the wire of jobs queued before lanes existed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    priority: Priority = "normal"
    tenant: Annotated[str, Field(max_length=64)] = ""
    weight: Weight = DEFAULT_WEIGHT


def job_lane(priority: str | None, tenant_id: str | None, weight: int | None) -> JobLane:
    """The lane of a campaign's jobs from its stored ``priority`` and its tenant's ``weight``."""
    chosen: Priority = priority if priority in ("critical", "bulk") else "normal"  # type: ignore[assignment]
    return JobLane(priority=chosen, tenant=tenant_id or "", weight=max(1, min(100, weight or DEFAULT_WEIGHT)))


def campaign_lane(campaign: Mapping[str, Any]) -> JobLane:
    """The lane of a campaign node as the page guard reads it (``tenantWeight``: its tenant's weight)."""
    return job_lane(campaign.get("priority"), campaign.get("tenantId"), campaign.get("tenantWeight"))


def skips_pacing_rules(priority: str | None) -> bool:
    """Quiet hours and frequency caps pace a send; a critical one goes at once. Permission rules
    (opt-outs, suppressions, the age policy, consent) are never skipped: they are not asked here."""
    return priority == "critical"


def priority_change(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """The audit detail of a campaign write that set or changed its priority (stored nodes: absent =
    normal); empty when it did not. Created critical or bulk: ``{"priority": {"from": None, "to": ...}}``."""
    was = "normal" if before is None else before.get("priority") or "normal"
    now = after.get("priority") or "normal"
    return {} if was == now else {"priority": {"from": None if before is None else was, "to": now}}
