"""The walk behind a deadline's verdict (``deadline.py``): each group of recipients sent from when it
may be, who is late by then and why, and the longest pause between waves that leaves nobody late.

Each zone is judged against its own deadline from its own start: a per-recipient schedule
(``sendAt: {localTime, perRecipient}``) starts each zone at its local time, quiet hours at their end.
The groups are walked as the worker walks pages (``pass_model.py``): a group whose time comes while a
pass runs is sent on that pass's later pages and the next pass's earlier ones. Within a group,
recipients of every zone are assumed spread evenly through its pages (the walk's order is the
membership index's, not the zones').
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from campaign_engine.campaigns.sending.pass_model import Stretch, finish, passes, sent_by
from campaign_engine.campaigns.sending.schedule_input import WallClockAt
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.schedule import QuietHours, WallClock, parse_wall_clock, ready_at

__all__ = ["Channel", "Deadline", "DeliverBy", "LateKind", "Tally", "paced_delay", "scaled", "walk"]

DeliverBy = UtcDatetime | WallClockAt
"""What ``deliverBy`` accepts: an RFC 3339 instant, or ``{localTime, timeZone | perRecipient}``."""

LateKind = Literal["quiet_hours", "test_wave", "already_passed", "rate"]


@dataclass(frozen=True)
class Deadline:
    label: str
    instant: datetime | None = None
    local: datetime | None = None  # naive: the same wall clock in each recipient's zone

    @classmethod
    def of(cls, value: DeliverBy) -> Deadline:
        if isinstance(value, datetime):
            return cls(label=value.strftime("%Y-%m-%d %H:%M UTC"), instant=value)
        if value.per_recipient:
            local = parse_wall_clock(value.local_time).local
            clock = f"{local:%H:%M:%S}" if local.second else f"{local:%H:%M}"
            return cls(label=f"{clock} on {local:%Y-%m-%d} in their time", local=local)
        return cls(label=f"{value.local_time.replace('T', ' ')} {value.time_zone}", instant=value.instant())

    def at(self, zone: ZoneInfo) -> datetime:
        if self.instant is not None:
            return self.instant
        assert self.local is not None
        return parse_wall_clock(self.local.isoformat()).at(zone)


@dataclass
class Tally:
    late: Counter[LateKind]
    finish: datetime
    zones: Counter[ZoneInfo]


def _groups(
    zones: Counter[ZoneInfo], start: datetime, quiet: QuietHours | None, local: WallClock | None = None
) -> list[tuple[datetime, Counter[ZoneInfo]]]:
    """Recipients by when they may first receive: their zone's local start (a per-recipient schedule),
    then the end of quiet hours it lands in; never before ``start``."""
    by: dict[datetime, Counter[ZoneInfo]] = {}
    for zone, k in zones.items():
        wave = start if local is None else max(start, local.at(zone))
        at = wave if quiet is None else max(wave, ready_at(wave=wave, now=wave, zone=zone, quiet=quiet))
        by.setdefault(at, Counter())[zone] += k
    return sorted(by.items(), key=lambda g: g[0])


def scaled(zones: Counter[ZoneInfo], n: int) -> Counter[ZoneInfo]:
    total = sum(zones.values())
    if not total or total == n:
        return Counter(zones)
    out = Counter({z: math.floor(k * n / total) for z, k in zones.items()})
    out[max(zones, key=lambda z: zones[z])] += n - sum(out.values())
    return out


@dataclass(frozen=True)
class Channel:
    n: int
    rate: float
    page: int
    zones: Counter[ZoneInfo]
    quiet: QuietHours | None
    tested: int
    decide: datetime | None
    local: WallClock | None = None


def walk(ch: Channel, deadline: Deadline, *, now: datetime, delay: int) -> Tally:
    """Who is late, by what holds them and in which zone: the walk's passes (``pass_model.py``) from
    when each group may be sent, each zone against its own deadline."""
    late: Counter[LateKind] = Counter()
    zoned: Counter[ZoneInfo] = Counter()
    runs: list[tuple[Counter[ZoneInfo], LateKind | None, list[tuple[Stretch, float]]]] = []
    start = now
    if ch.tested:  # the test wave first, the rest after the decision (plan.py)
        tested = passes([(now, ch.tested)], ch.tested, start=now, rate=ch.rate, page=ch.page, delay=delay)
        runs.append((scaled(ch.zones, ch.tested), None, [(s, s.shares[0] / s.per) for s in tested]))
        start = max(finish(tested) or now, ch.decide or now)
    rest = ch.n - ch.tested
    groups = _groups(scaled(ch.zones, rest), start, ch.quiet, ch.local)
    walked = passes([(at, sum(zones.values())) for at, zones in groups], rest, start=start, rate=ch.rate,
                    page=ch.page, delay=delay)  # fmt: skip
    for g, (at, zones) in enumerate(groups):
        own = start if ch.local is None else max(start, min(ch.local.at(z) for z in zones))
        held: LateKind | None = "quiet_hours" if at > own else "test_wave" if ch.tested else None
        runs.append((zones, held, [(s, s.shares[g] / s.per) for s in walked if g in s.shares]))
    for zones, held, stretches in runs:
        k = sum(zones.values())
        first = min((s.at for s, _ in stretches), default=None)
        for zone, kz in zones.items():
            due = deadline.at(zone)
            own = now if ch.local is None else max(now, ch.local.at(zone))
            if due <= own:
                late["already_passed"] += kz
                zoned[zone] += kz
                continue
            if held is not None and first is not None and first >= due:
                late[held] += kz
                zoned[zone] += kz
                continue
            sent = sum(part * sent_by(s, (due - s.at).total_seconds()) for s, part in stretches)
            missed = kz - min(kz, math.floor(kz * sent / k + 1e-9)) if k else 0
            late["rate"] += missed
            zoned[zone] += missed
    end = finish([s for _, _, run in runs for s, _ in run])
    return Tally(late=late, finish=end or now, zones=zoned)


def paced_delay(
    ch: Channel, deadline: Deadline, *, now: datetime, most: int, least: int
) -> tuple[int, Tally]:
    """The longest pause in [least, most] that leaves nobody late, else ``least`` (late as it is)."""
    tally = walk(ch, deadline, now=now, delay=most)
    if not sum(tally.late.values()) or least >= most:
        return most, tally
    shortest = walk(ch, deadline, now=now, delay=least)
    if sum(shortest.late.values()):
        return least, shortest
    lo, hi = least, most  # late(lo) == 0 < late(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum(walk(ch, deadline, now=now, delay=mid).late.values()):
            hi = mid
        else:
            lo = mid
    return lo, walk(ch, deadline, now=now, delay=lo)
