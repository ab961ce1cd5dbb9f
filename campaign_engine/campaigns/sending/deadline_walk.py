"""The walk behind a deadline's verdict (``deadline.py``): each group of recipients sent in turn from
when it may be, who is late by then and why, and the longest pause between waves that leaves nobody late.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from campaign_engine.campaigns.sending.schedule_input import WallClockAt
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.schedule import QuietHours, parse_wall_clock, ready_at

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
            return cls(label=f"{local:%H:%M} on {local:%Y-%m-%d} in their time", local=local)
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


def _sent_by(seconds: float, k: int, rate: float, page: int, delay: int) -> float:
    """Recipients of a run of ``k`` sent ``seconds`` after it starts (pages of ``page``, ``delay`` apart)."""
    if seconds <= 0:
        return 0.0
    cycle = page / rate + delay
    full = math.floor(seconds / cycle)
    return min(float(k), full * page + min(page, (seconds - full * cycle) * rate))


def _run(k: int, rate: float, page: int, delay: int) -> float:
    return k / rate + max(0, math.ceil(k / page) - 1) * delay if k else 0.0


def _groups(
    zones: Counter[ZoneInfo], start: datetime, quiet: QuietHours | None
) -> list[tuple[datetime, Counter[ZoneInfo]]]:
    by: dict[datetime, Counter[ZoneInfo]] = {}
    for zone, k in zones.items():
        at = start if quiet is None else max(start, ready_at(wave=start, now=start, zone=zone, quiet=quiet))
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


def walk(ch: Channel, deadline: Deadline, *, now: datetime, delay: int) -> Tally:
    """Who is late, by what holds them: each group of recipients sent in turn from when it may be."""
    late: Counter[LateKind] = Counter()
    segments: list[tuple[datetime, Counter[ZoneInfo], LateKind | None]] = []
    start = now
    if ch.tested:  # the test wave first, the rest after the decision (plan.py)
        segments.append((now, scaled(ch.zones, ch.tested), None))
        start = now + timedelta(seconds=_run(ch.tested, ch.rate, ch.page, delay))
        start = max(start, ch.decide or start)
    for at, zones in _groups(scaled(ch.zones, ch.n - ch.tested), start, ch.quiet):
        held: LateKind | None = "quiet_hours" if at > start else "test_wave" if ch.tested else None
        segments.append((at, zones, held))
    t = now
    for at, zones, held in segments:
        t = max(t, at)
        k = sum(zones.values())
        for zone, kz in zones.items():
            due = deadline.at(zone)
            if due <= now:
                late["already_passed"] += kz
            elif held is not None and t >= due:
                late[held] += kz
            else:
                sent = _sent_by((due - t).total_seconds(), k, ch.rate, ch.page, delay)
                late["rate"] += kz - min(kz, math.floor(kz * sent / k + 1e-9))
        t += timedelta(seconds=_run(k, ch.rate, ch.page, delay))
    return Tally(late=late, finish=t)


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
