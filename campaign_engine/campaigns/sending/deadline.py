"""A send's deadline (``deliverBy``): whether the forecast meets it, the pace that does, and who is late.

``dispatch`` and ``scheduleDispatch`` accept ``deliverBy``: an instant, or a wall-clock time in one zone
or in each recipient's own (``{"localTime": ..., "perRecipient": true}``, as a local ``sendAt``). The
judge walks the forecast's model (``plan.py``: the rate and its source, this send's share of its lane,
the test wave and its decision, quiet hours in the recipients' zones, waves of a page) recipient group
by recipient group, and counts who would get it after their own deadline.

Pacing: the only thing it moves is the pause between waves. It keeps the configured
``CAMPAIGN_DISPATCH_DELAY_SECONDS`` when that meets the deadline, else the longest pause that does, down
to ``CAMPAIGN_DEADLINE_MIN_DELAY_SECONDS``; it never sends faster than the rate (measured or the
configured limit), so a deadline the rate cannot meet is refused (PRECONDITION_FAILED) naming the
binding constraint and how many recipients would be late, unless the caller accepts lateness
(``acceptLate``), and then it sends at the shortest pause. Within a group, recipients of every zone are
assumed spread evenly through the group's pages (the walk's order is the membership index's, not the
zones'), so a count may be off by a page's share; quiet hours and a decision time are exact.

The walk that counts who is late and the pause it paces to are ``deadline_walk.py``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from campaign_engine.campaigns.sending.deadline_walk import (
    Channel,
    Deadline,
    DeliverBy,
    LateKind,
    paced_delay,
    scaled,
)
from campaign_engine.campaigns.sending.plan import ChannelPlan, Pace, Shaping
from campaign_engine.campaigns.sending.schedule_input import WallClockAt
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, CampaignError
from campaign_engine.domain.priority import skips_pacing_rules
from campaign_engine.domain.schedule import QuietHours, WallClock, known_zone, parse_wall_clock
from campaign_engine.domain.types import format_ts, parse_ts

__all__ = [
    "Deadline",
    "DeadlineVerdict",
    "DeliverBy",
    "LateReason",
    "PreconditionFailed",
    "check_deliver_by",
    "judge",
    "kept",
    "meet",
    "pin",
    "read_deliver_by",
    "refuse_late",
]


class PreconditionFailed(CampaignError):
    """The send cannot keep a promise its caller asked for (a deadline); nothing was written."""

    code = "PRECONDITION_FAILED"


class LateReason(CamelModel):
    kind: LateKind
    recipients: int
    message: str


class DeadlineVerdict(CamelModel):
    deliver_by: str
    """How the deadline reads: ``2026-12-07 07:00 UTC``, ``07:00 in their time``."""
    latest_at: str
    """The last recipient's deadline (the instant for one; the latest zone's for local times)."""
    met: bool
    late: int
    """Recipients who would get it after their deadline, over the walked channels."""
    late_by_channel: dict[str, int] = {}
    late_by_zone: dict[str, int] = {}
    """Recipients who would be late, per IANA zone (their own, else the campaign's), most first."""
    binding: LateKind | None = None
    """What makes most of them late."""
    reasons: list[LateReason] = []
    wave_delay_seconds: dict[str, int] = {}
    """Per channel, the pause between waves the send keeps to meet it (the configured one if it does)."""
    finishes_at: dict[str, str] = {}
    message: str


def kept(verdict: DeadlineVerdict, value: DeliverBy, *, accept_late: bool, channel: str) -> dict[str, Any]:
    """What a Dispatch keeps of its deadline: the caller's spelling (getDispatch answers it), the last
    recipient's deadline (the live check's), whether lateness was accepted, the late count the verdict
    foresaw on this channel and the pause between waves it paced to (the page walks keep to it)."""
    spelled = pin(value, accept_late)[0]
    return {"deliverBy": spelled, "deliverByLabel": verdict.deliver_by, "deliverByAt": verdict.latest_at,
            "acceptLate": accept_late, "lateForecast": verdict.late_by_channel.get(channel, 0),
            "waveDelaySeconds": verdict.wave_delay_seconds.get(channel)}  # fmt: skip


def meet(
    *,
    campaign: Mapping[str, Any],
    plans: dict[str, ChannelPlan],
    zones: Mapping[str, Counter[str]],
    pace: Pace,
    now: datetime,
    deliver_by: DeliverBy | None,
    accept_late: bool,
    experiment: Experiment | None = None,
) -> tuple[dict[str, ChannelPlan], dict[str, dict[str, Any]], dict[str, Any]]:
    """A confirmation's deadline: the plans paced to it, what each channel's Dispatch keeps, and what
    the audit entry records (``acceptLate``, the late count); PRECONDITION_FAILED when refused."""
    if deliver_by is None:
        return plans, {}, {}
    verdict, paced = judge(campaign=campaign, plans=plans, zones=zones, pace=pace, now=now,
                           deliver_by=deliver_by, experiment=experiment)  # fmt: skip
    refuse_late(verdict, accept_late=accept_late)
    keep = {ch: kept(verdict, deliver_by, accept_late=accept_late, channel=ch) for ch in paced}
    return paced, keep, {"deliverBy": verdict.deliver_by, "acceptLate": accept_late, "late": verdict.late}


def pin(value: DeliverBy | None, accept_late: bool) -> tuple[str | None, bool]:
    """What an approval pins of a send's deadline: its spelling and whether lateness is accepted."""
    if value is None:
        return None, False  # lateness of no deadline accepts nothing
    return (
        format_ts(value) if isinstance(value, datetime) else value.model_dump_json(by_alias=True)
    ), accept_late


def read_deliver_by(spelled: str) -> DeliverBy:
    """The deadline a Dispatch kept (``kept``), as the caller gave it."""
    if spelled.startswith("{"):
        return WallClockAt.model_validate_json(spelled)
    return parse_ts(spelled)


def refuse_late(verdict: DeadlineVerdict, *, accept_late: bool) -> None:
    """PRECONDITION_FAILED naming the binding constraint and the late count, unless lateness is accepted."""
    if not verdict.met and not accept_late:
        raise PreconditionFailed(f"{verdict.message}. Nothing was sent: choose a later deliverBy, or send "
                                 "with acceptLate")  # fmt: skip


def judge(
    *,
    campaign: Mapping[str, Any],
    plans: Mapping[str, ChannelPlan],
    zones: Mapping[str, Counter[str]],
    pace: Pace,
    now: datetime,
    deliver_by: DeliverBy,
    experiment: Experiment | None = None,
    local_start: WallClock | None = None,
) -> tuple[DeadlineVerdict, dict[str, ChannelPlan]]:
    """The verdict on ``deliverBy`` for a send starting at ``now`` with the forecast ``plans``, and the
    plans as paced to meet it (a ``deadline`` shaping where the pause was shortened). ``local_start``:
    a per-recipient schedule's wall clock, each zone's own start."""
    deadline = Deadline.of(deliver_by)
    definition = json.loads(campaign["definition"])
    window = (
        None
        if skips_pacing_rules(str(campaign.get("priority") or "normal"))
        else definition.get("quietHours")
    )
    quiet = None if not window else QuietHours(*(parse_wall_clock(f"2000-01-01T{window[k]}").local.time()
                                                 for k in ("start", "end")))  # fmt: skip
    fallback = known_zone(str(definition.get("timeZone") or "")) or ZoneInfo("UTC")
    latest = deadline.instant
    late_by: dict[str, int] = {}
    kinds: Counter[LateKind] = Counter()
    by_zone: Counter[str] = Counter()
    delays: dict[str, int] = {}
    finishes: dict[str, str] = {}
    paced: dict[str, ChannelPlan] = {}
    for channel, plan in plans.items():
        n = plan.recipients
        seen: Counter[ZoneInfo] = Counter()
        for name, k in zones.get(channel, Counter()).items():
            seen[known_zone(name) or fallback] += k
        if n > sum(seen.values()):
            seen[fallback] += n - sum(seen.values())
        seen = scaled(seen, n)
        tested = 0 if experiment is None else min(n, round(n * experiment.test_share))
        decide = None if experiment is None else now + timedelta(seconds=experiment.decide_after_seconds)
        ch = Channel(n=n, rate=plan.rate, page=pace.page(channel), zones=seen, quiet=quiet, tested=tested,
                     decide=decide, local=local_start)  # fmt: skip
        delay, tally = paced_delay(
            ch, deadline, now=now, most=pace.wave_delay, least=min(pace.min_delay, pace.wave_delay)
        )
        if deadline.local is not None and seen:
            last = max(deadline.at(z) for z in seen)
            latest = last if latest is None else max(latest, last)
        late_by[channel] = sum(tally.late.values())
        kinds.update(tally.late)
        by_zone.update({zone.key: k for zone, k in tally.zones.items() if k})
        delays[channel] = delay
        finishes[channel] = format_ts(tally.finish) if n else plan.finishes_at
        shaped = list(plan.shaped_by)
        if delay < pace.wave_delay and n:
            saved = (math.ceil(n / ch.page) - 1) * (pace.wave_delay - delay)
            why = f"waves {delay} s apart instead of {pace.wave_delay} s to deliver by {deadline.label}"
            shaped.append(Shaping(kind="deadline", adds_seconds=-saved, message=why))
        paced[channel] = plan.model_copy(update={"finishes_at": finishes[channel], "shaped_by": shaped})
    late = sum(late_by.values())
    reasons = [LateReason(kind=kind, recipients=count, message=_why(kind, count, window, plans, delays))
               for kind, count in kinds.most_common() if count]  # fmt: skip
    head = f"{late:,} recipients would get it after {deadline.label}"
    if by_zone and deadline.local is not None:  # each zone has its own deadline: say whose it is
        head += " (" + ", ".join(f"{k:,} in {zone}" for zone, k in by_zone.most_common()) + ")"
    message = f"{head}: " + "; ".join(r.message for r in reasons) if reasons else (
        f"every recipient gets it by {deadline.label}")  # fmt: skip
    verdict = DeadlineVerdict(
        deliver_by=deadline.label, latest_at=format_ts(latest or now), met=late == 0, late=late,
        late_by_channel=late_by, late_by_zone=dict(by_zone.most_common()),
        binding=reasons[0].kind if reasons else None, reasons=reasons,
        wave_delay_seconds=delays, finishes_at=finishes, message=message,
    )  # fmt: skip
    return verdict, paced


def _why(
    kind: LateKind,
    count: int,
    window: Mapping[str, str] | None,
    plans: Mapping[str, ChannelPlan],
    delays: Mapping[str, int],
) -> str:
    if kind == "quiet_hours" and window:
        return f"quiet hours end at {window['end']} for {count:,} of them"
    if kind == "test_wave":
        return f"{count:,} of them wait for the test wave's decision"
    if kind == "already_passed":
        return f"the deadline has already passed in the zone of {count:,} of them"
    rates = ", ".join(f"{ch} {p.rate:g}/s ({p.rate_source} rate), waves {delays[ch]} s apart"
                      for ch, p in plans.items())  # fmt: skip
    return f"the sending rate ({rates}) reaches {count:,} of them too late"


def check_deliver_by(
    deliver_by: DeliverBy | None, *, start: datetime, local_start: str | None = None
) -> None:
    """BAD_REQUEST when the deadline is no deadline: an instant (or one zone's time) not after the start,
    or a time in each recipient's own zone not after a per-recipient ``local_start`` (the same wall
    clock in every zone: no zone could meet it)."""
    if deliver_by is None:
        return
    deadline = Deadline.of(deliver_by)
    if deadline.instant is not None and deadline.instant <= start:
        raise BadRequest(
            "deliverBy is not after the send starts",
            issues=[{"path": ["deliverBy"], "message": "must be after the send starts"}],
        )
    local_passed = local_start is not None and (
        deadline.local is not None and deadline.local <= parse_wall_clock(local_start).local
    )
    if local_passed or (deadline.local is not None and deadline.at(ZoneInfo("Etc/GMT+12")) <= start):
        raise BadRequest(
            "deliverBy has passed in every zone when the send starts",
            issues=[{"path": ["deliverBy"], "message": "must be after the send starts"}],
        )
