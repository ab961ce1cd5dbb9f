"""The review's forecast (``campaigns/sending/plan.py``) on the real graph, local queue, worker and inbox:
the rate is this deployment's own once a send completed (to its last outcome, not its last page), the
configured one before, and getDispatch re-estimates the finish from the progress; quiet hours in the
recipients' zones push the finish past their end, and a test wave adds its decision time."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.plan import CONFIGURED_RATE, Pace
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
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
from tests.support.email import EMAIL_COPY, add_email_members, make_email_campaign

SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000, pace=Pace(page_size=50, wave_delay=0))
MEMBERS = [f"p{i:03d}" for i in range(150)]


def test_a_preview_after_a_send_assumes_the_measured_rate_and_before_it_the_configured_one(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "first")
    make_campaign(graph, "next")
    queues = local_queues(tmp_path / "q.sqlite3")
    with inbox_server(tmp_path) as inbox:
        hook = f"{inbox.url}/api/notifications/send"
        add_members(graph, "first", MEMBERS, webhook=hook)
        add_members(graph, "next", [f"n{i:03d}" for i in range(300)], webhook=hook)
        before = preview_dispatch(graph, campaign_id="first", now=NOW, settings=SETTINGS).plan["notify"]
        assert (before.rate_source, before.rate) == ("configured", CONFIGURED_RATE["notify"])
        assert parse_ts(before.finishes_at) == NOW + timedelta(seconds=150 / CONFIGURED_RATE["notify"])

        first = dispatch(graph, queues.dispatch, campaign_id="first", expected_token=None, now=NOW,
                         settings=SETTINGS).dispatch_id  # fmt: skip
        clock = StepClock(NOW + timedelta(seconds=5))
        settings = delivery_settings(base_settings, campaign_dispatch_page_size=50)
        worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
        try:
            # Every page is walked at +5 s (the Dispatch completes then); the POSTs answer by +30 s.
            while messages := queues.dispatch.receive(max_messages=10):
                worker.handle(queues.dispatch, messages)
            clock.now = NOW + timedelta(seconds=30)
            drain(worker.handle, queues)
        finally:
            worker.close()

    # getDispatch's live estimate: the forecast kept at the confirmation (3 s at the configured 50/s)
    # against the progress: 150 answered by +30 s, so the forecast was 90% short.
    live = get_dispatch(graph, first).plan
    assert live is not None and live.forecast_finishes_at == format_ts(NOW + timedelta(seconds=3))
    assert (live.sent, live.rate, live.finishes_at) == (150, 5.0, format_ts(NOW + timedelta(seconds=30)))
    assert (live.error, live.forecast_rate_source) == (-0.9, "configured")

    later = NOW + timedelta(minutes=5)
    plan = preview_dispatch(graph, campaign_id="next", now=later, settings=SETTINGS).plan["notify"]
    # 150 recipients from the dispatch to the last outcome in 30 s: 5/s (the walk alone said 30/s).
    assert plan.rate_source == "measured" and abs(plan.rate - 5.0) < 0.01
    assert plan.starts_at == format_ts(later)
    assert parse_ts(plan.finishes_at) == later + timedelta(seconds=60)  # 300 recipients at 5/s
    assert plan.recipients == 300


def test_quiet_hours_in_the_recipients_zones_push_the_email_finish_past_their_end(graph: Graph) -> None:
    window = {"start": "21:00", "end": "07:00"}
    make_email_campaign(graph, "quiet", quietHours=window, timeZone="Europe/London")
    # At NOW (12:00 UTC): London 12:00 and New York 07:00 may receive; Sydney (23:00) and Tokyo (21:00)
    # are in their quiet hours until 07:00 local: 20:00 and 22:00 UTC.
    zones = {"Europe/London": 40, "America/New_York": 30, "Australia/Sydney": 20, "Asia/Tokyo": 10}
    for zone, count in zones.items():
        add_email_members(graph, "quiet", [f"{zone}-{i:02d}" for i in range(count)], timeZone=zone)
    preview = preview_dispatch(graph, campaign_id="quiet", now=NOW, settings=SETTINGS)
    plan = preview.plan["email"]
    assert list(preview.plan) == ["email"] and plan.recipients == 100
    tokyo_end = NOW.replace(hour=22)
    rate = CONFIGURED_RATE["email"]
    assert plan.starts_at == format_ts(NOW)
    assert parse_ts(plan.finishes_at) == tokyo_end + timedelta(seconds=10 / rate)
    [quiet] = [s for s in plan.shaped_by if s.kind == "quiet_hours"]
    assert quiet.adds_seconds == round((tokyo_end - NOW).total_seconds() - 90 / rate)
    assert "30 recipients wait" in quiet.message

    # A campaign's own zone is the fallback only: without the recipients' zones it would look quiet-free.
    graph.run("MATCH (c:Campaign {id: 'quiet'}) SET c.priority = 'critical'")
    critical = preview_dispatch(graph, campaign_id="quiet", now=NOW, settings=SETTINGS).plan["email"]
    assert parse_ts(critical.finishes_at) == NOW + timedelta(seconds=100 / rate)  # critical skips them
    assert not [s for s in critical.shaped_by if s.kind == "quiet_hours"]


def test_a_test_wave_adds_its_decision_time_before_the_rest(graph: Graph) -> None:
    variants = [{"id": "A"}, {"id": "B", "email": {**EMAIL_COPY, "subject": "Subject B"}}]
    make_email_campaign(graph, "ab", variants=variants)
    add_email_members(graph, "ab", MEMBERS)
    settings = replace(SETTINGS, experiment_min_per_variant=1)
    experiment = Experiment(test_share=0.2, metric="emailClicked", decide_after_seconds=600)
    plain = preview_dispatch(graph, campaign_id="ab", now=NOW, settings=settings).plan["email"]
    asked = preview_dispatch(graph, campaign_id="ab", now=NOW, settings=settings, experiment=experiment)
    tested = asked.plan["email"]
    rate = CONFIGURED_RATE["email"]
    assert parse_ts(plain.finishes_at) == NOW + timedelta(seconds=150 / rate) and plain.shaped_by == []
    # 30 test recipients first (1.5 s), then the decision at +600 s, then the other 120.
    assert parse_ts(tested.finishes_at) == NOW + timedelta(seconds=600 + 120 / rate)
    [wave] = tested.shaped_by
    assert (wave.kind, wave.adds_seconds) == ("test_wave", round(600 - 30 / rate))


def _past_sends(graph: Graph, runs: list[tuple[int, float]]) -> None:
    """Completed notify Dispatches, oldest first: (recipients, seconds to the last outcome)."""
    for i, (sent, seconds) in enumerate(runs):
        _past_send(graph, sent, seconds, began=NOW - timedelta(hours=1, minutes=-i), id=f"past-{i}")


def _past_send(
    graph: Graph, sent: int, seconds: float, *, began: datetime, finished: float | None = None, **props: Any
) -> None:
    """A completed notify Dispatch of ``sent`` recipients whose last outcome came ``seconds`` after it
    began and which completed ``finished`` seconds after it (then, by default); ``props`` (its
    ``pages``, ``waveDelayUsed``) over one page."""
    graph.run(
        "CREATE (d:Dispatch {channel: 'notify', status: 'completed', startedAt: $start, lastOutcomeAt: $end,"
        " finishedAt: $done, pages: 1, acknowledged: $sent, rejected: 0, suppressed: 0}) SET d += $props",
        start=format_ts(began), end=format_ts(began + timedelta(seconds=seconds)),
        done=format_ts(began + timedelta(seconds=seconds if finished is None else finished)), sent=sent,
        props={"id": f"past-{sent}-{seconds}", **props},
    )  # fmt: skip


def test_the_measured_rate_is_the_median_of_the_newest_sends_of_a_comparable_size(graph: Graph) -> None:
    # Three 150-recipient sends (3 s, 3 s, then 0.5 s: 50/s, 50/s, 300/s), then five 10,000-recipient
    # sends at 1,000/s, the newest. A pooled average of the newest five would say 1,000/s for this
    # 150-recipient send; those of its size say 50/s (the median: the 300/s outlier is left out).
    _past_sends(graph, [(150, 3.0), (150, 3.0), (150, 0.5)] + [(10_000, 10.0)] * 5)
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    plan = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS).plan["notify"]
    assert (plan.rate_source, plan.rate) == ("measured", 50.0)


def test_with_no_send_of_its_size_the_rate_is_the_median_not_the_pooled_rate(graph: Graph) -> None:
    # Five 10,000-recipient sends, the oldest cold (50 s: 200/s), the others at 1,000/s; this send of
    # 150 has none of its size. Pooled, the cold one weighs by its length: 50,000 / 90 s = 556/s.
    _past_sends(graph, [(10_000, 50.0)] + [(10_000, 10.0)] * 4)
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    plan = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS).plan["notify"]
    assert (plan.rate_source, plan.rate) == ("measured", 1000.0)


def test_the_pause_after_a_full_last_page_is_not_taken_from_the_measured_sending_time(graph: Graph) -> None:
    # 1,000 recipients over pages of 500 with 60 s waves: 100 s of sending and one pause before the last
    # outcome (160 s), then the pause after the full last page and a read that found nothing (3 pages).
    _past_send(graph, 1000, 160, began=NOW - timedelta(hours=1), finished=220, pages=3)
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    paced = replace(SETTINGS, pace=Pace(page_size=500, wave_delay=60))
    plan = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=paced).plan["notify"]
    assert (plan.rate_source, plan.rate) == ("measured", 10.0)  # taking two pauses off would say 25/s


def test_a_waved_send_is_measured_with_the_pause_its_worker_recorded_not_floored(graph: Graph) -> None:
    # 10,000 over pages of 1,000 at 2,700/s with 60 s waves: 3.7 s of sending in 543.7 s to the last
    # outcome (nine pauses), eleven pages with the read after the full last one. Taking the configured
    # pauses off, floored at a tenth of the time (for a worker that kept shorter ones), said 184/s; the
    # worker records the pause it kept after its pages (waveDelayUsed), so the floor is not needed.
    _past_send(
        graph, 10_000, 543.7, began=NOW - timedelta(hours=1), finished=603.7, pages=11, waveDelayUsed=60
    )
    make_campaign(graph, "c1")
    add_members(graph, "c1", MEMBERS)
    waved = replace(SETTINGS, pace=Pace(page_size=1000, wave_delay=60))
    plan = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=waved).plan["notify"]
    assert plan.rate_source == "measured" and abs(plan.rate - 10_000 / 3.7) < 1, plan
