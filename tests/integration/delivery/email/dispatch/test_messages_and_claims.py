"""The email channel end to end against the real graph and the loopback Postmark stand-in: the
message's headers and links with one-click unsubscribe, and what a rejection, a dropped connection or a
throttle does to the claims."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from fastapi import FastAPI
from fastapi.testclient import TestClient

from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.routes import unsubscribe_router
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import Queues
from tests.support.delivery import StepClock, run_worker
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    claimed,
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


def test_message_headers_links_and_one_click_unsubscribe(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph, tenant_id="t")
    add_email_members(graph, "c1", ["p1"])
    _dispatch(graph, queues)
    run_worker(settings, graph, queues)
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
    run_worker(settings, graph, queues)
    state = email_states(graph, "c1")["p1"]
    assert state["emailOutcome"] == "rejected" and state["emailOutcomeReason"] == "postmark:406"
    assert state["emailClaimedAt"] and state.get("emailedAt") is None
    record = _email_dispatch(graph)
    assert (record["emailed"], record["rejected"], record["uncertain"]) == (1, 1, 0)
    del postmark.error_codes[address_of("p1")]
    add_email_members(graph, "c1", ["p0"])
    _dispatch(graph, queues)  # re-dispatch: the kept claim blocks a second attempt
    run_worker(settings, graph, queues)
    assert accepted_to(postmark) == [address_of("p0"), address_of("p2")]


def test_dropped_connection_is_uncertain_keeps_claims_and_shows_on_the_dispatch(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    members = ["p1", "p2", "p3"]
    add_email_members(graph, "c1", members)
    postmark.drop_next(1)
    _dispatch(graph, queues)
    run_worker(settings, graph, queues)
    assert postmark.accepted == []
    states = email_states(graph, "c1")
    assert all(states[p]["emailOutcome"] == "uncertain" and states[p]["emailClaimedAt"] for p in members)
    record = _email_dispatch(graph)
    assert record["uncertain"] == 3 and record["emailed"] == 0 and record["status"] == "completed"
    assert str(record["last_error"]).startswith("uncertain: transport:")
    add_email_members(graph, "c1", ["p0"])
    _dispatch(graph, queues)
    run_worker(settings, graph, queues)
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
