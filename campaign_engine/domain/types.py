"""Names shared across layers: ids, the clock, and the one timestamp format stored in the graph.

Timestamps are stored as fixed-width UTC ISO strings with microseconds (``2026-01-02T03:04:05.000006Z``):
they sort lexically in Cypher, compare with plain ``<``, and travel through JSON and queues unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import NewType

__all__ = ["Clock", "ProfileId", "format_ts", "next_after", "parse_ts", "system_clock"]

ProfileId = NewType("ProfileId", str)
Clock = Callable[[], datetime]

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def system_clock() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime(_FORMAT)


def parse_ts(value: str) -> datetime:
    return datetime.strptime(value, _FORMAT).replace(tzinfo=UTC)


def next_after(now: datetime, previous: str | None) -> str:
    """``now``, or one microsecond after ``previous`` when the clock has not moved past it."""
    if previous is None:
        return format_ts(now)
    floor = parse_ts(previous) + timedelta(microseconds=1)
    return format_ts(max(now, floor))
