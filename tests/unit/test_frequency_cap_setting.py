"""CAMPAIGN_FREQUENCY_CAPS: validated at start with the setting's name, resolved per channel."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from campaign_engine.config import Settings
from campaign_engine.domain.frequency_cap import cap_params

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "[1]",
        "{not json",
        '{"*": {"sms": {"max": 1, "windowSeconds": 60}}}',
        '{"*": {"email": {"max": 0, "windowSeconds": 60}}}',
        '{"*": {"email": {"max": 1}}}',
        '{"*": {"email": {"max": 1, "windowSeconds": 60, "burst": 2}}}',
        '{"*": {"email": 3}}',
    ],
)
def test_a_bad_cap_stops_the_process_at_start_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CAMPAIGN_FREQUENCY_CAPS", value)
    with pytest.raises(ValidationError, match=r"(?i)campaign_frequency_caps"):
        Settings(_env_file=None)


def test_caps_resolve_per_channel_with_the_star_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(_env_file=None).campaign_frequency_caps == {}
    monkeypatch.setenv(
        "CAMPAIGN_FREQUENCY_CAPS",
        '{"*": {"email": {"max": 3, "windowSeconds": 604800}},'
        ' "acme": {"email": {"max": 1, "windowSeconds": 3600}, "notify": {"max": 2, "windowSeconds": 60}}}',
    )
    caps = Settings(_env_file=None).campaign_frequency_caps
    email = cap_params(caps, "email", now=NOW)
    assert email["caps"] == {
        "*": {"max": 3, "since": "2026-02-22T12:00:00.000000Z"},
        "acme": {"max": 1, "since": "2026-03-01T11:00:00.000000Z"},
    }
    # The log keeps what the widest cap can look at: the longest window, the largest max.
    assert (email["capKeepSince"], email["capKeep"]) == ("2026-02-22T12:00:00.000000Z", 3)
    assert cap_params(caps, "notify", now=NOW)["caps"] == {
        "acme": {"max": 2, "since": "2026-03-01T11:59:00.000000Z"}
    }
    assert cap_params({}, "notify", now=NOW)["caps"] is None  # no cap: the statements skip every cap step
