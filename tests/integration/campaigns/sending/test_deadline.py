"""A send's deadline (``campaigns/sending/deadline.py``) on the real graph, local queue and worker: refused
with the binding constraint and the late count when infeasible by construction (the rate, quiet hours in
the recipients' zones), nothing written; paced (shorter waves, never a faster rate) and met when
feasible; sent and audited with acceptLate; judged again when a schedule fires.

One module past 350 lines on purpose: the refusal, pacing, approval and schedule proofs of one rule
share its settings and API fixture, and read best side by side."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending.approval import ApprovalMissing, ApprovalPolicy, ApprovalStale
from campaign_engine.campaigns.sending.approval_awaiting import awaiting
from campaign_engine.campaigns.sending.approve import approve_dispatch
from campaign_engine.campaigns.sending.deadline import PreconditionFailed, pin
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.plan import Pace
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.campaigns.sending.schedule_input import WallClockAt
from campaign_engine.config import Settings
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    drain,
    inbox_server,
    local_queues,
    make_campaign,
)
from tests.support.email import add_email_members, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

# 50 recipients a page at the configured 50/s (nothing measured in a fresh graph): a page takes 1 s.
SETTINGS = DispatchSettings(adult_age=18, max_recipients=2000, pace=Pace(page_size=50, wave_delay=60))
MEMBERS = [f"p{i:03d}" for i in range(150)]


def _dispatches(graph: Graph, campaign_id: str) -> int:
    rows = graph.run(
        "MATCH (:Campaign {id: $id})<-[:DISPATCH_OF]-(d:Dispatch) RETURN count(d) AS n", id=campaign_id
    )
    return int(rows[0]["n"])


def test_a_deadline_the_rate_cannot_meet_is_refused_with_the_late_count_and_nothing_written(
    graph: Graph,
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    # Even with no pause between waves, 150 at 50/s take 3 s: by +2 s only 100 have it.
    floor = replace(SETTINGS, pace=replace(SETTINGS.pace, min_delay=0))
    by = NOW + timedelta(seconds=2)
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=floor, deliver_by=by)
    assert preview.deadline is not None
    assert (preview.deadline.met, preview.deadline.late, preview.deadline.binding) == (False, 50, "rate")
    revision = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.revision AS r")[0]["r"]
    with pytest.raises(PreconditionFailed) as refused:
        dispatch(graph, local_queues_stub(), campaign_id="c1", expected_token=None, now=NOW, settings=floor,
                 deliver_by=by)  # fmt: skip
    assert refused.value.message.startswith(
        "50 recipients would get it after 2026-03-01 12:00 UTC: the sending rate (notify 50/s (configured "
        "rate), waves 0 s apart) reaches 50 of them too late"
    )
    assert _dispatches(graph, "c1") == 0
    assert graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.revision AS r")[0]["r"] == revision

    # With waves at least 10 s apart (CAMPAIGN_DEADLINE_MIN_DELAY_SECONDS) the second wave starts at +11 s.
    spaced = replace(SETTINGS, pace=replace(SETTINGS.pace, min_delay=10))
    late = preview_dispatch(
        graph, campaign_id="c1", now=NOW, settings=spaced, deliver_by=by + timedelta(seconds=8)
    )
    assert late.deadline is not None and late.deadline.late == 100


def local_queues_stub() -> Any:
    """A queue that must never be used: a refused dispatch enqueues nothing."""

    class Never:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"a refused dispatch touched the queue ({name})")

    return Never()


def test_a_feasible_deadline_is_paced_with_shorter_waves_and_met(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    queues = local_queues(tmp_path / "q.sqlite3")
    with inbox_server(tmp_path) as inbox:
        add_members(graph, "c1", MEMBERS, webhook=f"{inbox.url}/api/notifications/send")
        # 3 pages at 60 s apart finish at +123 s; by +30 s the longest pause that meets it is 13 s
        # (1 + 13 + 1 + 13 + 1 = 29 s), and by +3 s none at all.
        paced = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS,
                                 deliver_by=NOW + timedelta(seconds=30))  # fmt: skip
        assert paced.deadline is not None and paced.deadline.met
        assert paced.deadline.wave_delay_seconds == {"notify": 13}
        assert parse_ts(paced.plan["notify"].finishes_at) == NOW + timedelta(seconds=29)
        assert [s.kind for s in paced.plan["notify"].shaped_by][-1] == "deadline"

        by = NOW + timedelta(seconds=3)
        started = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW,
                           settings=SETTINGS, deliver_by=by)  # fmt: skip
        kept = get_dispatch(graph, started.dispatch_id).deadline
        assert kept is not None
        assert (kept.deliver_by, kept.latest_at, kept.wave_delay_seconds) == (format_ts(by), format_ts(by), 0)
        assert (kept.accept_late, kept.late_forecast, kept.late_at) == (False, 0, None)
        # The worker is configured for 600 s between waves: only the Dispatch's paced pause lets the
        # three pages run back to back, so the queue drains with the send complete.
        settings = delivery_settings(base_settings, campaign_dispatch_page_size=50,
                                     campaign_dispatch_delay_seconds=600)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(NOW + timedelta(seconds=2)),
                              sweep_every=None)  # fmt: skip
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
    done = get_dispatch(graph, started.dispatch_id)
    assert (done.status, done.acknowledged) == ("completed", 150)
    assert done.plan is not None and parse_ts(done.plan.finishes_at) <= by  # met: the last outcome by then


def test_quiet_hours_in_the_recipients_zones_refuse_a_local_deadline_unless_accepted_or_critical(
    graph: Graph,
) -> None:
    make_email_campaign(
        graph, "quiet", quietHours={"start": "21:00", "end": "07:00"}, timeZone="Europe/London"
    )
    # At NOW (12:00 UTC) Sydney (23:00) and Tokyo (21:00) are in their quiet hours until 07:00 local.
    zones = {"Europe/London": 40, "America/New_York": 30, "Australia/Sydney": 20, "Asia/Tokyo": 10}
    for zone, count in zones.items():
        add_email_members(graph, "quiet", [f"{zone}-{i:02d}" for i in range(count)], timeZone=zone)
    by = WallClockAt(local_time="2026-03-02T07:00", per_recipient=True)
    verdict = preview_dispatch(graph, campaign_id="quiet", now=NOW, settings=SETTINGS, deliver_by=by).deadline
    assert verdict is not None and (verdict.late, verdict.binding) == (30, "quiet_hours")
    assert verdict.message == (
        "30 recipients would get it after 07:00 on 2026-03-02 in their time (20 in Australia/Sydney, "
        "10 in Asia/Tokyo): quiet hours end at 07:00 for 30 of them"
    )
    assert verdict.late_by_zone == {"Australia/Sydney": 20, "Asia/Tokyo": 10}
    assert verdict.latest_at == "2026-03-02T12:00:00.000000Z"  # 07:00 in New York, the last zone
    with pytest.raises(PreconditionFailed, match="quiet hours end at 07:00 for 30 of them"):
        dispatch(graph, local_queues_stub(), campaign_id="quiet", expected_token=None, now=NOW,
                 settings=SETTINGS, deliver_by=by)  # fmt: skip
    assert _dispatches(graph, "quiet") == 0

    # Critical skips quiet hours: the same deadline is met.
    graph.run("MATCH (c:Campaign {id: 'quiet'}) SET c.priority = 'critical'")
    critical = preview_dispatch(
        graph, campaign_id="quiet", now=NOW, settings=SETTINGS, deliver_by=by
    ).deadline
    assert critical is not None and critical.met
    graph.run("MATCH (c:Campaign {id: 'quiet'}) SET c.priority = 'normal'")


def test_accept_late_sends_and_the_audit_entry_records_it_with_the_late_count(
    graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    queues = local_queues(tmp_path / "q.sqlite3")
    by = NOW + timedelta(seconds=2)
    started = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW,
                       settings=SETTINGS, deliver_by=by, accept_late=True, audit=_audit())  # fmt: skip
    kept = get_dispatch(graph, started.dispatch_id).deadline
    assert kept is not None and (kept.accept_late, kept.late_forecast, kept.wave_delay_seconds) == (
        True,
        50,
        0,
    )
    assert queues.dispatch.receive(max_messages=10)  # it is sending
    [entry] = graph.run("MATCH (a:AuditEntry {procedure: 'campaigns.dispatch'}) RETURN a.detail AS d")
    detail = json.loads(entry["d"])
    assert (detail["acceptLate"], detail["late"], detail["deliverBy"]) == (True, 50, "2026-03-01 12:00 UTC")


def _audit(actor: str = ADMIN_ID) -> AuditContext:
    return AuditContext.begin(actor=actor, procedure="campaigns.dispatch", request_id="r1", now=NOW,
                              tenant_id="default")  # fmt: skip


def test_an_approval_pins_the_deadline_and_a_send_asking_another_is_refused(
    graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    token = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS).preview_token
    by = NOW + timedelta(seconds=2)  # late for 50: approved with acceptLate
    approve_dispatch(graph, campaign_id="c1", preview_token=token, approver="p-approver", now=NOW,
                     settings=SETTINGS, deadline=pin(by, True))  # fmt: skip
    queues = local_queues(tmp_path / "q.sqlite3")
    policy = ApprovalPolicy(min_recipients=10)
    send: dict[str, Any] = {"campaign_id": "c1", "expected_token": token, "now": NOW, "settings": SETTINGS,
                            "audit": _audit("p-dispatcher"), "approval_policy": policy}  # fmt: skip
    pinned = re.escape("pinned deliverBy 2026-03-01T12:00:02.000000Z with acceptLate")
    for asked, late in ((by + timedelta(minutes=5), True), (by, False), (None, False)):
        with pytest.raises(ApprovalStale, match=pinned):
            dispatch(graph, queues.dispatch, **send, deliver_by=asked, accept_late=late)
    started = dispatch(graph, queues.dispatch, **send, deliver_by=by, accept_late=True)
    kept = get_dispatch(graph, started.dispatch_id)
    assert kept.approved_by == "p-approver" and kept.deadline is not None and kept.deadline.accept_late


@pytest.fixture
def api(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[TrpcClient]:
    settings = base_settings.model_copy(update={"campaign_dispatch_page_size": 50})
    queue = local_queues(tmp_path / "q.sqlite3").dispatch
    with api_client(settings, graph, clock=StepClock(NOW), dispatch_queue=queue) as client:
        yield client


def _call(api: TrpcClient, path: str, data: dict[str, Any], *, query: bool = False) -> Any:
    call = api.query if query else api.mutate
    return call(f"campaigns.{path}", data, as_=ADMIN_ID, admin=True)


def test_the_api_checks_deliver_by_and_refuses_with_precondition_failed(
    api: TrpcClient, graph: Graph
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    for bad in ("2026-03-01T11:00:00Z", {"localTime": "2026-03-02T07:00"}, "tomorrow"):
        assert error_code(_call(api, "dispatch", {"campaignId": "c1", "deliverBy": bad})) == "BAD_REQUEST"
    refused = _call(api, "dispatch", {"campaignId": "c1", "deliverBy": "2026-03-01T12:00:02Z"})
    assert error_code(refused) == "PRECONDITION_FAILED"
    assert "recipients would get it after 2026-03-01 12:00 UTC" in refused.json()["error"]["message"]
    verdict = ok(
        _call(api, "previewDispatch", {"campaignId": "c1", "deliverBy": "2026-03-01T13:00:00Z"}, query=True)
    )
    assert verdict["deadline"]["met"] and verdict["deadline"]["waveDelaySeconds"] == {"notify": 60}
    sent = ok(_call(api, "dispatch", {"campaignId": "c1", "deliverBy": "2026-03-01T13:00:00Z"}))
    got = ok(_call(api, "getDispatch", {"dispatchId": sent["dispatchId"]}, query=True))
    assert got["deadline"]["deliverBy"] == "2026-03-01T13:00:00.000000Z" and not got["deadline"]["acceptLate"]


def test_a_schedule_is_judged_when_scheduled_and_again_when_it_fires(api: TrpcClient, graph: Graph) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    send_at = NOW + timedelta(hours=1)

    def schedule(deliver_by: str, **extra: Any) -> Any:
        token = ok(_call(api, "previewDispatch", {"campaignId": "c1"}, query=True))["previewToken"]
        data = {"campaignId": "c1", "sendAt": format_ts(send_at), "expectedPreviewToken": token,
                "deliverBy": deliver_by, **extra}  # fmt: skip
        return _call(api, "scheduleDispatch", data)

    assert error_code(schedule(format_ts(send_at))) == "BAD_REQUEST"  # not after sendAt
    refused = schedule(format_ts(send_at + timedelta(seconds=2)))  # 150 at 50/s from sendAt: 3 s at least
    assert (
        error_code(refused) == "PRECONDITION_FAILED" and "50 recipients" in refused.json()["error"]["message"]
    )
    assert _dispatches(graph, "c1") == 0
    # By sendAt + 10 s: 150 in 3 s with waves paced from 60 s to 3 s apart.
    (scheduled,) = ok(schedule(format_ts(send_at + timedelta(seconds=10)), onChange="send_current"))
    assert scheduled["deadline"]["waveDelaySeconds"] == 3

    # 750 at 50/s take 15 s: at sendAt + 10 s, 250 of them still wait.
    add_members(graph, "c1", [f"q{i:04d}" for i in range(600)])
    settings = DispatchSettings.from_settings(
        api.settings.model_copy(update={"campaign_dispatch_page_size": 50})
    )
    outcome = fire_due(graph, local_queues_stub(), now=send_at, settings=settings)
    assert list(outcome.values()) == ["failed"]
    got = ok(_call(api, "getDispatch", {"dispatchId": scheduled["dispatchId"]}, query=True))
    assert got["status"] == "failed" and got["lastError"].endswith("without acceptLate, so nothing was sent")
    assert got["lastError"].startswith("250 recipients would get it after 2026-03-01 13:00 UTC")


def test_a_held_send_asks_its_deadline_and_the_approval_pins_what_was_asked(
    graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    token = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS).preview_token
    by = NOW + timedelta(minutes=10)
    queues = local_queues(tmp_path / "q.sqlite3")
    policy = ApprovalPolicy(min_recipients=10)
    send: dict[str, Any] = {"campaign_id": "c1", "expected_token": token, "now": NOW, "settings": SETTINGS,
                            "audit": _audit("p-dispatcher"), "approval_policy": policy}  # fmt: skip
    send["deliver_by"] = by
    with pytest.raises(ApprovalMissing):
        dispatch(graph, queues.dispatch, **send)
    [asked] = awaiting(graph, tenant_id="default").records
    assert (asked.deliver_by, asked.accept_late) == (format_ts(by), False)
    # The approver approves the request as listed: its deadline is pinned without being typed again.
    approve_dispatch(
        graph, campaign_id="c1", preview_token=token, approver="p-approver", now=NOW, settings=SETTINGS
    )
    started = dispatch(graph, queues.dispatch, **send)
    assert get_dispatch(graph, started.dispatch_id).approved_by == "p-approver"


def test_a_paced_send_is_measured_with_its_own_pause_not_the_configured_one(graph: Graph) -> None:
    # A completed 3-page send paced to no pause took 3 s: 50/s. Taking the configured 60 s pauses off
    # its 3 s would have measured it at 500/s, and every later deadline would look ten times easier.
    start = NOW - timedelta(minutes=5)
    graph.run(
        "CREATE (:Dispatch {id: 'paced', channel: 'notify', status: 'completed', startedAt: $start,"
        " lastOutcomeAt: $end, finishedAt: $end, pages: 3, acknowledged: 150, rejected: 0, suppressed: 0,"
        " waveDelaySeconds: 0})",
        start=format_ts(start), end=format_ts(start + timedelta(seconds=3)),
    )  # fmt: skip
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    plan = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS).plan["notify"]
    assert (plan.rate_source, plan.rate) == ("measured", 50.0)


def test_an_email_walk_keeps_the_paced_pause_and_sends_each_reader_once(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_email_campaign(graph, "mail")
    readers = [f"r{i:03d}" for i in range(60)]
    add_email_members(graph, "mail", readers)
    queues = local_queues(tmp_path / "q.sqlite3")
    # 3 pages of 20 at 20/s take 3 s: by +3 s only with no pause between waves.
    paced = replace(SETTINGS, pace=replace(SETTINGS.pace, email_page_size=20))
    started = dispatch(graph, queues.dispatch, campaign_id="mail", expected_token=None, now=NOW,
                       settings=paced, deliver_by=NOW + timedelta(seconds=3))  # fmt: skip
    assert get_dispatch(graph, started.dispatch_id).deadline.wave_delay_seconds == 0  # type: ignore[union-attr]
    with PostmarkStandin() as postmark:
        settings = email_settings(base_settings, postmark.url, postmark.token, campaign_email_page_size=20,
                                  campaign_dispatch_delay_seconds=600)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(NOW + timedelta(seconds=1)),
                              sweep_every=None)  # fmt: skip
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
    done = get_dispatch(graph, started.dispatch_id)
    assert (done.status, done.emailed) == ("completed", 60)
    sent_to = [m["To"].split("@")[0] for m in postmark.accepted]
    assert sorted(sent_to) == readers  # each reader exactly once


def test_a_schedule_that_still_meets_its_deadline_starts_paced_with_its_forecast(
    api: TrpcClient, graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    send_at = NOW + timedelta(hours=1)
    token = ok(_call(api, "previewDispatch", {"campaignId": "c1"}, query=True))["previewToken"]
    data = {"campaignId": "c1", "sendAt": format_ts(send_at), "expectedPreviewToken": token,
            "deliverBy": format_ts(send_at + timedelta(seconds=30))}  # fmt: skip
    (scheduled,) = ok(_call(api, "scheduleDispatch", data))
    settings = DispatchSettings.from_settings(
        api.settings.model_copy(update={"campaign_dispatch_page_size": 50})
    )
    queue = local_queues(tmp_path / "fire.sqlite3").dispatch
    assert list(fire_due(graph, queue, now=send_at, settings=settings).values()) == ["sending"]
    got = get_dispatch(graph, scheduled["dispatchId"])
    assert got.status == "sending" and got.deadline is not None and got.deadline.wave_delay_seconds == 13
    assert got.plan is not None and parse_ts(got.plan.forecast_finishes_at) == send_at + timedelta(seconds=29)
