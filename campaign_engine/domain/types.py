"""Names shared across layers: ids, the clock, and the one timestamp format stored in the graph.

Timestamps are stored as fixed-width UTC ISO strings with microseconds (``2026-01-02T03:04:05.000006Z``):
they sort lexically in Cypher, compare with plain ``<``, and travel through JSON and queues unchanged.
So there are two parsers: ``parse_ts`` reads only that stored spelling (one instant, one spelling: it is
part of receivers' dedup key), and ``parse_instant`` reads what API callers send (any RFC 3339 instant
with an offset) and yields a moment ``format_ts`` can store. Accepted instants lie between
``EARLIEST`` and ``LATEST`` in UTC, so every stored year has four digits and sorts as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import NewType

__all__ = [
    "EARLIEST",
    "LATEST",
    "Clock",
    "ProfileId",
    "checked_instant",
    "format_ts",
    "next_after",
    "parse_instant",
    "parse_ts",
    "system_clock",
    "truncated",
]

ProfileId = NewType("ProfileId", str)
Clock = Callable[[], datetime]

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_FIXED_WIDTH = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII)
# RFC 3339 date-time: "T" or (section 5.6 note) a space, any number of fraction digits, "Z" or +-hh:mm.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


def system_clock() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    # isoformat pads the year to four digits where strftime("%Y") wrote "999".
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_ts(value: str) -> datetime:
    """The instant of a timestamp in exactly the spelling ``format_ts`` writes; anything else (fewer
    fraction digits, one-digit fields, an offset) is a ValueError, so one instant has one spelling.
    (``strptime`` accepted ``.5Z`` and one-digit months, and cost 8 us where this costs under 1.)"""
    try:
        if _FIXED_WIDTH.fullmatch(value):
            return datetime.fromisoformat(value)
    except ValueError:  # fixed width, but no such day or hour
        pass
    raise ValueError(f"not a fixed-width UTC timestamp: {value!r}")


def checked_instant(moment: datetime) -> datetime:
    """``moment`` in UTC if it is timezone-aware and between ``EARLIEST`` and ``LATEST``; else ValueError."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a timestamp needs a UTC offset or 'Z'")
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:59:59-01:00 is in year 10000
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise ValueError("timestamps must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z")
    return utc


def parse_instant(value: str) -> datetime:
    """An API caller's RFC 3339 timestamp (any offset, any fraction digits) as a UTC moment in range.

    Fraction digits past the microsecond are truncated, as JavaScript truncates past the millisecond.
    Leap seconds (``:60``) cannot be represented and are refused, like every other bad spelling."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise ValueError("not an RFC 3339 timestamp with an offset (e.g. 2026-01-02T03:04:05.678Z)")
    year, month, day, hour, minute, second = (int(part) for part in match.group(1, 2, 3, 4, 5, 6))
    fraction, sign, offset_hours, offset_minutes = match.group(7, 8, 9, 10)
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        zone = UTC
        if sign is not None:
            if int(offset_minutes) > 59:
                raise ValueError("offset minutes out of range")
            offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
            zone = timezone(-offset if sign == "-" else offset)
        moment = datetime(year, month, day, hour, minute, second, micros, tzinfo=zone)
    except ValueError:  # no such day, hour or offset (year 0 included)
        raise ValueError("not a valid RFC 3339 timestamp: no such date, time or offset") from None
    return checked_instant(moment)


def truncated(moment: datetime, resolution: timedelta) -> datetime:
    """``moment`` rounded down to a whole multiple of ``resolution`` (e.g. to the millisecond)."""
    return moment - (moment - EARLIEST) % resolution


def next_after(now: datetime, previous: str | None, *, resolution: timedelta = _MICROSECOND) -> str:
    """``now``, or the start of the next ``resolution`` tick after ``previous`` when the clock has not
    left it; so successive values differ even when truncated to ``resolution``."""
    if previous is None:
        return format_ts(now)
    floor = truncated(parse_ts(previous), resolution) + resolution
    return format_ts(max(now, floor))
