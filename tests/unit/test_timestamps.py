"""The one stored timestamp spelling: what format_ts writes is all parse_ts (and the payload) accept."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from campaign_engine.domain.notification import AnnouncementMetadata
from campaign_engine.domain.types import format_ts, next_after, parse_ts

CANONICAL = "2026-01-02T03:04:05.000006Z"
# Each names the same instant as CANONICAL (or no valid one) in another spelling.
OTHER_SPELLINGS = [
    "2026-01-02T03:04:05.000006+00:00",
    "2026-1-2T3:4:5.000006Z",
    "2026-01-02T03:04:05.5Z",
    "2026-01-02T03:04:05Z",
    "2026-01-02 03:04:05.000006Z",
    "\uff12026-01-02T03:04:05.000006Z",  # a full-width digit two
    CANONICAL + "\n",
    "2026-13-02T03:04:05.000006Z",
]


def test_parse_ts_reads_what_format_ts_writes() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert format_ts(moment) == CANONICAL
    assert parse_ts(CANONICAL) == moment and parse_ts(CANONICAL).utcoffset() is not None
    assert next_after(moment, CANONICAL) == "2026-01-02T03:04:05.000007Z"


@pytest.mark.parametrize("spelling", OTHER_SPELLINGS)
def test_parse_ts_refuses_every_other_spelling(spelling: str) -> None:
    with pytest.raises(ValueError, match="fixed-width"):
        parse_ts(spelling)


@pytest.mark.parametrize("spelling", OTHER_SPELLINGS)
def test_the_payload_dedup_key_has_one_spelling(spelling: str) -> None:
    fields = {"campaignId": "c", "deliveryId": "d", "campaignHasInApp": False}
    assert AnnouncementMetadata.model_validate({**fields, "campaignCreatedAt": CANONICAL})
    with pytest.raises(ValidationError, match="UTC timestamp"):
        AnnouncementMetadata.model_validate({**fields, "campaignCreatedAt": spelling})
