"""When a send happens: wall-clock times in IANA zones, per-recipient local times, and quiet hours.

Pure rules, no clock and no graph, so the scheduler, the page walks and the tests share one meaning
of "09:00 in Europe/Paris". Two wall-clock times do not name exactly one instant:

- In a spring-forward gap (02:30 on the night clocks jump from 02:00 to 03:00) the time never happens.
  It resolves to the same distance past the gap's end (03:30), as a person whose alarm is set for
  02:30 would see it ring: late by the gap, never skipped, never early.
- In a fall-back overlap (01:30 happens twice) it resolves to the first occurrence, so nothing waits
  an extra hour and nothing fires twice.

Zones come from ``zoneinfo`` (the system tz database, or the ``tzdata`` package where the system has
none, as on some Lambda images). A recipient whose zone is missing or unknown falls back to the
campaign's zone: a bad profile field delays or advances one person's send, it never drops it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

__all__ = [
    "EARLIEST_ZONE",
    "WALL_CLOCK_PATTERN",
    "ZONE_NAME_PATTERN",
    "QuietHours",
    "WallClock",
    "known_zone",
    "parse_wall_clock",
    "quiet_until",
    "ready_at",
    "ready_map",
    "recipient_waves",
    "resolve_wall_clock",
    "zone_or",
]

ZONE_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}$"
"""The shape of an IANA zone name (``America/Argentina/Buenos_Aires``, ``Etc/GMT+5``, ``UTC``)."""
_ZONE_NAME = re.compile(ZONE_NAME_PATTERN)
WALL_CLOCK_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?$"
"""A local date and time without an offset: ``2026-12-07T09:00`` or ``2026-12-07T09:00:30``."""
_WALL_CLOCK = re.compile(WALL_CLOCK_PATTERN)
EARLIEST_ZONE = ZoneInfo("Etc/GMT-14")
"""UTC+14 (Pacific/Kiritimati), the first zone to reach any wall-clock time: a per-recipient schedule
fires when it does (POSIX-style ``Etc`` names invert the sign)."""


@lru_cache(maxsize=1024)
def known_zone(name: str) -> ZoneInfo | None:
    """The IANA zone ``name``, or None when it is malformed or not in the tz database.

    The name is checked against a strict shape first: ``ZoneInfo`` reads files named by its argument,
    and a profile field must never name a path."""
    if not name or len(name) > 64 or not _ZONE_NAME.fullmatch(name):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def zone_or(name: str | None, fallback: ZoneInfo) -> ZoneInfo:
    """A recipient's zone, or ``fallback`` when theirs is missing or unknown."""
    return (known_zone(name) if name else None) or fallback


@dataclass(frozen=True)
class WallClock:
    """A local date and time with no zone yet (``2026-12-07T09:00``)."""

    local: datetime

    def at(self, zone: ZoneInfo) -> datetime:
        return resolve_wall_clock(self.local, zone)


def parse_wall_clock(value: str) -> WallClock:
    """``YYYY-MM-DDTHH:MM[:SS]`` with no offset; ValueError otherwise (an offset makes it an instant)."""
    if not _WALL_CLOCK.fullmatch(value):
        raise ValueError("a wall-clock time is YYYY-MM-DDTHH:MM[:SS], without an offset")
    try:
        return WallClock(datetime.fromisoformat(value))
    except ValueError:
        raise ValueError("not a valid date and time") from None


