"""The health guard against the real graph, the worker, the Postmark stand-in, real
feedback webhook posts to the API and real loopback receivers: a dispatch whose own rates cross their
limits pauses before its next page, sends nothing more, and goes on only when an admin resumes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.domain.tenant import TenantPatch
from campaign_engine.graph.audit import list_audit
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import update_tenant
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    drain,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.email import add_email_members, address_of, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

USER, PASSWORD = "postmark", "pm-webhook-password-0123456789"
PAGE = 100

# Postmark's documented bounce and spam complaint records
# (as tests/support/postmark_feedback.py).
BOUNCE: dict[str, Any] = {
    "RecordType": "Bounce", "MessageStream": "broadcast", "Type": "HardBounce", "TypeCode": 1,
    "Name": "Hard bounce", "Tag": "Test", "ServerID": 23, "Description": "unknown user",
    "Details": "Test bounce details", "From": "news@campaigns.test",
    "BouncedAt": "2026-03-01T12:00:00Z", "DumpAvailable": False, "Inactive": True, "CanActivate": True,
    "Subject": "Test subject",
}  # fmt: skip
COMPLAINT: dict[str, Any] = {
    **BOUNCE, "RecordType": "SpamComplaint", "Type": "SpamComplaint", "TypeCode": 512,
    "Name": "Spam complaint", "CanActivate": False,
}  # fmt: skip


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(
        base_settings, postmark.url, postmark.token,
        campaign_email_page_size=PAGE, campaign_dispatch_page_size=PAGE, campaign_email_run_seconds=0.0,
        postmark_webhook_username=USER, postmark_webhook_password=SecretStr(PASSWORD),
    )  # fmt: skip


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


@pytest.fixture
def api(settings: Settings, graph: Graph, clock: StepClock, queues: Queues) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as client:
        yield client


@pytest.fixture
def worker(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> Iterator[LocalWorker]:
    running = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    yield running
    running.close()


def _subscribe(graph: Graph, settings: Settings) -> None:
    subscribers_for(graph).invalidate()
    create_endpoint(
        graph, settings.secret_box(), tenant_id="default", url="https://hooks.invalid/events", events=["*"],
        description=None, now=NOW, audit=None,
    )  # fmt: skip


def _pages(worker: LocalWorker, queues: Queues, count: int) -> None:
    """Walk ``count`` page jobs, one at a time (the next one is queued by the page before it)."""
    for _ in range(count):
        messages = queues.dispatch.receive(max_messages=1)
        assert messages, "no page job queued"
        worker.handle(queues.dispatch, messages)


def _deliveries(worker: LocalWorker, queues: Queues) -> None:
    while messages := queues.delivery.receive(max_messages=10):
        worker.handle(queues.delivery, messages)


def _feedback(api: TrpcClient, base: dict[str, Any], messages: list[dict[str, Any]], first_id: int) -> None:
    for offset, message in enumerate(messages):
        body = {**base, "ID": first_id + offset, "MessageID": message["MessageID"], "Email": message["To"]}
        answer = api.http.post("/webhooks/postmark", json=body, auth=(USER, PASSWORD))
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"] == "applied"


def _pauses(channel: str, rate: str) -> float:
    labels = {"channel": channel, "rate": rate}
    return REGISTRY.get_sample_value("campaign_engine_dispatch_guard_pauses_total", labels) or 0.0


def _events(graph: Graph, kind: str) -> list[dict[str, Any]]:
    rows = graph.run(
        "MATCH (b:WebhookBatch) UNWIND range(0, size(b.types) - 1) AS i WITH b, i WHERE b.types[i] = $t"
        " RETURN b.bodies[i] AS body ORDER BY b.orderKeys[i]",
        t=kind,
    )
    return [json.loads(row["body"]) for row in rows]


def _resume(api: TrpcClient, dispatch_id: str) -> Any:
    return api.mutate("campaigns.resumeDispatch", {"dispatchId": dispatch_id}, as_=ADMIN_ID, admin=True)


def _members(count: int) -> list[str]:
    return [f"p{n:05d}" for n in range(count)]


def test_hard_bounces_on_the_first_wave_pause_before_the_next_page_until_an_admin_resumes(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    api: TrpcClient,
    worker: LocalWorker,
    clock: StepClock,
) -> None:
    _subscribe(graph, settings)
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(2000))
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    before = _pauses("email", "hardBounce")

    _pages(worker, queues, 2)  # the first wave: 200 accepted
    assert len(postmark.accepted) == 2 * PAGE
    _feedback(api, BOUNCE, postmark.accepted[::33][:6], first_id=1000)  # 3% of them bounce
    assert get_dispatch(graph, dispatch_id).hard_bounces == 6

    _pages(worker, queues, 1)  # the next page: the guard holds it before any claim
    paused = get_dispatch(graph, dispatch_id)
    assert paused.status == "paused"
    assert paused.pause_reason is not None
    assert paused.pause_reason.model_dump() == {
        "rate": "hardBounce", "value": 0.03, "limit": 0.02, "sample": 200,
        "message": "hard_bounce_rate 0.03 > 0.02 (over 200)",
    }  # fmt: skip
    assert paused.cursor == _members(2000)[2 * PAGE - 1]
    assert len(postmark.accepted) == 2 * PAGE
    assert _pauses("email", "hardBounce") == before + 1

    # Held: a page job already queued (a duplicate at the cursor) stops without sending, and the
    # sweeper, long past its stuck window, neither re-arms nor touches it.
    job = PageJob.model_validate(
        {"dispatchId": dispatch_id, "campaignId": "c1", "channel": "email",
         "campaignCreatedAt": paused.campaign_created_at, "cursor": paused.cursor}
    )  # fmt: skip
    queues.dispatch.send_batch([job_json(job)])
    drain(worker.handle, queues)
    clock.now += timedelta(hours=2)
    run_sweep(settings, graph, queues.dispatch, clock=clock)
    drain(worker.handle, queues)
    assert len(postmark.accepted) == 2 * PAGE
    held = get_dispatch(graph, dispatch_id)
    assert (held.status, held.cursor, held.pages) == ("paused", paused.cursor, paused.pages)

    # By the system, in the trail and as an event.
    entries = [e for e in list_audit(graph, tenant_id="default").records if e.target_id == dispatch_id]
    assert [(e.actor, e.procedure) for e in entries] == [("system:health-guard", "delivery.healthGuard")]
    assert entries[0].detail is not None
    assert entries[0].detail["rate"] == "hardBounce"
    assert entries[0].detail["value"] == 0.03
    [event] = _events(graph, "dispatch.paused")
    assert event["data"]["dispatchId"] == dispatch_id
    assert (event["data"]["rate"], event["data"]["value"], event["data"]["limit"]) == (
        "hardBounce",
        0.03,
        0.02,
    )

    resumed = ok(_resume(api, dispatch_id))
    assert resumed["status"] == "sending"
    assert resumed["pauseReason"] is None
    assert resumed["pastErrors"][-1].endswith("paused: hard_bounce_rate 0.03 > 0.02 (over 200)")
    [again] = _events(graph, "dispatch.resumed")
    assert again["data"]["dispatchId"] == dispatch_id
    entries = [e for e in list_audit(graph, tenant_id="default").records if e.target_id == dispatch_id]
    assert entries[0].actor == ADMIN_ID
    assert entries[0].procedure == "campaigns.resumeDispatch"

    # The same old numbers never pause it again: the resume restarted the guard's window.
    drain(worker.handle, queues)
    done = get_dispatch(graph, dispatch_id)
    assert done.status == "completed"
    recipients = [m["To"] for m in postmark.accepted]
    assert sorted(recipients) == sorted(address_of(p) for p in _members(2000))  # everyone, once


def test_a_complaint_rate_over_its_limit_pauses_and_late_feedback_of_the_judged_wave_does_not(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    api: TrpcClient,
    worker: LocalWorker,
    clock: StepClock,
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(500))
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    _pages(worker, queues, 2)
    first_wave = list(postmark.accepted)
    _feedback(api, COMPLAINT, first_wave[:1], first_id=2000)  # 1 in 200: 0.005 > 0.001
    _pages(worker, queues, 1)
    paused = get_dispatch(graph, dispatch_id)
    assert paused.status == "paused"
    assert paused.pause_reason is not None
    assert (paused.pause_reason.rate, paused.pause_reason.value) == ("complaint", 0.005)
    assert len(postmark.accepted) == 2 * PAGE

    clock.now += timedelta(minutes=10)  # the admin looks, then decides
    ok(_resume(api, dispatch_id))
    _pages(worker, queues, 1)
    # Complaints about the wave the admin judged arrive after the resume: they count on the Dispatch
    # but belong to the old window, so the guard does not pause on them.
    _feedback(api, COMPLAINT, first_wave[1:3], first_id=2100)
    _pages(worker, queues, 1)
    going = get_dispatch(graph, dispatch_id)
    assert (going.status, going.complaints) == ("sending", 3)
    # One about a message of the new window does: 1 over 200 accepted since the resume.
    _feedback(api, COMPLAINT, postmark.accepted[2 * PAGE : 2 * PAGE + 1], first_id=2200)
    _pages(worker, queues, 1)
    again = get_dispatch(graph, dispatch_id)
    assert again.status == "paused"
    assert again.pause_reason is not None
    assert (again.pause_reason.rate, again.pause_reason.sample) == ("complaint", 200)
    assert len(postmark.accepted) == 4 * PAGE


def test_provider_rejections_over_their_limit_pause_the_email_walk(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin, worker: LocalWorker
) -> None:
    make_email_campaign(graph)
    members = _members(400)
    add_email_members(graph, "c1", members)
    for profile_id in members[:6]:  # 6 of the first page's 100 refused: 0.06 > 0.05
        postmark.error_codes[address_of(profile_id)] = 406
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    before = _pauses("email", "rejection")
    _pages(worker, queues, 2)
    paused = get_dispatch(graph, dispatch_id)
    assert (paused.status, paused.emailed, paused.rejected) == ("paused", 94, 6)
    assert paused.pause_reason is not None
    assert paused.pause_reason.message == "rejection_rate 0.06 > 0.05 (over 100)"
    assert len(postmark.accepted) == 94
    assert _pauses("email", "rejection") == before + 1


def test_below_the_minimum_sample_no_rate_pauses(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin, api: TrpcClient
) -> None:
    small = settings.model_copy(update={"campaign_email_page_size": 30})
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(90))
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    walker = build_worker(small, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        _pages(walker, queues, 2)
        _feedback(api, BOUNCE, postmark.accepted[:10], first_id=3000)  # 10 of 60: far over, but 60 < 100
        drain(walker.handle, queues)
    finally:
        walker.close()
    done = get_dispatch(graph, dispatch_id)
    assert (done.status, done.emailed, done.hard_bounces) == ("completed", 90, 10)


def test_a_tenants_override_replaces_the_setting(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    api: TrpcClient,
    worker: LocalWorker,
) -> None:
    directory = tenants_of(graph, settings)
    directory.invalidate()
    assert "default" in directory.records()  # seeded from the settings
    update_tenant(graph, patch=TenantPatch.model_validate({"tenantId": "default",
                  "guardMaxHardBounceRate": 0.01}), now=NOW, audit=None)  # fmt: skip
    directory.invalidate()
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(400))
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    _pages(worker, queues, 2)
    _feedback(api, BOUNCE, postmark.accepted[:3], first_id=4000)  # 0.015: under the setting's 0.02
    _pages(worker, queues, 1)
    paused = get_dispatch(graph, dispatch_id)
    assert paused.status == "paused"
    assert paused.pause_reason is not None
    assert (paused.pause_reason.value, paused.pause_reason.limit) == (0.015, 0.01)
    update_tenant(graph, patch=TenantPatch.model_validate({"tenantId": "default",
                  "guardMaxHardBounceRate": None}), now=NOW, audit=None)  # fmt: skip
    directory.invalidate()


def test_receiver_rejections_pause_the_notify_walk(
    settings: Settings, graph: Graph, queues: Queues, worker: LocalWorker
) -> None:
    good = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    bad = ScriptedReceiver([(400, b'{"sent":false}', "application/json")])
    make_campaign(graph)
    members = _members(300)
    with ThreadServer(good.app()) as good_server, ThreadServer(bad.app()) as bad_server:
        add_members(graph, "c1", members[:6], webhook=f"{bad_server.url}/hook")  # 6 of the first 100
        add_members(graph, "c1", members[6:], webhook=f"{good_server.url}/hook")
        dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["notify"]
        before = _pauses("notify", "rejection")
        _pages(worker, queues, 1)
        _deliveries(worker, queues)
        _pages(worker, queues, 1)
        paused = get_dispatch(graph, dispatch_id)
        assert (paused.status, paused.acknowledged, paused.rejected) == ("paused", 94, 6)
        assert paused.pause_reason is not None
        assert paused.pause_reason.message == "rejection_rate 0.06 > 0.05 (over 100)"
        drain(worker.handle, queues)
        assert (len(good.received), len(bad.received)) == (94, 6)  # nothing more was posted
    assert _pauses("notify", "rejection") == before + 1


def test_a_walk_of_many_pages_in_one_job_checks_before_each_page_it_claims_ahead(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    # No wave delay and a long run: one job claims page n+1 while page n is with the provider and
    # records page n-1 alongside. The guard reads the counters of pages already recorded: a claim ahead
    # that finds a rate over its limit ends the walk, and the successor judges again with the pages
    # in hand recorded (they dilute the rate: 20 of the first 100 refused is still 0.067 over 300).
    # So the walk pauses at most two pages after the bad one.
    walking = settings.model_copy(update={"campaign_email_run_seconds": 60.0})
    make_email_campaign(graph)
    members = _members(1000)
    add_email_members(graph, "c1", members)
    for profile_id in members[:20]:
        postmark.error_codes[address_of(profile_id)] = 406
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    walker = build_worker(walking, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(walker.handle, queues)
    finally:
        walker.close()
    paused = get_dispatch(graph, dispatch_id)
    assert paused.status == "paused"
    assert paused.pause_reason is not None
    assert paused.pause_reason.rate == "rejection"
    assert paused.pages in (1, 2, 3)
    assert paused.emailed + paused.rejected == paused.pages * PAGE == len(postmark.accepted) + 20
