"""Opt-outs add up (docs/people.md): the person's deployment-wide opt-out stops every tenant's
announcements, a tenant's view's opt-out only that tenant's. The email page (read and claim in one) and
the notify page skip exactly those; real Neo4j, the local queue, the Postmark stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_page_worker, build_worker
from tests.support.delivery import (
    StepClock,
    add_members,
    delivery_settings,
    drain,
    local_queues,
    make_campaign,
    start_dispatch,
)
from tests.support.email import add_email_members, email_settings, emailed, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

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
