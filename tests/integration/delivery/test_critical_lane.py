"""A critical campaign against the real graph and the real worker: it skips quiet hours and the
frequency cap, never an opt-out or the age policy, and its pages and deliveries wait in the critical
lane, ahead of a bulk send queued before it, in its tenant's group and weight (domain/priority.py)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, PageJob, parse_job
from campaign_engine.domain.frequency_cap import ChannelCap
from campaign_engine.domain.tenant import TenantCreate
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenants import create_tenant
from campaign_engine.wiring import Queues, build_page_worker
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    inbox_server,
    local_queues,
    make_campaign,
    notified,
    run_worker,
    start_dispatch,
)
from tests.support.email import accepted_to, add_email_members, email_settings, emailed, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

QUIET_NOW = {"timeZone": "UTC", "quietHours": {"start": "11:00", "end": "13:00"}}  # NOW is 12:00 UTC


@pytest.fixture
def queue_file(tmp_path: Path) -> Path:
    return tmp_path / "q.sqlite3"


@pytest.fixture
def queues(queue_file: Path) -> Queues:
    return local_queues(queue_file)


def _capped(base: Settings) -> Settings:
    cap = ChannelCap.model_validate({"max": 1, "windowSeconds": 3600})
    return delivery_settings(base, campaign_frequency_caps={"*": {"notify": cap}})


def test_a_critical_send_skips_quiet_hours_and_the_cap_but_never_an_opt_out_or_the_age_policy(
    base_settings: Settings, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    settings = _capped(base_settings)
    make_campaign(graph, "buses", priority="critical", **QUIET_NOW)
    make_campaign(graph, "lunch", **QUIET_NOW)  # the same rules at normal priority: everyone waits
    with inbox_server(tmp_path) as inbox:
        hook = f"{inbox.url}/api/notifications/send"
        for campaign in ("buses", "lunch"):
            add_members(graph, campaign, ["quiet", "full"], webhook=hook, tenants=["default"])
            add_members(graph, campaign, ["out"], webhook=hook, announcementPushOptOut=True)
            add_members(graph, campaign, ["child"], webhook=hook, dob="2016-05-01")
        had = [format_ts(NOW - timedelta(minutes=1))]  # "full" had their one of the hour already
        graph.run("MATCH (p:Profile {profileId: 'full'}) SET p.notifyCapLog = $log", log=had)
        start_dispatch(graph, queues.dispatch, "buses")
        start_dispatch(graph, queues.dispatch, "lunch")
        run_worker(settings, graph, queues)
    assert notified(graph, "buses") == ["full", "quiet"]
    assert notified(graph, "lunch") == []  # quiet hours hold a normal send
    assert graph.run("MATCH (p:Profile {profileId: 'full'}) RETURN p.notifyCapLog AS log")[0]["log"] == had
    # The explanation says why the cap does not hold "full" back here.
    caps: Any = {"*": {"notify": ChannelCap.model_validate({"max": 1, "windowSeconds": 3600})}}
    explained = explain_recipient(
        graph, campaign_id="buses", profile_id="full", now=NOW, adult_age=18, caps=caps
    )
    [notify] = [c for c in explained.channels if c.channel == "notify"]
    [cap_rule] = [r for r in notify.rules if r.rule == "capped"]
    assert (cap_rule.ok, cap_rule.detail) == (True, "critical: the frequency cap does not apply")


def test_a_critical_email_skips_quiet_hours_but_never_a_suppression_an_opt_out_or_the_age_policy(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    """The email walk's side of the same rule: quiet hours yield to a critical send; a suppressed
    address, an opt-out and a child never do (the suppression is a contact rule, not a pacing one)."""
    with PostmarkStandin() as postmark:
        settings = email_settings(base_settings, postmark.url, postmark.token)
        make_email_campaign(graph, "storm", priority="critical", **QUIET_NOW)
        make_email_campaign(graph, "fair", **QUIET_NOW)  # the same rules at normal priority: all wait
        add_email_members(graph, "storm", ["ok", "bounced"])
        add_email_members(graph, "storm", ["out"], announcementEmailOptOut=True)
        add_email_members(graph, "storm", ["child"], dob="2016-05-01")
        add_members(graph, "fair", ["ok", "bounced", "out", "child"])  # one address each, two campaigns
        graph.run("CREATE (:EmailSuppression {address: 'bounced@example.com', reason: 'hard_bounce'})")
        start_dispatch(graph, queues.dispatch, "storm")
        start_dispatch(graph, queues.dispatch, "fair")
        run_worker(settings, graph, queues)
        assert (emailed(graph, "storm"), emailed(graph, "fair")) == (["ok"], [])
        assert accepted_to(postmark) == ["ok@example.com"]


def test_a_critical_dispatch_and_its_deliveries_go_ahead_of_a_bulk_send_queued_before_it(
    base_settings: Settings, graph: Graph, queues: Queues, queue_file: Path
) -> None:
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    create_tenant(graph, data=TenantCreate(tenantId="default", name="Default", weight=3), now=NOW, audit=None)
    make_campaign(graph, "news", priority="bulk")
    make_campaign(graph, "buses", priority="critical")
    add_members(graph, "news", [f"n{i}" for i in range(6)], webhook="https://n.example/hook")
    add_members(graph, "buses", ["b1", "b2"], webhook="https://b.example/hook")
    walker = build_page_worker(settings, graph, queues, clock=StepClock())

    def walk_one() -> PageJob:
        [message] = queues.dispatch.receive(max_messages=1)
        job = parse_job(message.body)
        assert isinstance(job, PageJob)
        walker.handle_page(job.received_in(message.message_id))
        queues.dispatch.delete(message.receipt)
        return job

    start_dispatch(graph, queues.dispatch, "news")
    assert walk_one().campaign_id == "news"  # its first page: 2 deliveries queued, its successor waits
    start_dispatch(graph, queues.dispatch, "buses")
    assert walk_one().campaign_id == "buses"  # queued after news's second page, served before it

    def campaigns_of_next_receive() -> list[str]:
        got = queues.delivery.receive(max_messages=100)
        queues.delivery.delete_batch([m.receipt for m in got])
        return [
            job.campaign_id for job in map(parse_job, (m.body for m in got)) if isinstance(job, DeliveryJob)
        ]

    assert campaigns_of_next_receive() == ["buses", "buses"]
    assert campaigns_of_next_receive() == ["news", "news"]
    with sqlite3.connect(
        queue_file
    ) as conn:  # the successors, each in its lane, its tenant's group and weight
        rows = conn.execute("SELECT name, lane, grp, weight FROM messages ORDER BY id").fetchall()
    assert rows == [("dispatch", 2, "default", 3.0), ("dispatch", 0, "default", 3.0)]
