"""The readiness map the page statements read: per-recipient waves and quiet hours per zone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time
from typing import Any

from campaign_engine.delivery.readiness import readiness_params
from campaign_engine.domain.schedule import QuietHours, known_zone, parse_wall_clock, ready_at, ready_map

NIGHT = QuietHours(time(21, 0), time(8, 0))


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _zone(name: str) -> Any:
    zone = known_zone(name)
    assert zone is not None
    return zone


def test_per_recipient_waves_for_the_extreme_zones_and_both_transitions() -> None:
    nine = parse_wall_clock("2026-12-07T09:00")
    now = _utc("2026-12-06T19:00")
    by_zone, fallback = ready_map(
        now=now, start=now, local_time=nine, fallback=_zone("Asia/Tokyo"), quiet=None
    )
    assert by_zone["Pacific/Kiritimati"] == _utc("2026-12-06T19:00")  # UTC+14: ready as it fires
    assert by_zone["Etc/GMT-14"] == by_zone["Pacific/Kiritimati"]
    assert by_zone["Pacific/Pago_Pago"] == _utc("2026-12-07T20:00")  # UTC-11
    assert fallback == _utc("2026-12-07T00:00")  # missing or unknown zone: the campaign's (Tokyo)
    assert "Mars/Base" not in by_zone and len(by_zone) > 400
    assert min(by_zone.values()) == now  # nobody is due before the schedule fires
    spring = parse_wall_clock("2026-03-08T02:30")
    by_zone, _ = ready_map(now=now, start=now, local_time=spring, fallback=_zone("UTC"), quiet=None)
    assert by_zone["America/New_York"] == _utc("2026-03-08T07:30")  # no 02:30 that night: 03:30 EDT
    autumn = parse_wall_clock("2026-11-01T01:30")
    by_zone, _ = ready_map(now=now, start=now, local_time=autumn, fallback=_zone("UTC"), quiet=None)
    assert by_zone["America/New_York"] == _utc("2026-11-01T05:30")  # the first 01:30, EDT


def test_quiet_hours_push_to_their_end_and_are_judged_when_the_page_runs() -> None:
    tokyo = _zone("Asia/Tokyo")
    start = _utc("2026-03-01T12:00")  # 21:00 in Tokyo: quiet
    assert ready_at(wave=start, now=start, zone=tokyo, quiet=NIGHT) == _utc("2026-03-01T23:00")
    assert ready_at(wave=start, now=start, zone=tokyo, quiet=None) == start
    # A walk that reaches someone after their quiet hours began defers them too.
    early = _utc("2026-03-01T11:00")  # 20:00 in Tokyo
    assert ready_at(wave=early, now=start, zone=tokyo, quiet=NIGHT) == _utc("2026-03-01T23:00")
    # After the quiet hours: ready, and continuously so since their end (what staleness measures).
    later = _utc("2026-03-02T00:30")
    assert ready_at(wave=early, now=later, zone=tokyo, quiet=NIGHT) == _utc("2026-03-01T23:00")
    # Hours that do not wrap midnight.
    lunch = QuietHours(time(12, 0), time(14, 0))
    noon = _utc("2026-03-01T12:30")
    assert ready_at(wave=noon, now=noon, zone=_zone("UTC"), quiet=lunch) == _utc("2026-03-01T14:00")


def _campaign(**definition: Any) -> dict[str, Any]:
    return {"definition": json.dumps({"name": "x", "channels": ["notify"], **definition})}


def test_the_ordinary_path_reads_an_empty_map_and_never_misses() -> None:
    now = _utc("2026-03-01T12:00")
    dispatch = {"startedAt": "2026-03-01T12:00:00.000000Z", "maxLateSeconds": 60}
    params = readiness_params(dispatch, _campaign(), now=now)
    assert params == {"readyAt": {}, "fallbackReadyAt": "", "staleBefore": None}


def test_params_are_stored_timestamps_and_staleness_is_per_recipient_schedules_only() -> None:
    now = _utc("2026-03-01T12:00:30")
    quiet = _campaign(timeZone="Asia/Tokyo", quietHours={"start": "21:00", "end": "08:00"})
    dispatch: dict[str, Any] = {"startedAt": "2026-03-01T12:00:00.000000Z", "maxLateSeconds": 600}
    params = readiness_params(dispatch, quiet, now=now)
    assert params["readyAt"]["Asia/Tokyo"] == "2026-03-01T23:00:00.000000Z"
    assert params["readyAt"]["Europe/Paris"] == "2026-03-01T12:00:00.000000Z"
    assert params["fallbackReadyAt"] == "2026-03-01T23:00:00.000000Z"  # the campaign's zone
    assert params["staleBefore"] is None  # not a per-recipient schedule: deferred, never missed
    scheduled = {**dispatch, "sendLocalTime": "2026-03-01T21:30"}
    params = readiness_params(scheduled, _campaign(), now=now)
    assert params["readyAt"]["Europe/Paris"] == "2026-03-01T20:30:00.000000Z"
    assert params["fallbackReadyAt"] == "2026-03-01T21:30:00.000000Z"  # no campaign zone: UTC
    assert params["staleBefore"] == "2026-03-01T11:50:30.000000Z"  # this pass began now
    in_pass = {**scheduled, "cursor": "p9", "passStartedAt": "2026-03-01T11:00:00.000000Z"}
    assert readiness_params(in_pass, _campaign(), now=now)["staleBefore"] == "2026-03-01T10:50:00.000000Z"
