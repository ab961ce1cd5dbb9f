"""A deadline in each recipient's own time, judged zone by zone (``campaigns/sending/deadline_walk.py``):
a per-recipient schedule starts each zone at its own local time, so each zone is judged against its own
deadline from its own start, and the verdict counts who is late per zone. Judged from one start (the
schedule's firing, when the first zone of the world reaches its time), every zone but the first would
look hours early and the refusal below would pass as feasible."""

from __future__ import annotations

from dataclasses import replace

import pytest

from campaign_engine.campaigns.sending.deadline import PreconditionFailed
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.plan import Pace
from campaign_engine.campaigns.sending.schedule import fire_due, schedule_dispatch
from campaign_engine.campaigns.sending.schedule_input import ScheduleInput, WallClockAt
from campaign_engine.domain.errors import BadRequest
from campaign_engine.graph.graph import Graph
from tests.support.delivery import NOW, add_members, make_campaign

# 50 a page at the configured 50/s (a fresh graph measured nothing), no pause between waves: each
# zone's group goes out at 50/s from its own 09:00.
SETTINGS = DispatchSettings(adult_age=18, max_recipients=2000, pace=Pace(page_size=50, wave_delay=0))
# Tokyo is the eastern zone: 150 there take 3 s from 09:00 JST; 10 in Paris and 10 in New York, 0.2 s.
ZONES = {"Asia/Tokyo": 150, "Europe/Paris": 10, "America/New_York": 10}
SEND_AT = WallClockAt(local_time="2026-03-02T09:00", per_recipient=True)


def _seed(graph: Graph, campaign_id: str) -> str:
    make_campaign(graph, campaign_id)
    for zone, count in ZONES.items():
        add_members(graph, campaign_id, [f"{campaign_id}-{zone}-{i:03d}" for i in range(count)],
                    timeZone=zone)  # fmt: skip
    return preview_dispatch(graph, campaign_id=campaign_id, now=NOW, settings=SETTINGS).preview_token


def _schedule(graph: Graph, campaign_id: str, token: str, by: str, **extra: object) -> ScheduleInput:
    return ScheduleInput.model_validate({
        "campaignId": campaign_id, "sendAt": SEND_AT.model_dump(by_alias=True, exclude_none=True),
        "expectedPreviewToken": token, "deliverBy": {"localTime": by, "perRecipient": True}, **extra,
    })  # fmt: skip


def test_only_the_eastern_zone_is_late_refused_with_its_count_and_feasible_later(graph: Graph) -> None:
    token = _seed(graph, "zones")
    # By 09:00:02 in their time: in Tokyo 100 of 150 have it (50 late); Paris and New York, all of them.
    with pytest.raises(PreconditionFailed) as refused:
        schedule_dispatch(graph, data=_schedule(graph, "zones", token, "2026-03-02T09:00:02"), now=NOW,
                          settings=SETTINGS)  # fmt: skip
    assert refused.value.message.startswith(
        "50 recipients would get it after 09:00:02 on 2026-03-02 in their time (50 in Asia/Tokyo): the "
        "sending rate (notify 50/s (configured rate), waves 0 s apart) reaches 50 of them too late"
    )
    assert graph.run("MATCH (:Campaign {id: 'zones'})<-[:DISPATCH_OF]-(d) RETURN count(d) AS n")[0]["n"] == 0

    # By 09:00:05 each zone has 5 s from its own 09:00: feasible.
    data = _schedule(graph, "zones", token, "2026-03-02T09:00:05", onChange="send_current")
    (scheduled, *_) = schedule_dispatch(graph, data=data, now=NOW, settings=SETTINGS)
    assert scheduled.deadline is not None and scheduled.deadline.late_forecast == 0

    # When it fires (Kiritimati's 09:00), 200 more in Tokyo make 350 there: 250 by 09:00:05, 100 late.
    add_members(graph, "zones", [f"zones-late-{i:03d}" for i in range(200)], timeZone="Asia/Tokyo")
    fired = fire_due(graph, _never(), now=SEND_AT.instant(), settings=SETTINGS)
    assert list(fired.values()) == ["failed"]
    failed = get_dispatch(graph, scheduled.dispatch_id)
    assert failed.last_error is not None and failed.last_error.startswith(
        "100 recipients would get it after 09:00:05 on 2026-03-02 in their time (100 in Asia/Tokyo)"
    )


def test_a_deadline_in_their_time_not_after_their_own_start_is_no_deadline(graph: Graph) -> None:
    token = _seed(graph, "early")
    with pytest.raises(BadRequest, match="deliverBy has passed in every zone"):
        schedule_dispatch(graph, data=_schedule(graph, "early", token, "2026-03-02T09:00"), now=NOW,
                          settings=SETTINGS)  # fmt: skip


def test_a_preview_without_a_schedule_judges_each_zone_from_now(graph: Graph) -> None:
    # At NOW (12:00 UTC) it is 21:00 in Tokyo, 13:00 in Paris, 07:00 in New York: a deadline of 21:00:02
    # in their time has passed nowhere but is 2 s away in Tokyo only.
    _seed(graph, "now")
    by = WallClockAt(local_time="2026-03-01T21:00:02", per_recipient=True)
    fast = replace(SETTINGS, pace=replace(SETTINGS.pace, page_size=50))
    verdict = preview_dispatch(graph, campaign_id="now", now=NOW, settings=fast, deliver_by=by).deadline
    assert verdict is not None and verdict.late_by_zone and set(verdict.late_by_zone) == {"Asia/Tokyo"}


def _never() -> object:
    class Never:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"a failed schedule touched the queue ({name})")

    return Never()
