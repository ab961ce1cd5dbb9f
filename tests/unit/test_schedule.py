"""Wall-clock scheduling rules (domain/schedule.py): the extremes of the tz database and both DST turns."""

from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest

from campaign_engine.domain.schedule import (
    QuietHours,
    known_zone,
    parse_wall_clock,
    quiet_until,
    recipient_waves,
    resolve_wall_clock,
    zone_or,
)


def zone(name: str) -> ZoneInfo:
    found = known_zone(name)
    assert found is not None, name
    return found


PARIS, NEW_YORK = zone("Europe/Paris"), zone("America/New_York")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "local", "expected"),
    [
        ("Pacific/Kiritimati", "2026-12-07T09:00", "2026-12-06T19:00"),  # UTC+14: the day before in UTC
        ("Pacific/Pago_Pago", "2026-12-07T09:00", "2026-12-07T20:00"),  # UTC-11
        ("UTC", "2026-12-07T09:00", "2026-12-07T09:00"),
        ("Europe/Paris", "2026-07-01T09:00", "2026-07-01T07:00"),  # summer, UTC+2
        ("Europe/Paris", "2026-12-01T09:00", "2026-12-01T08:00"),  # winter, UTC+1
    ],
)
def test_a_wall_clock_time_is_the_instant_clocks_there_show_it(name: str, local: str, expected: str) -> None:
    assert parse_wall_clock(local).at(zone(name)) == utc(expected)


def test_a_time_in_the_spring_forward_gap_happens_late_by_the_gap_never_skipped() -> None:
    # 2026-03-29 in Paris: 02:00 jumps to 03:00, so 02:30 never shows on a clock.
    assert resolve_wall_clock(datetime(2026, 3, 29, 2, 30), PARIS) == utc("2026-03-29T01:30")  # 03:30 local
    # New York, 2026-03-08: 02:00 -> 03:00.
    assert resolve_wall_clock(datetime(2026, 3, 8, 2, 15), NEW_YORK) == utc("2026-03-08T07:15")  # 03:15 EDT
    # Just before and after the gap are exact.
    assert resolve_wall_clock(datetime(2026, 3, 29, 1, 59), PARIS) == utc("2026-03-29T00:59")
    assert resolve_wall_clock(datetime(2026, 3, 29, 3, 0), PARIS) == utc("2026-03-29T01:00")


def test_a_time_in_the_fall_back_overlap_is_its_first_occurrence() -> None:
    # 2026-10-25 in Paris: 03:00 goes back to 02:00, so 02:30 happens at 00:30 and at 01:30 UTC.
    assert resolve_wall_clock(datetime(2026, 10, 25, 2, 30), PARIS) == utc("2026-10-25T00:30")
    # New York, 2026-11-01: 01:30 happens at 05:30 (EDT) and 06:30 (EST) UTC.
    assert resolve_wall_clock(datetime(2026, 11, 1, 1, 30), NEW_YORK) == utc("2026-11-01T05:30")


@pytest.mark.parametrize(
    "name", [None, "", "Mars/Olympus_Mons", "../../etc/passwd", "Europe/Paris\x00", "x" * 65]
)
def test_a_missing_or_unknown_zone_falls_back_to_the_campaigns(name: str | None) -> None:
    assert zone_or(name, PARIS) is PARIS


def test_waves_group_recipients_by_the_instant_their_nine_oclock_happens() -> None:
    waves = recipient_waves(
        parse_wall_clock("2026-12-07T09:00"),
        {
            "kiritimati": "Pacific/Kiritimati",
            "paris": "Europe/Paris",
            "berlin": "Europe/Berlin",  # same offset as Paris that day: same wave
            "unknown": "Nowhere/Special",  # falls back to the campaign zone (New York)
            "none": None,
            "pago": "Pacific/Pago_Pago",
        },
        NEW_YORK,
    )
    assert waves == [
        (utc("2026-12-06T19:00"), ["kiritimati"]),
        (utc("2026-12-07T08:00"), ["berlin", "paris"]),
        (utc("2026-12-07T14:00"), ["none", "unknown"]),
        (utc("2026-12-07T20:00"), ["pago"]),
    ]


@pytest.mark.parametrize(
    "value", ["2026-12-07T09:00Z", "2026-12-07T09:00+01:00", "2026-12-07", "2026-02-30T09:00"]
)
def test_a_wall_clock_time_has_no_offset_and_exists_on_the_calendar(value: str) -> None:
    with pytest.raises(ValueError):
        parse_wall_clock(value)


NIGHT = QuietHours(start=time(21, 0), end=time(8, 0))


@pytest.mark.parametrize(
    ("due", "expected"),
    [
        ("2026-12-07T12:00", None),  # 13:00 in Paris: outside
        ("2026-12-07T20:30", "2026-12-08T07:00"),  # 21:30 local: until 08:00 tomorrow
        ("2026-12-07T05:00", "2026-12-07T07:00"),  # 06:00 local: until 08:00 today
        ("2026-12-07T07:00", None),  # 08:00 local: the end is not quiet
        ("2026-12-07T20:00", "2026-12-08T07:00"),  # 21:00 local: the start is quiet
    ],
)
def test_quiet_hours_that_wrap_midnight_defer_to_their_end(due: str, expected: str | None) -> None:
    found = quiet_until(utc(due), PARIS, NIGHT)
    assert found == (utc(expected) if expected else None)


def test_quiet_hours_end_on_a_dst_night_at_the_local_end_time() -> None:
    # 23:00 local on 2026-03-28 in Paris; the night loses an hour; 08:00 on the 29th is 06:00 UTC.
    assert quiet_until(utc("2026-03-28T22:00"), PARIS, NIGHT) == utc("2026-03-29T06:00")
    # And on the night that gains one, 08:00 on 2026-10-25 is 07:00 UTC.
    assert quiet_until(utc("2026-10-24T21:00"), PARIS, NIGHT) == utc("2026-10-25T07:00")


def test_daytime_quiet_hours_and_no_quiet_hours() -> None:
    lunch = QuietHours(start=time(12, 0), end=time(14, 0))
    assert quiet_until(utc("2026-12-07T11:30"), PARIS, lunch) == utc("2026-12-07T13:00")
    assert quiet_until(utc("2026-12-07T13:00"), PARIS, lunch) is None
    assert quiet_until(utc("2026-12-07T11:30"), PARIS, None) is None
    with pytest.raises(ValueError):
        QuietHours(start=time(9, 0), end=time(9, 0))
