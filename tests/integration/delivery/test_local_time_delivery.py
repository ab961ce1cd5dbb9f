"""Each recipient's local time and quiet hours against the real graph and the real worker.

A schedule of 09:00 "in each recipient's zone" and quiet hours are driven with one injectable clock:
the sweeper (``run_sweep``) fires the schedule and enqueues each pass when its ``nextPageAt`` is due,
the real job table walks the pages and POSTs to the reference inbox (notify) or the Postmark stand-in
(email). Before each recipient's instant the test checks they have nothing yet; at it, exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch, list_dispatches
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
    notified,
    start_dispatch,
)
from tests.support.email import add_email_members, email_settings, emailed, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


@pytest.fixture
def clock() -> StepClock:
    return StepClock(NOW)


@pytest.fixture
def api(base_settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=clock, dispatch_queue=queues.dispatch) as client:
        yield client


def _admin(api: TrpcClient, path: str, data: dict[str, Any], *, query: bool = False) -> Any:
    call = api.query if query else api.mutate
    return call(f"campaigns.{path}", data, as_=ADMIN_ID, admin=True)


def _schedule(api: TrpcClient, campaign_id: str, send_at: Any, **extra: Any) -> Any:
    token = ok(_admin(api, "previewDispatch", {"campaignId": campaign_id}, query=True))["previewToken"]
    body = {"campaignId": campaign_id, "sendAt": send_at, "expectedPreviewToken": token, **extra}
    return _admin(api, "scheduleDispatch", body)


class _Run:
    """The worker edge at a chosen instant: sweep (fire schedules, enqueue due passes), then drain."""

    def __init__(self, settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> None:
        self.settings, self.graph, self.queues, self.clock = settings, graph, queues, clock
        self.worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)

    def at(self, moment: datetime) -> None:
        self.clock.now = moment
        run_sweep(self.settings, self.graph, self.queues.dispatch, clock=self.clock)
        drain(self.worker.handle, self.queues)


@pytest.fixture
def run(base_settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> Iterator[_Run]:
    runner = _Run(delivery_settings(base_settings, campaign_dispatch_page_size=2), graph, queues, clock)
    try:
        yield runner
    finally:
        runner.worker.close()


def _walk(
    run: _Run, expected: dict[str, datetime], received: Any, *, done: frozenset[str] = frozenset()
) -> None:
    """Step the clock to one second before and then to each expected instant, in order: nobody gets
    anything before their instant, and at it exactly their own arrives (``done``: already received)."""
    have = set(done)
    for moment in sorted(set(expected.values())):
        run.at(moment - timedelta(seconds=1))
        assert received() == have, f"early before {moment}"
        run.at(moment)
        have |= {who for who, at in expected.items() if at == moment}
        assert received() == have, f"at {moment}"


def test_nine_local_time_reaches_each_recipient_once_at_their_own_instant(
    api: TrpcClient, graph: Graph, run: _Run, tmp_path: Path
) -> None:
    make_campaign(graph, "c1", timeZone="Asia/Tokyo")  # the fallback zone: UTC+9, no daylight saving
    zones = {
        "kiri": "Pacific/Kiritimati",  # UTC+14: the first wave, when the schedule fires
        "nozone": None,  # falls back to the campaign's zone
        "badzone": "Mars/Base",  # not in the tz database: the campaign's zone too
        "ny": "America/New_York",
        "pago": "Pacific/Pago_Pago",  # UTC-11: the last wave
    }
    with inbox_server(tmp_path) as inbox:
        for who, zone in zones.items():
            add_members(graph, "c1", [who], webhook=f"{inbox.url}/api/notifications/send", timeZone=zone)
        (scheduled,) = ok(_schedule(api, "c1", {"localTime": "2026-12-07T09:00", "perRecipient": True}))
        assert scheduled["sendAt"] == "2026-12-06T19:00:00.000000Z"  # 09:00 at UTC+14
        assert (scheduled["perRecipient"], scheduled["sendLocalTime"]) == (True, "2026-12-07T09:00")
        expected = {
            "kiri": _utc("2026-12-06T19:00"),
            "nozone": _utc("2026-12-07T00:00"),
            "badzone": _utc("2026-12-07T00:00"),
            "ny": _utc("2026-12-07T14:00"),
            "pago": _utc("2026-12-07T20:00"),
        }
        _walk(run, expected, lambda: set(notified(graph, "c1")))
        assert all(len(inbox_records(inbox.url, who)) == 1 for who in zones)
    record = get_dispatch(graph, scheduled["dispatchId"])
    assert (record.status, record.deferred, record.missed, record.acknowledged) == ("completed", 0, 0, 5)
    assert record.pass_number == 4  # kiri; nozone + badzone; ny; pago


@pytest.mark.parametrize(
    ("local_time", "instant"),
    [
        ("2026-03-08T02:30", "2026-03-08T07:30"),  # spring forward: 02:30 never happens; 03:30 EDT
        ("2026-11-01T01:30", "2026-11-01T05:30"),  # fall back: 01:30 happens twice; the first, EDT
    ],
)
def test_a_transition_day_resolves_once_and_never_early(
    api: TrpcClient, graph: Graph, run: _Run, tmp_path: Path, local_time: str, instant: str
) -> None:
    make_campaign(graph, "c1")
    with inbox_server(tmp_path) as inbox:
        add_members(
            graph, "c1", ["ny"], webhook=f"{inbox.url}/api/notifications/send", timeZone="America/New_York"
        )
        add_members(graph, "c1", ["utc"], webhook=f"{inbox.url}/api/notifications/send")
        ok(_schedule(api, "c1", {"localTime": local_time, "perRecipient": True}))
        run.at(_utc(local_time) - timedelta(hours=14))  # fires when UTC+14 reaches the local time
        assert notified(graph, "c1") == []
        expected = {"ny": _utc(instant), "utc": _utc(local_time)}
        _walk(run, expected, lambda: set(notified(graph, "c1")))
        run.at(_utc(instant) + timedelta(hours=2))  # the repeated hour of a fall-back night sends nothing
        assert len(inbox_records(inbox.url, "ny")) == 1


def test_a_pass_reached_after_max_late_misses_instead_of_sending(
    api: TrpcClient, graph: Graph, run: _Run, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    with inbox_server(tmp_path) as inbox:
        add_members(
            graph,
            "c1",
            ["kiri"],
            webhook=f"{inbox.url}/api/notifications/send",
            timeZone="Pacific/Kiritimati",
        )
        add_members(graph, "c1", ["utc"], webhook=f"{inbox.url}/api/notifications/send", timeZone="UTC")
        (scheduled,) = ok(
            _schedule(api, "c1", {"localTime": "2026-12-07T09:00", "perRecipient": True}, maxLateSeconds=600)
        )
        run.at(_utc("2026-12-06T19:00"))
        assert notified(graph, "c1") == ["kiri"]
        run.at(_utc("2026-12-07T09:11"))  # the machine was down at 09:00 UTC
        assert notified(graph, "c1") == ["kiri"]
    record = get_dispatch(graph, scheduled["dispatchId"])
    assert (record.status, record.missed, record.deferred) == ("completed", 1, 0)


def test_a_schedule_names_one_zone_or_each_recipients(api: TrpcClient, graph: Graph) -> None:
    make_campaign(graph, "c1")
    both = {"localTime": "2026-12-07T09:00", "perRecipient": True, "timeZone": "Europe/Paris"}
    assert error_code(_schedule(api, "c1", both)) == "BAD_REQUEST"
    assert error_code(_schedule(api, "c1", {"localTime": "2026-12-07T09:00"})) == "BAD_REQUEST"
    bad = {"id": "c2", "name": "x", "channels": ["notify"], "timeZone": "Mars/Base",
           "notification": {"title": "t", "body": "b"}}  # fmt: skip
    assert error_code(_admin(api, "create", bad)) == "BAD_REQUEST"
    empty = {**bad, "timeZone": "UTC", "quietHours": {"start": "21:00", "end": "21:00"}}
    assert error_code(_admin(api, "create", empty)) == "BAD_REQUEST"


def _quiet_members(graph: Graph, add: Any, campaign_id: str, **extra: Any) -> None:
    for who, zone in {"paris": "Europe/Paris", "tokyo": "Asia/Tokyo", "la": "America/Los_Angeles"}.items():
        add(graph, campaign_id, [who], timeZone=zone, **extra)


# NOW is 2026-03-01T12:00Z: 13:00 in Paris (awake), 21:00 in Tokyo and 04:00 in Los Angeles (quiet).
QUIET_EXPECTED = {
    "la": _utc("2026-03-01T16:00"),  # 08:00 PST
    "tokyo": _utc("2026-03-01T23:00"),  # 08:00 JST the next day
}


def test_quiet_hours_defer_notify_to_their_end_never_drop_and_leave_in_app_alone(
    api: TrpcClient, graph: Graph, run: _Run, queues: Queues, tmp_path: Path
) -> None:
    make_campaign(graph, "c1", channels=["inApp", "notify"], quietHours={"start": "21:00", "end": "08:00"})
    with inbox_server(tmp_path) as inbox:
        _quiet_members(graph, add_members, "c1", webhook=f"{inbox.url}/api/notifications/send")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id
        run.at(NOW)
        assert notified(graph, "c1") == ["paris"]
        waiting = get_dispatch(graph, dispatch_id)
        assert (waiting.status, waiting.deferred, waiting.pass_number) == ("sending", 2, 2)
        assert waiting.next_page_at == "2026-03-01T16:00:00.000000Z"
        assert [d.deferred for d in list_dispatches(graph, "c1")] == [2]
        listed = ok(_admin(api, "listDispatches", {"campaignId": "c1"}, query=True))
        assert (listed[0]["deferred"], listed[0]["pass"]) == (2, 2)
        # In-app is unaffected: the campaign shows for a recipient in their quiet hours.
        mine = ok(api.query("campaigns.getMyCampaigns", as_="tokyo"))["campaigns"]
        assert [c["campaignId"] for c in mine] == ["c1"]
        _walk(run, QUIET_EXPECTED, lambda: set(notified(graph, "c1")), done=frozenset({"paris"}))
        assert all(len(inbox_records(inbox.url, who)) == 1 for who in ["paris", *QUIET_EXPECTED])
    record = get_dispatch(graph, dispatch_id)
    assert (record.status, record.deferred, record.acknowledged) == ("completed", 0, 3)


def test_quiet_hours_defer_email_to_their_end_and_claim_nobody_early(
    base_settings: Settings, graph: Graph, queues: Queues, clock: StepClock, standin: PostmarkStandin
) -> None:
    standin.reset()
    settings = email_settings(base_settings, standin.url, standin.token, campaign_email_page_size=2)
    runner = _Run(delivery_settings(settings), graph, queues, clock)
    try:
        make_email_campaign(graph, "c1", quietHours={"start": "21:00", "end": "08:00"})
        _quiet_members(graph, add_email_members, "c1")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
        runner.at(NOW)
        assert emailed(graph, "c1") == ["paris"]
        waiting = get_dispatch(graph, dispatch_id)
        assert (waiting.status, waiting.deferred, waiting.next_page_at) == (
            "sending",
            2,
            "2026-03-01T16:00:00.000000Z",
        )
        _walk(runner, QUIET_EXPECTED, lambda: set(emailed(graph, "c1")), done=frozenset({"paris"}))
        assert len(standin.accepted) == 3
    finally:
        runner.worker.close()
    record = get_dispatch(graph, dispatch_id)
    assert (record.status, record.deferred, record.emailed) == ("completed", 0, 3)


def test_pages_that_send_nobody_are_not_paced_by_the_wave_delay(
    api: TrpcClient, base_settings: Settings, graph: Graph, queues: Queues, clock: StepClock, tmp_path: Path
) -> None:
    """A pass reads the whole audience to find one zone's recipients. Pacing its empty pages by the wave
    delay would stretch it past maxLateSeconds (1000 pages x 60 s), so only a page that sent waits."""
    settings = delivery_settings(
        base_settings, campaign_dispatch_page_size=2, campaign_dispatch_delay_seconds=60
    )
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    make_campaign(graph, "c1", timeZone="UTC")
    try:
        with inbox_server(tmp_path) as inbox:
            webhook = f"{inbox.url}/api/notifications/send"
            add_members(graph, "c1", ["a1", "a2", "a3", "a4"], webhook=webhook, timeZone="America/New_York")
            add_members(graph, "c1", ["b1", "b2", "b3"], webhook=webhook, timeZone="Pacific/Kiritimati")
            ok(_schedule(api, "c1", {"localTime": "2026-12-07T09:00", "perRecipient": True}))
            clock.now = _utc("2026-12-06T19:00")  # 09:00 at UTC+14: only the b* members are due
            run_sweep(settings, graph, queues.dispatch, clock=clock)
            for page in (["a1", "a2"], ["a3", "a4"]):  # nobody due: the successor is visible at once
                messages = queues.dispatch.receive(max_messages=10)
                assert len(messages) == 1, f"the page after {page} waited"
                worker.handle(queues.dispatch, messages)
            messages = queues.dispatch.receive(max_messages=10)
            assert len(messages) == 1
            worker.handle(queues.dispatch, messages)  # b1, b2: sent, so the next page waits the delay
            assert queues.dispatch.receive(max_messages=10) == []
            drain(worker.handle, queues)
            assert set(notified(graph, "c1")) == {"b1", "b2"}
    finally:
        worker.close()
