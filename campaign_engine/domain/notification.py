"""The ANNOUNCEMENT payload the notification worker POSTs to an inbox receiver, and its signed bytes.

One model serves both directions because the wire shape is the same: the worker builds it from typed
values, receivers parse it. Unknown fields are *ignored* rather than forbidden so that a receiver built
on this model keeps working when the payload gains a field (third-party receivers must do the same).

``campaignCreatedAt`` is checked against the fixed-width timestamp format because it is part of the
receiver's deduplication key: two spellings of one instant would store one announcement twice.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.types import parse_ts

__all__ = ["AnnouncementMetadata", "AnnouncementPayload", "payload_json"]

_WIRE = ConfigDict(extra="ignore", frozen=True)
_Id = Annotated[str, Field(min_length=1, max_length=200)]


class AnnouncementMetadata(CamelModel):
    """Identity of the announcement: ``campaignId`` + ``campaignCreatedAt`` name one incarnation."""

    model_config = _WIRE

    campaign_id: _Id
    campaign_created_at: str
    dispatch_id: _Id | None = None
    delivery_id: _Id
    campaign_has_in_app: bool
    # Set only for an admin's send-to-me test; a test is a separate inbox entry from the real send.
    campaign_test_id: _Id | None = None
    # The language of title and body (BCP 47), the best match for the recipient's locale.
    locale: Annotated[str, Field(max_length=35)] | None = None
    # The A/B content variant the copy is (``domain/ab_variants.py``); absent without variants.
    variant_id: Annotated[str, Field(max_length=32)] | None = None
    # "guardian" when the recipient gets it as the guardian of a member the age policy
    # excludes (the copy is then the campaign's guardianCopy where it has one); absent for members.
    audience: Literal["guardian"] | None = None

    @field_validator("campaign_created_at")
    @classmethod
    def _fixed_width_ts(cls, value: str) -> str:
        try:
            parse_ts(value)
        except ValueError as exc:
            raise ValueError("must be a UTC timestamp like 2026-01-02T03:04:05.000006Z") from exc
        return value


class AnnouncementPayload(CamelModel):
    model_config = _WIRE

    type: Literal["ANNOUNCEMENT"] = "ANNOUNCEMENT"
    recipient: _Id
    sender: _Id
    title: str = Field(max_length=1_000)
    body: str = Field(max_length=50_000)
    metadata: AnnouncementMetadata


def payload_json(payload: AnnouncementPayload) -> bytes:
    """The exact bytes that are signed and sent: compact JSON, camelCase names, nulls kept.

    The signature covers these bytes, so the worker must send them unchanged; receivers verify the raw
    request body, never a re-serialization of what they parsed.
    """
    return payload.model_dump_json(by_alias=True).encode()
