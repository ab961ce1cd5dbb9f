"""Frequency cap across campaigns, against the real graph with real concurrency.

Three campaigns of one tenant are dispatched at the same moment to one audience with a cap of 1 per
window; their pages (email) or delivery batches (notify) are processed by concurrent workers, one thread
per campaign, so every profile is contended by three transactions at once. The cap holds only because
the check and the reservation happen under the profile lock: with ``_LOCK`` removed from
``delivery/frequency_cap.py`` (or the lock from ``email_page.cypher``) two campaigns read the same empty
log and both send.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.domain.dispatch import DeliveryJob, PageJob, job_json, parse_job
from campaign_engine.domain.frequency_cap import ChannelCap
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.queue.port import Received
from campaign_engine.wiring import (
    Queues,
    build_email_self_tester,
    build_email_worker,
    build_notification_worker,
    build_page_worker,
)
from tests.conftest import ADMIN_ID
from tests.support.concurrency import at_once
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.email import add_email_members, address_of, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

CAMPAIGNS = ["c1", "c2", "c3"]
WINDOW = timedelta(hours=1)
ACK = (200, b'{"sent": true}', "application/json")


def _caps(channel: str, *, max_: int = 1) -> dict[str, Any]:
    cap = ChannelCap.model_validate({"max": max_, "windowSeconds": int(WINDOW.total_seconds())})
    return {"campaign_frequency_caps": {"*": {channel: cap}}}


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3", max_receives=10)


def _dispatches(graph: Graph, channel: str) -> list[dict[str, Any]]:
    return [d.model_dump() for c in CAMPAIGNS for d in list_dispatches(graph, c) if d.channel == channel]


def _cap_logs(graph: Graph, prop: str) -> dict[str, list[str]]:
    rows = graph.run(f"MATCH (p:Profile) RETURN p.profileId AS id, coalesce(p.{prop}, []) AS log")
    return {row["id"]: list(row["log"]) for row in rows}


# --- notify -----------------------------------------------------------------------------------------


def _walk_pages(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> None:
    walker = build_page_worker(settings, graph, queues, clock=clock)
    while messages := queues.dispatch.receive(max_messages=10):
        for message in messages:
            job = parse_job(message.body)
            assert isinstance(job, PageJob)
            walker.handle_page(job)
            queues.dispatch.delete(message.receipt)


def _deliveries_by_campaign(queues: Queues) -> dict[str, list[list[Received[DeliveryJob]]]]:
    """Every queued delivery, per campaign, in batches of 10 (an SQS batch)."""
    items: dict[str, list[Received[DeliveryJob]]] = {}
    while messages := queues.delivery.receive(max_messages=100):
        for message in messages:
            job = parse_job(message.body)
            assert isinstance(job, DeliveryJob)
            items.setdefault(job.campaign_id, []).append(Received(message, job))
            queues.delivery.delete(message.receipt)
    return {c: [jobs[i : i + 10] for i in range(0, len(jobs), 10)] for c, jobs in items.items()}


def _run_concurrently(
    settings: Settings, graph: Graph, queues: Queues, clock: StepClock
) -> dict[str, dict[str, str]]:
    """One notification worker per campaign, all started at once; returns their verdicts by campaign."""
    batches = _deliveries_by_campaign(queues)
    workers = [build_notification_worker(settings, graph, clock=clock) for _ in batches]

    def run(
        worker: NotificationWorker, campaign_batches: list[list[Received[DeliveryJob]]]
    ) -> dict[str, str]:
        verdicts: dict[str, str] = {}
        for batch in campaign_batches:
            verdicts.update(worker.handle_batch(batch).verdicts)
        return verdicts

    try:
        results = at_once(run, list(zip(workers, batches.values(), strict=True)), timeout=300)
        return dict(zip(batches, results, strict=True))
    finally:
        for worker in workers:
            worker.close()


def _posts_per_profile(receiver: ScriptedReceiver) -> Counter[str]:
    return Counter(json.loads(r["body"])["recipient"] for r in receiver.received)


def test_concurrent_notify_dispatches_never_exceed_the_cap_and_send_again_after_the_window(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    members = [f"p{i:03d}" for i in range(60)]
    settings = delivery_settings(base_settings, **_caps("notify"))
    receiver = ScriptedReceiver([ACK])
    clock = StepClock()
    with ThreadServer(receiver.app()) as server:
        for campaign in CAMPAIGNS:
            make_campaign(graph, campaign)
            add_members(graph, campaign, members, webhook=f"{server.url}/hook")
            start_dispatch(graph, queues.dispatch, campaign, max_recipients=1000)
        _walk_pages(settings, graph, queues, clock)
        verdicts = _run_concurrently(settings, graph, queues, clock)

        # No profile got more than one announcement, and each got exactly one.
        assert _posts_per_profile(receiver) == Counter(dict.fromkeys(members, 1))
        dispatches = _dispatches(graph, "notify")
        assert sum(d["acknowledged"] for d in dispatches) == len(members)
        assert sum(d["acknowledged"] + d["capped"] for d in dispatches) == len(members) * len(CAMPAIGNS)
        for d in dispatches:
            assert d["capped"] == Counter(verdicts[d["campaign_id"]].values())["capped"]
            assert d["suppressed"] == 0
        assert all(len(log) == 1 for log in _cap_logs(graph, "notifyCapLog").values())
        policy = Policy.of(settings, NOW)
        capped = {c: get_stats(graph, campaign_id=c, policy=policy).capped for c in CAMPAIGNS}
        assert capped == {d["campaign_id"]: d["capped"] for d in dispatches}

        # After the window, a later dispatch of a campaign reaches those the cap held back, once.
        later = StepClock(NOW + WINDOW + timedelta(seconds=1))
        target = max(capped, key=lambda c: capped[c])
        start_dispatch(graph, queues.dispatch, target, now=later.now, max_recipients=1000)
        _walk_pages(settings, graph, queues, later)
        _run_concurrently(settings, graph, queues, later)
    assert sum(_posts_per_profile(receiver).values()) == len(members) + capped[target]
    [again] = [d for d in list_dispatches(graph, target) if d.started_at == format_ts(later.now)]
    assert (again.acknowledged, again.capped) == (capped[target], 0)
    assert get_stats(graph, campaign_id=target, policy=Policy.of(settings, later.now)).capped == 0


def test_admin_self_tests_are_exempt_and_take_no_slot(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    settings = delivery_settings(base_settings, **_caps("notify"))
    receiver = ScriptedReceiver([ACK])
    make_campaign(graph, "c1")
    make_campaign(graph, "c2")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", [ADMIN_ID], webhook=f"{server.url}/hook")
        add_members(graph, "c2", [ADMIN_ID], webhook=f"{server.url}/hook")
        full = [format_ts(NOW - timedelta(minutes=1))]  # the admin already had their one this window
        graph.run("MATCH (p:Profile {profileId: $id}) SET p.notifyCapLog = $log", id=ADMIN_ID, log=full)
        start_dispatch(graph, queues.dispatch, "c1")
        _walk_pages(settings, graph, queues, StepClock())
        [[ordinary]] = _deliveries_by_campaign(queues)["c1"]
        created = graph.run("MATCH (c:Campaign {id: 'c2'}) RETURN c.createdAt AS at")[0]["at"]
        test = DeliveryJob.model_validate(
            {
                "deliveryId": "t-1",
                "campaignId": "c2",
                "campaignCreatedAt": created,
                "profileId": ADMIN_ID,
                "campaignTestId": "t1",
            }
        )
        queues.delivery.send_batch([job_json(test)])
        [[self_test]] = _deliveries_by_campaign(queues)["c2"]
        worker = build_notification_worker(settings, graph, clock=StepClock())
        try:
            verdicts = worker.handle_batch([ordinary, self_test]).verdicts
        finally:
            worker.close()
    assert verdicts == {ordinary.job.delivery_id: "capped", "t-1": "positive"}
    assert _posts_per_profile(receiver) == Counter({ADMIN_ID: 1})
    assert _cap_logs(graph, "notifyCapLog")[ADMIN_ID] == full  # the self-test took no slot
    [d] = _dispatches(graph, "notify")
    assert (d["capped"], d["acknowledged"], d["suppressed"]) == (1, 0, 0)


# --- email ------------------------------------------------------------------------------------------


def _email_workers(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> list[EmailWorker]:
    workers = [build_email_worker(settings, graph, queues, clock=clock) for _ in CAMPAIGNS]
    return [w for w in workers if w is not None]


def _email_pages(queues: Queues) -> list[PageJob]:
    """The first page jobs on the dispatch queue, taken off it (the walk enqueues nothing more here)."""
    messages = queues.dispatch.receive(max_messages=10)
    queues.dispatch.delete_batch([m.receipt for m in messages])
    jobs = [parse_job(m.body) for m in messages]
    return [j for j in jobs if isinstance(j, PageJob)]


def _accepted_per_address(postmark: PostmarkStandin) -> Counter[str]:
    return Counter(str(m["To"]) for m in postmark.accepted)


def test_concurrent_email_dispatches_never_exceed_the_cap_and_send_again_after_the_window(
    base_settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    members = [f"p{i:03d}" for i in range(120)]
    settings = email_settings(base_settings, postmark.url, postmark.token, **_caps("email"))
    for campaign in CAMPAIGNS:
        make_email_campaign(graph, campaign)
        if campaign == "c1":
            add_email_members(graph, campaign, members)
        else:
            add_members(graph, campaign, members)  # the same profiles, already with their addresses
        start_dispatch(graph, queues.dispatch, campaign, max_recipients=1000)
    jobs = _email_pages(queues)
    assert sorted(j.campaign_id for j in jobs) == CAMPAIGNS
    workers = _email_workers(settings, graph, queues, StepClock())
    try:
        outcomes = at_once(lambda w, j: w.handle_page(j), list(zip(workers, jobs, strict=True)), timeout=300)
    finally:
        for worker in workers:
            worker.close()
    assert all(o.outcome == "completed" for o in outcomes)
    assert _accepted_per_address(postmark) == Counter(dict.fromkeys(map(address_of, members), 1))
    dispatches = _dispatches(graph, "email")
    assert sum(d["emailed"] for d in dispatches) == len(members)
    assert sum(d["emailed"] + d["capped"] for d in dispatches) == len(members) * len(CAMPAIGNS)
    assert all(len(log) == 1 for log in _cap_logs(graph, "emailCapLog").values())
    policy = Policy.of(settings, NOW)
    capped = {c: get_stats(graph, campaign_id=c, policy=policy).capped for c in CAMPAIGNS}
    assert capped == {d["campaign_id"]: d["capped"] for d in dispatches}

    target = max(capped, key=lambda c: capped[c])
    # After the window a later dispatch of that campaign emails those the cap held back, once.
    later = StepClock(NOW + WINDOW + timedelta(seconds=1))
    start_dispatch(graph, queues.dispatch, target, now=later.now, max_recipients=1000)
    [job] = _email_pages(queues)
    [worker] = _email_workers(settings, graph, queues, later)[:1]
    try:
        assert worker.handle_page(job).outcome == "completed"
    finally:
        worker.close()
    assert sum(_accepted_per_address(postmark).values()) == len(members) + capped[target]
    [again] = [d for d in list_dispatches(graph, target) if d.started_at == format_ts(later.now)]
    assert (again.emailed, again.capped) == (capped[target], 0)
    assert get_stats(graph, campaign_id=target, policy=Policy.of(settings, later.now)).capped == 0


def test_email_self_test_is_exempt(base_settings: Settings, graph: Graph, postmark: PostmarkStandin) -> None:
    settings = email_settings(base_settings, postmark.url, postmark.token, **_caps("email"))
    make_email_campaign(graph, status="draft")
    add_email_members(graph, "c1", [ADMIN_ID], member=False)
    full = [format_ts(NOW - timedelta(minutes=1))]
    graph.run("MATCH (p:Profile {profileId: $id}) SET p.emailCapLog = $log", id=ADMIN_ID, log=full)
    tester = build_email_self_tester(settings, graph, clock=StepClock())
    assert tester is not None
    try:
        send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
    finally:
        tester._provider.close()
    assert [m["To"] for m in postmark.accepted] == [address_of(ADMIN_ID)]
    assert _cap_logs(graph, "emailCapLog")[ADMIN_ID] == full
