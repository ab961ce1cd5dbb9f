"""``bench.forecast_zones`` picks its quiet hours from the clock: at any time of day (midnight wraps
included) the zones it means to wait do, their quiet hours ending when it says, and the others send at
once; otherwise its figures would measure another layout than the one it prints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bench.forecast_zones import ZONES, quiet_window
from campaign_engine.domain.schedule import QuietHours, ready_at

NOWS = [datetime(2026, 12, 6, 0, 0, 17, tzinfo=UTC) + timedelta(minutes=7 * k) for k in range(24 * 60 // 7)]


def ready(now: datetime, window: dict[str, str]) -> dict[str, float]:
    """Seconds from the start of ``now``'s minute until each zone may receive (0: at once)."""
    quiet = QuietHours(*(datetime.strptime(window[k], "%H:%M").time() for k in ("start", "end")))
    base = now.replace(second=0)
    return {z: (max(ready_at(wave=now, now=now, zone=ZoneInfo(z), quiet=quiet), now) - base).total_seconds()
            for z in ZONES}  # fmt: skip


@pytest.mark.parametrize("minutes", [2, 5, 16])
def test_one_zone_waits_under_seventeen_minutes(minutes: int) -> None:
    for now in NOWS:
        at = ready(now, quiet_window(now, minutes))
        assert at == {"Asia/Kolkata": 17, "Asia/Kathmandu": 17, "Asia/Dhaka": minutes * 60, "Asia/Yangon": 17}


@pytest.mark.parametrize("minutes", [17, 18, 44])
def test_two_zones_wait_fifteen_minutes_apart_from_seventeen(minutes: int) -> None:
    for now in NOWS:
        at = ready(now, quiet_window(now, minutes))
        assert at == {"Asia/Kolkata": 17, "Asia/Kathmandu": minutes * 60, "Asia/Dhaka": (minutes - 15) * 60,
                      "Asia/Yangon": 17}  # fmt: skip
