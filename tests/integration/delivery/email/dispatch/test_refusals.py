"""The email channel end to end against the real graph and the loopback Postmark stand-in: what
stops a send (a pause, a bad or malformed origin, the transactional stream, a missing setting) and two
workers on one page claiming each recipient once."""

from __future__ import annotations

import json

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.provider import ProviderConfigError
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_email_worker
from tests.support.concurrency import at_once
from tests.support.delivery import NOW, run_worker
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    email_states,
    emailed,
    make_email_campaign,
)
from tests.support.email_dispatch import (
    _dispatch,
    _email_dispatch,
    _email_worker,
)
from tests.support.postmark_standin import PostmarkStandin


def test_pause_between_pages_stops_the_email_dispatch(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    settings = settings.model_copy(update={"campaign_email_page_size": 2, "campaign_email_run_seconds": 0})
    make_email_campaign(graph)
    add_email_members(graph, "c1", [f"p{i}" for i in range(5)])
    _dispatch(graph, queues)
    worker = _email_worker(settings, graph, queues)
    [message] = queues.dispatch.receive(max_messages=10)
    first = parse_job(message.body)
    assert isinstance(first, PageJob)
    assert worker.handle_page(first).outcome == "next"
    definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW)
    [message] = queues.dispatch.receive(max_messages=10)
    second = parse_job(message.body)
    assert isinstance(second, PageJob)
    assert worker.handle_page(second).reason == "not_live"
    assert emailed(graph, "c1") == ["p0", "p1"] and len(postmark.accepted) == 2
    assert _email_dispatch(graph)["status"] == "stopped"


def test_invalid_origin_fails_before_any_claim(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    settings = settings.model_copy(update={"campaign_app_origins": {"default": "https://app.example"}})
    make_email_campaign(graph, tenant_id="t")  # tenant "t" has no origin
    add_email_members(graph, "c1", ["p1"])
    _dispatch(graph, queues)
    run_worker(settings, graph, queues)
    assert email_states(graph, "c1") == {} and postmark.batch_calls == 0
    record = _email_dispatch(graph)
    assert record["status"] == "failed" and "CAMPAIGN_APP_ORIGINS" in str(record["last_error"])


def test_malformed_origin_is_refused_at_start(settings: Settings, graph: Graph, queues: Queues) -> None:
    for bad in ('{"default": "https://user:pw@app.example"}', '{"default": "http://app.example"}',
                '{"default": "https://app.example/path"}', '{"t": "https://t.example"}'):  # fmt: skip
        broken = settings.model_copy(update={"campaign_app_origins": json.loads(bad)})
        with pytest.raises(ConfigError, match="CAMPAIGN_APP_ORIGINS"):
            build_email_worker(broken, graph, queues)


def test_transactional_stream_is_refused_before_any_claim(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    settings = settings.model_copy(update={"postmark_broadcast_stream": "outbound"})
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    _dispatch(graph, queues)
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    with pytest.raises(ProviderConfigError):
        _email_worker(settings, graph, queues).handle_page(job)
    assert email_states(graph, "c1") == {} and postmark.batch_calls == 0


def test_two_workers_on_the_same_page_claim_each_recipient_once(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    members = [f"p{i:03d}" for i in range(300)]
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    _dispatch(graph, queues)
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    workers = [_email_worker(settings, graph, queues) for _ in range(2)]
    outcomes = at_once(lambda worker: worker.handle_page(job), [(w,) for w in workers])
    assert len(outcomes) == 2
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # no address twice
    assert sum(o.claimed for o in outcomes) == 300  # type: ignore[attr-defined]
    assert _email_dispatch(graph)["emailed"] == 300


def test_require_email_names_the_missing_setting(settings: Settings) -> None:
    settings.require_email()
    cases = {
        "CAMPAIGN_UNSUBSCRIBE_SECRET": {"campaign_unsubscribe_secret": None},
        "DOMAIN_NAME": {"domain_name": "https://campaigns.test/x"},
        "POSTMARK_API_KEY": {"postmark_api_key": None},
        "CAMPAIGN_APP_ORIGINS": {"campaign_app_origins": {}},
    }
    for name, update in cases.items():
        with pytest.raises(ConfigError, match=name):
            settings.model_copy(update=update).require_email()
    settings.model_copy(
        update={"campaign_email_provider": "none", "campaign_app_origins": {}}
    ).require_email()
