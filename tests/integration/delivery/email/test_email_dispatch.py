"""The email channel end to end against the real graph and the loopback Postmark stand-in."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.email.provider import ProviderConfigError
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.errors import Conflict
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.routes import unsubscribe_router
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import Queues, build_email_worker, build_worker
from tests.support.concurrency import at_once
from tests.support.delivery import NOW, StepClock, add_members, drain, local_queues
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    claimed,
    email_settings,
    email_states,
    emailed,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


_OPEN: list[EmailWorker] = []


@pytest.fixture(autouse=True)
def _close_workers() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _email_worker(settings: Settings, graph: Graph, queues: Queues) -> EmailWorker:
    worker = build_email_worker(settings, graph, queues, clock=StepClock())
    assert worker is not None
    _OPEN.append(worker)
    return worker


def _dispatch(graph: Graph, queues: Queues, token: str | None = None, campaign_id: str = "c1") -> str:
    started = dispatch(
        graph,
        queues.dispatch,
        campaign_id=campaign_id,
        expected_token=token,
        now=NOW,
        settings=DispatchSettings(adult_age=18, max_recipients=10_000),
    )
    return started.dispatch_ids["email"]


def _run(settings: Settings, graph: Graph, queues: Queues) -> None:
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()


def _email_dispatch(graph: Graph, campaign_id: str = "c1") -> dict[str, object]:
    found = [d for d in list_dispatches(graph, campaign_id) if d.channel == "email"]
    return found[0].model_dump()


def test_eligibility_matrix_preview_and_send(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    # excludeMinors=false: the email age policy still fails closed for minors, unknown ages and
    # managed (non-service) profiles.
    make_email_campaign(graph, excludeMinors=False)
    add_email_members(graph, "c1", ["ok", "push-optout"])
    graph.run("MATCH (p:Profile {profileId: 'push-optout'}) SET p.announcementPushOptOut = true")
    add_email_members(graph, "c1", ["service"], isManaged=True, isServiceProfile=True)
    add_email_members(graph, "c1", ["managed"], isManaged=True)
    add_email_members(graph, "c1", ["minor"], dob="2015-06-01")
    add_email_members(graph, "c1", ["unknown-age"], dob=None)
    add_email_members(graph, "c1", ["bad-dob"], dob="1990-13-45x")
    add_email_members(graph, "c1", ["optout"], announcementEmailOptOut=True)
    add_email_members(
        graph,
        "c1",
        ["unverified"],
        emails=[{"value": "u@example.com", "isPrimary": True, "isVerified": False}],
    )
    add_email_members(
        graph,
        "c1",
        ["not-primary"],
        emails=[{"value": "n@example.com", "isPrimary": False, "isVerified": True}],
    )
    add_email_members(graph, "c1", ["two-primaries"], emails=[
        {"value": "a@example.com", "isPrimary": True, "isVerified": True},
        {"value": "b@example.com", "isPrimary": True, "isVerified": True},
    ])  # fmt: skip
    add_email_members(
        graph, "c1", ["invalid"], emails=[{"value": "not an address", "isPrimary": True, "isVerified": True}]
    )
    add_email_members(graph, "c1", ["no-email"], emails=[])
    add_email_members(graph, "c1", ["emailed", "claimed"])
    graph.run(
        "MATCH (p:Profile), (c:Campaign {id: 'c1'}) WHERE p.profileId IN ['emailed', 'claimed'] "
        "MERGE (p)-[s:CAMPAIGN_STATE]->(c) "
        "SET s.emailedAt = CASE p.profileId WHEN 'emailed' THEN 'x' END, "
        "    s.emailClaimedAt = CASE p.profileId WHEN 'claimed' THEN 'x' END"
    )
    add_email_members(graph, "c1", ["outsider"], member=False)

    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert preview.email_recipient_count == 3
    assert preview.recipient_count == 3
    assert preview.notification_recipient_count == 0
    assert claimed(graph, "c1") == ["claimed"]  # the preview claims no one

    _dispatch(graph, queues, preview.preview_token)
    _run(settings, graph, queues)
    assert accepted_to(postmark) == sorted(address_of(p) for p in ["ok", "push-optout", "service"])
    assert emailed(graph, "c1") == ["emailed", "ok", "push-optout", "service"]
    record = _email_dispatch(graph)
    assert record["status"] == "completed" and record["emailed"] == 3


def test_preview_token_covers_email_addresses(settings: Settings, graph: Graph, queues: Queues) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    again = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert again.preview_token == preview.preview_token
    graph.run("MATCH (:Profile {profileId: 'p1'})-->(m:ContactMethod) SET m.value = 'other@example.com'")
    with pytest.raises(Conflict):
        _dispatch(graph, queues, preview.preview_token)


def test_channels_get_their_own_dispatch_and_recipients_count_distinct_profiles(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph, channels=["notify", "email"], notification={"title": "Hi", "body": "News"})
    add_email_members(graph, "c1", ["both", "email-only"])
    graph.run("MATCH (p:Profile {profileId: 'email-only'}) SET p.announcementPushOptOut = true")
    add_members(graph, "c1", ["notify-only"])
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert (preview.notification_recipient_count, preview.email_recipient_count) == (2, 2)
    assert preview.recipient_count == 3
    started = dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token, now=NOW,
        settings=DISPATCH_SETTINGS,
    )  # fmt: skip
    assert sorted(started.channels) == ["email", "notify"]
    channels = sorted(d.channel for d in list_dispatches(graph, "c1"))
    assert channels == ["email", "notify"]
    jobs = [parse_job(m.body) for m in queues.dispatch.receive(max_messages=10)]
    assert sorted(j.channel for j in jobs if isinstance(j, PageJob)) == ["email", "notify"]
    assert graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.revision AS r")[0]["r"] == 3  # +1 only


def test_message_headers_links_and_one_click_unsubscribe(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph, tenant_id="t")
    add_email_members(graph, "c1", ["p1"])
    _dispatch(graph, queues)
    _run(settings, graph, queues)
    [message] = postmark.accepted
    assert message["MessageStream"] == "broadcast" and message["From"] == "news@campaigns.test"
    headers = {h["Name"]: h["Value"] for h in message["Headers"]}
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    match = re.fullmatch(
        r"<(https://campaigns\.test/campaigns/unsubscribe\?token=([^>]+))>", headers["List-Unsubscribe"]
    )
    assert match is not None
    link, token = match.group(1), unquote(match.group(2))
    assert link.replace("&", "&amp;") in message["HtmlBody"] or link in message["HtmlBody"]
    assert link in message["TextBody"]
    # The CTA is tracked: its /c token pins the tenant's campaign page.
    [cta] = re.findall(r'href="https://campaigns\.test/c\?token=([^"]+)"', message["HtmlBody"])
    click = UnsubscribeTokens.from_settings(settings).clicks.read(unquote(cta))
    assert click is not None and click.url == "https://t.example/m/c1?utm_source=email&utm_campaign=c1"
    assert "Line &lt;two&gt;" in message["HtmlBody"]  # autoescaped admin copy
    unsubscribe_id = graph.run("MATCH (p:Profile {profileId: 'p1'}) RETURN p.campaignUnsubscribeId AS u")[0][
        "u"
    ]
    assert unsubscribe_id and unsubscribe_id not in token  # signed, and never the profile id

    app = FastAPI()
    app.include_router(
        unsubscribe_router(graph=graph, tokens=UnsubscribeTokens.from_settings(settings), clock=StepClock())
    )
    with TestClient(app) as client:
        answer = client.post(
            urlsplit(link).path + "?" + urlsplit(link).query,
            content=b"List-Unsubscribe=One-Click",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 200
    # The link opts out of the campaign tenant's email only: its view of p1 (docs/people.md).
    row = graph.run(
        "MATCH (p:Profile {profileId: 'p1'}), (c:Campaign {id: 'c1'})"
        " OPTIONAL MATCH (p)-[:HAS_VIEW]->(v:TenantView) WHERE v.tenantId = c.tenantId"
        " RETURN p.announcementEmailOptOut AS shared, v.announcementEmailOptOut AS tenant"
    )[0]
    assert (row["shared"], row["tenant"]) == (False, True)


def test_rejected_recipient_keeps_its_claim(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    postmark.error_codes[address_of("p1")] = 406  # inactive recipient
    _dispatch(graph, queues)
    _run(settings, graph, queues)
    state = email_states(graph, "c1")["p1"]
    assert state["emailOutcome"] == "rejected" and state["emailOutcomeReason"] == "postmark:406"
    assert state["emailClaimedAt"] and state.get("emailedAt") is None
    record = _email_dispatch(graph)
    assert (record["emailed"], record["rejected"], record["uncertain"]) == (1, 1, 0)
    del postmark.error_codes[address_of("p1")]
    add_email_members(graph, "c1", ["p0"])
    _dispatch(graph, queues)  # re-dispatch: the kept claim blocks a second attempt
    _run(settings, graph, queues)
    assert accepted_to(postmark) == [address_of("p0"), address_of("p2")]


def test_dropped_connection_is_uncertain_keeps_claims_and_shows_on_the_dispatch(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    members = ["p1", "p2", "p3"]
    add_email_members(graph, "c1", members)
    postmark.drop_next(1)
    _dispatch(graph, queues)
    _run(settings, graph, queues)
    assert postmark.accepted == []
    states = email_states(graph, "c1")
    assert all(states[p]["emailOutcome"] == "uncertain" and states[p]["emailClaimedAt"] for p in members)
    record = _email_dispatch(graph)
    assert record["uncertain"] == 3 and record["emailed"] == 0 and record["status"] == "completed"
    assert str(record["last_error"]).startswith("uncertain: transport:")
    add_email_members(graph, "c1", ["p0"])
    _dispatch(graph, queues)
    _run(settings, graph, queues)
    assert accepted_to(postmark) == [address_of("p0")]  # the uncertain ones are never replayed blindly


def test_throttle_releases_claims_and_reschedules_without_error(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    dispatch_id = _dispatch(graph, queues)
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob) and job.channel == "email"
    postmark.throttle_next(1, retry_after="7")
    outcome = _email_worker(settings, graph, queues).handle_page(job)
    assert outcome.outcome == "throttled" and outcome.retry_in_seconds == 7 and outcome.throttled == 2
    assert claimed(graph, "c1") == []  # released: the provider proved nothing was accepted
    record = _email_dispatch(graph)
    assert record["throttled"] == 2 and record["last_error"] is None and record["status"] == "sending"
    assert record["cursor"] is None and record["dispatch_id"] == dispatch_id
    assert queues.dispatch.receive(max_messages=10) == []  # the retry waits for Retry-After


def test_throttle_inside_a_batch_commits_the_contiguous_prefix(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    members = ["p1", "p2", "p3", "p4", "p5"]
    add_email_members(graph, "c1", members)
    postmark.error_codes[address_of("p3")] = 429
    _dispatch(graph, queues)
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    worker = _email_worker(settings, graph, queues)
    outcome = worker.handle_page(job)
    assert outcome.outcome == "throttled" and outcome.emailed == 4 and outcome.throttled == 1
    assert _email_dispatch(graph)["cursor"] == "p2"
    assert emailed(graph, "c1") == ["p1", "p2", "p4", "p5"] and claimed(graph, "c1") == [
        "p1",
        "p2",
        "p4",
        "p5",
    ]
    del postmark.error_codes[address_of("p3")]
    [successor] = queues.dispatch.receive(max_messages=10)
    follow = parse_job(successor.body)
    assert isinstance(follow, PageJob) and follow.cursor == "p2"
    assert worker.handle_page(follow).outcome == "completed"
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # each exactly once


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
    _run(settings, graph, queues)
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
