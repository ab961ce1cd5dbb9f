"""A scheduled send's deadline: judged when it is scheduled (as if it started at ``sendAt``) and again
when it fires, from the state then (recipients added, a lane's backlog, a rate measured meanwhile).
A per-recipient schedule is judged zone by zone from each zone's own local start.

A schedule whose deadline can no longer be met when it fires fails with the verdict's words, unless
it was scheduled with ``acceptLate``; one that can is paced to it, and keeps its forecast like a
dispatch confirmed then (``getDispatch``'s live estimate, the ``dispatch.late`` check).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from campaign_engine.campaigns.sending.deadline import (
    DeadlineVerdict,
    DeliverBy,
    judge,
    kept,
    read_deliver_by,
)
from campaign_engine.campaigns.sending.dispatch import _Computed, reviewed
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.plan import ChannelPlan, forecast
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.schedule import parse_wall_clock
from campaign_engine.graph.graph import Tx

__all__ = ["at_fire", "judged"]


def judged(
    tx: Tx,
    computed: _Computed,
    *,
    start: datetime,
    settings: DispatchSettings,
    deliver_by: DeliverBy,
    experiment: Experiment | None,
    local_time: str | None,
) -> tuple[DeadlineVerdict, dict[str, ChannelPlan]]:
    """The verdict on ``deliver_by`` for the reviewed send if it started at ``start``; ``local_time``: a
    per-recipient schedule's wall clock, each zone judged from its own start."""
    local = None if local_time is None else parse_wall_clock(local_time)
    plans = forecast(tx, campaign=computed.campaign, counts=reviewed(computed).reach, zones=computed.zones,
                     pace=settings.pace, now=start, experiment=experiment, local_start=local)  # fmt: skip
    return judge(campaign=computed.campaign, plans=plans, zones=computed.zones, pace=settings.pace, now=start,
                 deliver_by=deliver_by, experiment=experiment, local_start=local)  # fmt: skip


def at_fire(
    tx: Tx,
    computed: _Computed,
    first: Mapping[str, Any],
    *,
    now: datetime,
    settings: DispatchSettings,
    experiment: Experiment | None,
) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """(why it must fail, or None; per channel what its Dispatch keeps as it starts)."""
    if not first.get("deliverBy"):
        return None, {}
    deliver_by = read_deliver_by(str(first["deliverBy"]))
    accept = bool(first.get("acceptLate"))
    verdict, plans = judged(tx, computed, start=now, settings=settings, deliver_by=deliver_by,
                            experiment=experiment, local_time=first.get("sendLocalTime"))  # fmt: skip
    if not verdict.met and not accept:
        return f"{verdict.message}; scheduled without acceptLate, so nothing was sent", {}
    return None, {ch: {**plan.stored(), **kept(verdict, deliver_by, accept_late=accept, channel=ch)}
                  for ch, plan in plans.items()}  # fmt: skip