def resolve_wall_clock(local: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant at which clocks in ``zone`` show ``local``.

    PEP 495's ``fold=0`` gives both rules of the module docstring: in an overlap it is the first
    occurrence, and in a gap it applies the offset from before the jump, which lands past the gap by
    exactly its length (02:30 in a 02:00 -> 03:00 gap becomes 03:30)."""
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def recipient_waves(
    when: WallClock, zones: Mapping[str, str | None], fallback: ZoneInfo
) -> list[tuple[datetime, list[str]]]:
    """Recipients grouped by the instant ``when`` happens in their zone, earliest first.

    ``zones`` maps recipient id to their IANA zone name (or None). Recipients whose zones share a UTC
    offset on that day share a wave, so a worldwide audience is at most a few dozen waves."""
    groups: dict[datetime, list[str]] = {}
    for recipient, name in zones.items():
        groups.setdefault(when.at(zone_or(name, fallback)), []).append(recipient)
    return sorted((instant, sorted(ids)) for instant, ids in groups.items())


@dataclass(frozen=True)
class QuietHours:
    """Local wall-clock hours in which nothing is delivered; ``start > end`` wraps midnight."""

    start: time
    end: time

    def __post_init__(self) -> None:
        if self.start == self.end:
            raise ValueError("quiet hours must not start and end at the same time")

    def contains(self, moment: time) -> bool:
        if self.start < self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


def quiet_until(instant: datetime, zone: ZoneInfo, quiet: QuietHours | None) -> datetime | None:
    """When a delivery due at ``instant`` may go out, if that is inside quiet hours in ``zone``;
    None when it may go out now. Deferred, never dropped: the answer is the quiet hours' end."""
    if quiet is None:
        return None
    local = instant.astimezone(zone)
    if not quiet.contains(local.timetz().replace(tzinfo=None)):
        return None
    end_day = local.date()
    if quiet.start > quiet.end and local.time() >= quiet.start:
        end_day += timedelta(days=1)  # wrapped: tonight's quiet hours end tomorrow
    return resolve_wall_clock(datetime.combine(end_day, quiet.end), zone)


def _last_quiet_end(now: datetime, zone: ZoneInfo, quiet: QuietHours) -> datetime:
    """The latest end of quiet hours in ``zone`` at or before ``now``."""
    day = now.astimezone(zone).date()
    end = resolve_wall_clock(datetime.combine(day, quiet.end), zone)
    if end > now:
        end = resolve_wall_clock(datetime.combine(day - timedelta(days=1), quiet.end), zone)
    return end


def ready_at(*, wave: datetime, now: datetime, zone: ZoneInfo, quiet: QuietHours | None) -> datetime:
    """When a recipient in ``zone`` whose wave is ``wave`` may receive, judged at ``now``.

    After ``now``: wait until then (the wave, or the end of the quiet hours it lands in). At or before
    ``now``: deliverable now, and continuously so since the returned instant, which is what staleness
    (a schedule's ``maxLateSeconds``) is measured from. Quiet hours are judged at ``now`` too, so a
    long walk that reaches someone after their quiet hours began defers them, never wakes them."""
    due = quiet_until(wave, zone, quiet) or wave
    if due > now or quiet is None:
        return due
    later = quiet_until(now, zone, quiet)
    if later is not None:
        return later
    return max(due, _last_quiet_end(now, zone, quiet))


@lru_cache(maxsize=1)
def _zone_names() -> tuple[str, ...]:
    return tuple(sorted(name for name in available_timezones() if known_zone(name) is not None))


def ready_map(
    *,
    now: datetime,
    start: datetime,
    local_time: WallClock | None,
    fallback: ZoneInfo,
    quiet: QuietHours | None,
) -> tuple[dict[str, datetime], datetime]:
    """``ready_at`` for every zone of the tz database, and for recipients without a usable zone.

    The wave is ``local_time`` in each zone (a per-recipient schedule) or else ``start`` for all. The
    page statements look a recipient's zone up in this map, so the zone rules run here, once per
    zone, never per recipient."""

    def one(zone: ZoneInfo) -> datetime:
        wave = local_time.at(zone) if local_time is not None else start
        return ready_at(wave=wave, now=now, zone=zone, quiet=quiet)

    by_zone: dict[str, datetime] = {}
    for name in _zone_names():
        zone = known_zone(name)
        assert zone is not None
        by_zone[name] = one(zone)
    return by_zone, one(fallback)
