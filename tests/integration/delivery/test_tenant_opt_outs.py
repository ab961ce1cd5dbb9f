"""Opt-outs add up (docs/people.md): the person's deployment-wide opt-out stops every tenant's
announcements, a tenant's view's opt-out only that tenant's. The email page (read and claim in one) and
the notify page skip exactly those, and so do the guardian routes, the preview's counts, the notify
recheck, the explanation and the email self-test; real Neo4j, the local queue, the Postmark stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.domain.errors import BadRequest
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Received
from campaign_engine.wiring import (
    Queues,
    build_email_self_tester,
    build_notification_worker,
    build_page_worker,
    build_worker,
)
from tests.conftest import ADMIN_ID
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.email import (
    EMAIL_COPY,
    accepted_to,
    add_email_members,
    email_settings,
    emailed,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin
from tests.support.tenant_facts import own_link

MEMBERS = ["deployment-wide", "left-north", "left-river", "stays"]


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def opt_out(graph: Graph, profile_id: str, tenant: str | None, channel: str) -> None:
    """The person's choice: deployment-wide (``tenant`` None) or on that tenant's view of them."""
    flag = f"announcement{channel}OptOut"
    if tenant is None:
        graph.run(f"MATCH (p:Profile {{profileId: $pid}}) SET p.{flag} = true", pid=profile_id)
        return
    graph.run(
        "MATCH (p:Profile {profileId: $pid}) MERGE (v:TenantView {tenantId: $t, profileId: $pid})"
        f" MERGE (p)-[:HAS_VIEW]->(v) SET v.{flag} = true",
        pid=profile_id,
        t=tenant,
    )


def _opt_outs(graph: Graph, channel: str) -> None:
    opt_out(graph, "deployment-wide", None, channel)
    opt_out(graph, "left-north", "north", channel)
    opt_out(graph, "left-river", "river", channel)


def test_the_email_page_skips_the_campaign_tenants_opt_outs_and_the_deployment_wide_ones(
    base_settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    origins = {"default": "https://app.example", "river": "https://river.example"}
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_app_origins=origins)
    make_email_campaign(graph, "c1", tenant_id="river")
    add_email_members(graph, "c1", MEMBERS, tenants=["north", "river"])
    _opt_outs(graph, "Email")
    start_dispatch(graph, queues.dispatch, "c1")
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert emailed(graph, "c1") == ["left-north", "stays"]


def test_the_notify_page_skips_the_campaign_tenants_opt_outs_and_the_deployment_wide_ones(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    settings = delivery_settings(base_settings)
    make_campaign(graph, "n1", tenant_id="river")
    add_members(graph, "n1", MEMBERS, webhook="http://127.0.0.1:9/hook", tenants=["north", "river"])
    _opt_outs(graph, "Push")
    start_dispatch(graph, queues.dispatch, "n1")
    worker = build_page_worker(settings, graph, queues, clock=StepClock())
    for message in queues.dispatch.receive(max_messages=10):
        worker.handle_page(parse_job(message.body))  # type: ignore[arg-type]
    jobs = [parse_job(m.body) for m in queues.delivery.receive(max_messages=10)]
    assert sorted(j.profile_id for j in jobs if isinstance(j, DeliveryJob)) == ["left-north", "stays"]


def test_guardians_are_routed_by_the_campaign_tenants_opt_outs_too(
    base_settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin, tmp_path: Path
) -> None:
    """A minor's consenting guardians stand in for them; a guardian who left river's announcements is
    neither counted by river's preview nor sent to by its walks, one who left north's still is."""
    origins = {"default": "https://app.example", "river": "https://river.example"}
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_app_origins=origins)
    copy = {
        "notification": {"title": "For families", "body": "News"},
        "email": {**EMAIL_COPY, "subject": "F"},
    }
    make_campaign(graph, "g1", channels=["notify", "email"], email=EMAIL_COPY, minors="guardians",
                  guardianCopy=copy, tenant_id="river")  # fmt: skip
    with inbox_server(tmp_path) as inbox:
        hook = f"{inbox.url}/api/notifications/send"
        add_email_members(graph, "g1", ["kid"], dob="2015-09-01", isManaged=True, tenants=["river"],
                          notificationsWebhook=hook)  # fmt: skip
        for guardian in ("left-river", "left-north"):
            add_email_members(graph, "g1", [guardian], dob="1980-05-17", member=False,
                              tenants=["north", "river"], notificationsWebhook=hook)  # fmt: skip
            own_link(graph, None, guardian, "kid")
        for channel in ("Email", "Push"):
            opt_out(graph, "left-river", "river", channel)
            opt_out(graph, "left-north", "north", channel)
        preview = preview_dispatch(
            graph, campaign_id="g1", now=NOW, settings=DispatchSettings(adult_age=18, max_recipients=100)
        )
        assert (preview.guardian_notification_recipient_count, preview.guardian_email_recipient_count) == (
            1,
            1,
        )
        start_dispatch(graph, queues.dispatch, "g1")
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        notified = {pid: len(inbox_records(inbox.url, pid)) for pid in ("kid", "left-river", "left-north")}
    assert notified == {"kid": 0, "left-river": 0, "left-north": 1}
    assert accepted_to(postmark) == ["left-north@example.com"]


def test_the_preview_and_explanation_count_and_name_the_tenants_opt_outs(graph: Graph) -> None:
    make_campaign(graph, "c1", channels=["notify", "email"], email=EMAIL_COPY, tenant_id="river")
    add_email_members(graph, "c1", MEMBERS, tenants=["north", "river"], notificationsWebhook="http://h.test")
    for channel in ("Email", "Push"):
        _opt_outs(graph, channel)
    settings = DispatchSettings(adult_age=18, max_recipients=100)
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=settings)
    assert (preview.notification_recipient_count, preview.email_recipient_count) == (2, 2)
    for pid, blocked in (("left-river", "opted_out"), ("left-north", None), ("deployment-wide", "opted_out")):
        explained = explain_recipient(graph, campaign_id="c1", profile_id=pid, now=NOW, adult_age=18)
        assert {c.channel: c.blocked_by for c in explained.channels} == {"notify": blocked, "email": blocked}


def test_the_notify_recheck_holds_back_an_opt_out_made_after_the_page(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    settings = delivery_settings(base_settings)
    receiver = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    make_campaign(graph, "n1", tenant_id="river")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "n1", ["stays", "leaves"], webhook=f"{server.url}/hook", tenants=["river"])
        start_dispatch(graph, queues.dispatch, "n1")
        pages = build_page_worker(settings, graph, queues, clock=StepClock())
        for message in queues.dispatch.receive(max_messages=10):
            pages.handle_page(parse_job(message.body))  # type: ignore[arg-type]
        opt_out(graph, "leaves", "river", "Push")  # between the page and the POST
        worker = build_notification_worker(settings, graph, clock=StepClock())
        try:
            batch = [Received(m, parse_job(m.body)) for m in queues.delivery.receive(max_messages=10)]
            worker.handle_batch(batch)  # type: ignore[arg-type]
        finally:
            worker.close()
    assert [json.loads(r["body"])["recipient"] for r in receiver.received] == ["stays"]


def test_the_email_self_test_refuses_an_admin_opted_out_of_the_campaigns_tenant(
    base_settings: Settings, graph: Graph, postmark: PostmarkStandin
) -> None:
    origins = {"default": "https://app.example", "river": "https://river.example"}
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_app_origins=origins)
    make_email_campaign(graph, "c1", tenant_id="river")
    add_email_members(graph, "c1", [ADMIN_ID], member=False)
    opt_out(graph, ADMIN_ID, "river", "Email")
    tester = build_email_self_tester(settings, graph, clock=StepClock())
    assert tester is not None
    try:
        with pytest.raises(BadRequest, match="opted out"):
            send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
    finally:
        tester._provider.close()
    assert postmark.accepted == []
