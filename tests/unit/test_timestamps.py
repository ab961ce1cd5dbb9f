"""The one stored timestamp spelling: what format_ts writes is all parse_ts (and the payload) accept;
API input (parse_instant) is any RFC 3339 instant in range, normalised to that spelling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from campaign_engine.domain.notification import AnnouncementMetadata
from campaign_engine.domain.types import (
    EARLIEST,
    LATEST,
    checked_instant,
    format_ts,
    next_after,
    parse_instant,
    parse_ts,
    truncated,
)

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


# API input: any RFC 3339 instant with an offset, normalised to the stored spelling.
ACCEPTED_INPUT = [
    ("2026-01-02T03:04:05.000006Z", CANONICAL),
    ("2026-01-02T03:04:05.000006+00:00", CANONICAL),
    ("2026-01-02T03:04:05.000006-00:00", CANONICAL),  # RFC 3339: UTC, local offset unknown
    ("2026-01-02t03:04:05.000006z", CANONICAL),
    ("2026-01-02 03:04:05.000006Z", CANONICAL),
    ("2026-01-02T03:04:05.0000069999Z", CANONICAL),  # past microseconds: truncated, like JavaScript
    ("2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05.123000Z"),  # JavaScript toISOString()
    ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z"),
    ("2026-01-02T08:34:05.5+05:30", "2026-01-02T03:04:05.500000Z"),
    ("2026-01-01T23:04:05-04:00", CANONICAL[:20] + "000000Z"),
    ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
    ("1970-01-01T01:00:00+01:00", "1970-01-01T00:00:00.000000Z"),
    ("9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.999999Z"),
    ("9999-12-31T23:59:59+01:00", "9999-12-31T22:59:59.000000Z"),
]
REFUSED_INPUT = [
    "9999-12-31T23:59:59-01:00",  # year 10000 in UTC: overflowed into a 500
    "0999-01-01T00:00:00Z",  # stored as "999-..." and broke every later read
    "1969-12-31T23:59:59.999999Z",
    "1970-01-01T00:30:00+01:00",
    "0000-01-01T00:00:00Z",
    "2030-01-02T00:00:00",  # no offset: ambiguous
    "2030-01-02",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-12-31T23:59:60Z",  # a leap second cannot be represented
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+01:60",
    "2026-01-01T00:00:00+0100",
    "2026-01-01T00:00:00.Z",
    "+12026-01-01T00:00:00Z",  # JavaScript's extended years
    "2026-1-2T3:4:5Z",
    "\uff12026-01-02T03:04:05Z",
    "2026-01-02T03:04:05Z\n",
    "",
]


@pytest.mark.parametrize(("spelling", "stored"), ACCEPTED_INPUT)
def test_parse_instant_accepts_rfc3339_and_normalises_to_the_stored_spelling(
    spelling: str, stored: str
) -> None:
    moment = parse_instant(spelling)
    assert moment.utcoffset() is not None
    assert format_ts(moment) == stored
    assert parse_ts(format_ts(moment)) == moment  # everything accepted is readable back


@pytest.mark.parametrize("spelling", REFUSED_INPUT)
def test_parse_instant_refuses_bad_or_out_of_range_input(spelling: str) -> None:
    with pytest.raises(ValueError, match=r"RFC 3339|must lie between"):
        parse_instant(spelling)


def test_checked_instant_bounds_and_awareness() -> None:
    assert checked_instant(EARLIEST) == EARLIEST and checked_instant(LATEST) == LATEST
    with pytest.raises(ValueError, match="offset"):
        checked_instant(datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="must lie between"):
        checked_instant(datetime(9999, 12, 31, 23, 59, tzinfo=timezone(-timedelta(hours=1))))


def test_format_ts_always_writes_a_four_digit_year() -> None:
    assert format_ts(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000000Z"


def test_next_after_at_millisecond_resolution_leaves_the_millisecond() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    step = timedelta(milliseconds=1)
    assert next_after(moment, CANONICAL, resolution=step) == "2026-01-02T03:04:05.001000Z"
    later = moment + timedelta(milliseconds=5)
    assert next_after(later, CANONICAL, resolution=step) == format_ts(later)
    assert truncated(parse_ts("2026-01-02T03:04:05.123999Z"), step) == parse_instant(
        "2026-01-02T03:04:05.123Z"
    )
