"""What ``campaigns.scheduleDispatch`` accepts: an instant, or a wall-clock time in one IANA zone or in
each recipient's own, checked field by field before anything is read."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.schedule import (
    EARLIEST_ZONE,
    WALL_CLOCK_PATTERN,
    ZONE_NAME_PATTERN,
    known_zone,
    parse_wall_clock,
)

__all__ = ["DEFAULT_MAX_LATE_SECONDS", "OnChange", "ScheduleInput", "WallClockAt"]

DEFAULT_MAX_LATE_SECONDS = 3600
OnChange = Literal["review", "send_current"]


def _one_zone_or_each_recipients(schema: dict[str, Any]) -> None:
    """States the model validator in the JSON Schema: ``timeZone``, or ``perRecipient: true``."""
    schema["oneOf"] = [
        {
            "required": ["timeZone"],
            "properties": {"timeZone": {"type": "string"}, "perRecipient": {"const": False}},
        },
        {
            "required": ["perRecipient"],
            "properties": {"timeZone": {"type": "null"}, "perRecipient": {"const": True}},
        },
    ]


class WallClockAt(CamelModel):
    """A wall-clock time in an IANA zone (``2026-12-07T09:00`` in ``Europe/Paris``), or in each
    recipient's own zone (``perRecipient: true``): then each recipient receives at that local
    time, those without a known zone at the campaign's ``timeZone`` (else UTC)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_one_zone_or_each_recipients)

    local_time: Annotated[str, Field(pattern=WALL_CLOCK_PATTERN)]
    time_zone: Annotated[str | None, Field(max_length=64, pattern=ZONE_NAME_PATTERN)] = None
    per_recipient: bool = False

    @model_validator(mode="after")
    def _one_zone(self) -> WallClockAt:
        if self.per_recipient == (self.time_zone is not None):
            raise ValueError("give either timeZone, or perRecipient: true (each recipient's own zone)")
        return self

    def instant(self) -> datetime:
        """When the schedule fires: for ``perRecipient``, when the first zone (UTC+14) reaches it."""
        if self.time_zone is None:
            return parse_wall_clock(self.local_time).at(EARLIEST_ZONE)
        zone = known_zone(self.time_zone)
        if zone is None:
            raise ValueError("timeZone is not an IANA time zone in the tz database (e.g. Europe/Paris)")
        return parse_wall_clock(self.local_time).at(zone)


class ScheduleInput(CamelModel):
    model_config = ConfigDict(extra="forbid")

    campaign_id: Annotated[str, Field(min_length=1, max_length=64)]
    send_at: UtcDatetime | WallClockAt
    """An RFC 3339 instant with an offset, or a wall-clock time plus an IANA zone."""
    expected_preview_token: Annotated[str, Field(min_length=1, max_length=200)]
    max_late_seconds: Annotated[int, Field(ge=0, le=7 * 86_400)] = DEFAULT_MAX_LATE_SECONDS
    on_change: OnChange = "review"
    accept_fallback: bool = False
    experiment: Experiment | None = Field(
        default=None, description="an A/B test wave: kept on the Dispatches until the send starts"
    )
    """Send although the preview says ``missing_translation``: those readers get the base."""
    deliver_by: UtcDatetime | WallClockAt | None = Field(
        default=None,
        description="deliver to everyone by then (as in dispatch): judged at scheduling and again when "
        "it fires; a deadline it can no longer meet then fails the schedule unless acceptLate",
    )
    accept_late: bool = False

    @model_validator(mode="after")
    def _readable_send_at(self) -> ScheduleInput:
        self.instant()  # a bad spelling or zone is a field error here, before anything is read
        return self

    def instant(self) -> datetime:
        if isinstance(self.send_at, WallClockAt):
            return self.send_at.instant()
        return self.send_at

    def local_time(self) -> str | None:
        """The wall-clock time each recipient's wave is resolved from (per-recipient schedules only)."""
        if isinstance(self.send_at, WallClockAt) and self.send_at.per_recipient:
            return self.send_at.local_time
        return None
