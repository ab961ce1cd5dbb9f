"""Why a campaign cannot send now: the preview/dispatch rule and the page guard share one rule."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.campaigns.sending.send_blocks import blocked_reason
from campaign_engine.delivery.dispatch_cursor import guard_reason
from campaign_engine.domain.dispatch import PageJob

NOW = "2026-03-01T12:00:00.000000Z"
CREATED = "2026-01-01T00:00:00.000000Z"
LIVE: dict[str, Any] = {"status": "live", "channels": ["notify"], "createdAt": CREATED}
# (campaign changes, reason): each breaks exactly one condition of a campaign that may send.
CASES: list[tuple[dict[str, Any], str | None]] = [
    ({}, None),
    ({"startsAt": "2026-03-01T11:59:59.999999Z", "endsAt": "2026-03-01T12:00:00.000001Z"}, None),
    ({"status": "paused"}, "not_live"),
    ({"status": "draft", "channels": []}, "not_live"),  # not live is named before the channel
    ({"startsAt": "2026-03-01T12:00:00.000001Z"}, "not_started"),
    ({"endsAt": NOW}, "ended"),  # the end is exclusive
]


@pytest.mark.parametrize(("changes", "reason"), CASES)
def test_preview_and_page_guard_agree(changes: dict[str, Any], reason: str | None) -> None:
    campaign = {**LIVE, **changes}
    job = PageJob(dispatchId="d", campaignId="c", campaignCreatedAt=CREATED, channel="notify")
    dispatch = {"campaignCreatedAt": CREATED}
    assert blocked_reason(campaign, now=NOW) == reason
    assert guard_reason(dispatch, campaign, job, now=NOW) == reason


def test_a_missing_channel_has_each_callers_name() -> None:
    """The preview needs any delivery channel; a page needs its own."""
    email_only = {**LIVE, "channels": ["email", "inApp"]}
    assert blocked_reason({**LIVE, "channels": ["inApp"]}, now=NOW) == "notify_disabled"
    assert blocked_reason(email_only, now=NOW) is None
    job = PageJob(dispatchId="d", campaignId="c", campaignCreatedAt=CREATED, channel="notify")
    assert guard_reason({"campaignCreatedAt": CREATED}, email_only, job, now=NOW) == "channel_removed"


def test_another_incarnation_is_gone_before_anything_else() -> None:
    job = PageJob(dispatchId="d", campaignId="c", campaignCreatedAt=CREATED, channel="notify")
    paused = {**LIVE, "status": "paused"}
    assert guard_reason({"campaignCreatedAt": CREATED}, None, job, now=NOW) == "campaign_gone"
    assert guard_reason({"campaignCreatedAt": CREATED}, {**paused, "createdAt": NOW}, job, now=NOW) == (
        "campaign_gone"
    )
    assert guard_reason({"campaignCreatedAt": NOW}, paused, job, now=NOW) == "campaign_gone"
