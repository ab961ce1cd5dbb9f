"""The health guard against the real graph, the worker, the Postmark stand-in, real feedback webhook
posts to the API and real loopback receivers: hard bounces, complaints and provider rejections over
their limits pause a dispatch before its next page until an admin resumes it; late feedback of a
judged wave and a sample below the minimum do not."""

from __future__ import annotations

from datetime import timedelta

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.graph.audit import list_audit
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, ok
from tests.support.delivery import (
    StepClock,
    drain,
    start_dispatch,
)
from tests.support.email import add_email_members, address_of, make_email_campaign
from tests.support.health_guard import (
    BOUNCE,
    COMPLAINT,
    PAGE,
    _events,
    _feedback,
    _members,
    _pages,
    _pauses,
    _resume,
    _subscribe,
)
from tests.support.postmark_standin import PostmarkStandin


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
