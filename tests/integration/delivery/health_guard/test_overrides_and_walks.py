"""The health guard against the real graph, the worker, the Postmark stand-in, real feedback webhook
posts to the API and real loopback receivers: a tenant's override replaces the setting, receiver
rejections pause the notify walk, and a walk of many pages in one job checks before each page it
claims ahead."""

from __future__ import annotations

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.domain.tenant import TenantPatch
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import update_tenant
from campaign_engine.wiring import Queues, build_worker
from tests.support.api import TrpcClient
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    drain,
    make_campaign,
    start_dispatch,
)
from tests.support.email import add_email_members, address_of, make_email_campaign
from tests.support.health_guard import (
    BOUNCE,
    PAGE,
    _deliveries,
    _feedback,
    _members,
    _pages,
    _pauses,
)
from tests.support.postmark_standin import PostmarkStandin


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
