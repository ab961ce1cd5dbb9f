"""First-party email clicks on the real graph, worker, API and Postmark stand-in: every
email's CTA links through ``/c``; a GET that follows our own redirect records the click once per
recipient and lands on the URL the token pins; ``HEAD``, a fetch that does not follow, a self-test's
link and a bad token record nothing; the redirect answers at once while the graph is unreachable and
the click is written when it is back; a tenant with tracking off gets direct links."""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from campaign_engine.api.clicks import clicks_router
from campaign_engine.campaigns.audience.exports import recipient_rows
from campaign_engine.campaigns.engagement.email_clicks import ClickHit, ClickRecorder
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint
from campaign_engine.config import Settings
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.unsubscribe.click_tokens import CLICK_CONFIRM_PATH, ClickTokens
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import build_email_self_tester, build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.bolt_cut import bolt_cutter
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import (
    UNSUBSCRIBE_SECRET,
    add_email_members,
    email_settings,
    email_states,
    make_email_campaign,
)
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

CTA = "https://app.example/m/c1?utm_source=email&utm_campaign=c1"
_CLICK = re.compile(r"https://campaigns\.test(/c\?token=[A-Za-z0-9%._-]+)")


@pytest.fixture
def settings(base_settings: Settings, standin: PostmarkStandin) -> Settings:
    standin.reset()
    return email_settings(base_settings, standin.url, standin.token)


def _send(settings: Settings, graph: Graph, tmp_path: Path, campaign_id: str = "c1") -> None:
    queues = local_queues(tmp_path / f"{campaign_id}.sqlite3")
    start_dispatch(graph, queues.dispatch, campaign_id)
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()


def _links(standin: PostmarkStandin) -> dict[str, str]:
    """Each recipient's tracked CTA path: the same link in the text and the html part."""
    links = {}
    for message in standin.accepted:
        [text_link] = _CLICK.findall(message["TextBody"])
        assert _CLICK.findall(message["HtmlBody"]) == [text_link]
        links[message["To"].split("@")[0]] = text_link
    return links


def _recorder(api: TrpcClient) -> ClickRecorder:
    recorder: ClickRecorder = api.http.app.state.click_recorder  # type: ignore[attr-defined]
    return recorder


def _click(api: TrpcClient, path: str) -> Any:
    """A browser's click: the link, then our confirming hop; returns the hop's answer."""
    first = api.http.get(path, follow_redirects=False)
    assert first.status_code == 302, first.text
    assert first.headers["location"].startswith(f"{CLICK_CONFIRM_PATH}?token=")
    return api.http.get(first.headers["location"], follow_redirects=False)


def _clicked(graph: Graph) -> dict[str, tuple[str | None, int | None]]:
    return {
        pid: (s.get("emailClickedAt"), s.get("emailClickCount"))
        for pid, s in email_states(graph, "c1").items()
    }


def test_a_followed_click_counts_once_per_recipient_and_nothing_else_counts(
    settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3"])
    subscribers_for(graph).invalidate()
    create_endpoint(graph, settings.secret_box(), tenant_id="default", url="https://hooks.invalid/events",
                    events=["recipient.email_clicked"], description=None, now=NOW, audit=None)  # fmt: skip
    _send(settings, graph, tmp_path)
    links = _links(standin)
    assert set(links) == {"p1", "p2", "p3"} and len(set(links.values())) == 3  # a token per recipient

    with api_client(settings, graph) as api:
        recorder = _recorder(api)
        # A scanner that fetches the link without following it, and HEAD on either hop: nothing counts.
        scanned = api.http.get(links["p3"], follow_redirects=False)
        assert scanned.status_code == 302 and scanned.headers["location"].startswith(CLICK_CONFIRM_PATH)
        for path in (links["p3"], scanned.headers["location"]):
            head = api.http.head(path, follow_redirects=False)
            assert head.status_code == 302
        for answer in (scanned, api.http.head(scanned.headers["location"], follow_redirects=False)):
            for name, value in (("cache-control", "no-store"), ("referrer-policy", "no-referrer")):
                assert answer.headers[name] == value
        assert api.http.head(scanned.headers["location"], follow_redirects=False).headers["location"] == CTA

        # p1 clicks three times, p2 once: each lands on the pinned destination; a token counts once.
        for pid in ("p1", "p1", "p2", "p1"):
            landed = _click(api, links[pid])
            assert landed.status_code == 302 and landed.headers["location"] == CTA
        assert recorder.flush(timeout=15)

        # A replayed token (20,000 times, twice the buffer) takes no buffer space and counts nothing.
        found = ClickTokens(UNSUBSCRIBE_SECRET).read(parse_qs(urlsplit(links["p1"]).query)["token"][0])
        assert found is not None
        replay = ClickHit(
            found.unsubscribe_id, found.campaign_id, found.campaign_created_at, "2026-03-01T12:00:05.000000Z"
        )
        for _ in range(20_000):
            assert recorder.record(replay)
            assert len(recorder._pending) <= 1
        assert recorder.flush(timeout=15) and recorder.dropped == 0

        # The admin's self-test email has a working tracked link that records nothing.
        add_email_members(graph, "c1", [ADMIN_ID], member=False)
        tester = build_email_self_tester(settings, graph, clock=StepClock())
        assert tester is not None
        try:
            send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
        finally:
            tester._provider.close()  # its pooled connection to the stand-in
        [test_link] = _CLICK.findall(standin.accepted[-1]["TextBody"])
        assert _click(api, test_link).headers["location"] == CTA
        assert recorder.flush(timeout=15)

        clicked = _clicked(graph)
        assert clicked["p1"][0] is not None and clicked["p1"][1] == 1
        assert clicked["p2"][0] is not None and clicked["p2"][1] == 1
        assert clicked["p3"] == (None, None)
        assert ADMIN_ID not in clicked  # a self-test never writes CAMPAIGN_STATE

        headers = api.headers_for(ADMIN_ID, admin=True)
        ask = {"input": json.dumps({"campaignId": "c1"})}
        stats = ok(api.http.get("/trpc/campaigns.getStats", params=ask, headers=headers))
        assert stats["emailClicked"] == 2 and stats["emailed"] == 3
        ask = {"input": json.dumps({"campaignId": "c1", "profileId": "p1"})}
        explained = ok(api.http.get("/trpc/campaigns.explainRecipient", params=ask, headers=headers))
        assert explained["past"]["emailClickedAt"] == clicked["p1"][0]
    rows = {
        r["profileId"]: r for r in recipient_rows(graph, campaign_id="c1", policy=Policy.of(settings, NOW))
    }
    assert rows["p1"]["emailClickedAt"] == clicked["p1"][0] and rows["p3"]["emailClickedAt"] is None
    events = graph.run(
        "MATCH (b:WebhookBatch) UNWIND range(0, size(b.types) - 1) AS i WITH b, i"
        " WHERE b.types[i] = 'recipient.email_clicked' RETURN b.bodies[i] AS body"
    )
    assert sorted(json.loads(e["body"])["data"]["profileId"] for e in events) == ["p1", "p2"]


def _route(graph: Graph, recorder: ClickRecorder) -> TestClient:
    app = FastAPI()
    app.include_router(
        clicks_router(tokens=ClickTokens(UNSUBSCRIBE_SECRET), recorder=recorder, clock=StepClock())
    )
    return TestClient(app)


def _confirm_path(token: str) -> str:
    return f"{CLICK_CONFIRM_PATH}?token={quote(token, safe='')}"


def test_the_token_pins_its_destination_and_a_bad_one_is_the_invalid_link_page(graph: Graph) -> None:
    """Only a token we signed for that URL leads anywhere: the payload changed to another URL (signature
    kept), a token signed with another secret, another kind of our tokens, a truncated one: 404, no
    graph read, nothing recorded."""
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    recorder = ClickRecorder(graph)
    good = ClickTokens(UNSUBSCRIBE_SECRET).issue("u-1", campaign_id="c1", campaign_created_at="t", url=CTA)
    payload, signature = good.split(".")
    raw = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged_payload = (
        base64.urlsafe_b64encode(
            json.dumps({**raw, "l": "https://evil.example/"}, separators=(",", ":")).encode()
        )
        .decode()
        .rstrip("=")
    )
    others = UnsubscribeTokens(UNSUBSCRIBE_SECRET)
    bad = {
        "another URL, our signature": f"{forged_payload}.{signature}",
        "another secret": ClickTokens("another-secret-0123456789abcdef").issue(
            "u-1", campaign_id="c1", campaign_created_at="t", url="https://evil.example/"
        ),
        "an unsubscribe token": others.issue("u-1"),
        "a web-view token": others.web_view.issue("u-1", "c1"),
        "truncated": good[:-3],
        "empty": "",
    }
    with _route(graph, recorder) as client:
        assert client.get(_confirm_path(good), follow_redirects=False).headers["location"] == CTA
        for name, token in bad.items():
            for path in (f"/c?token={quote(token, safe='')}", _confirm_path(token)):
                answer = client.get(path, follow_redirects=False, headers={"Accept-Language": "fr"})
                assert answer.status_code == 404, name
                assert "location" not in answer.headers, name
                assert "content-security-policy" in answer.headers, name
    recorder.close()
    assert recorder.recorded == 1 and recorder.dropped == 0  # the good one only (no state: ignored)


def test_the_redirect_answers_at_once_while_the_graph_is_down_and_the_click_is_written_later(
    settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    _send(settings, graph, tmp_path)
    [link] = _links(standin).values()
    token = parse_qs(urlsplit(link).query)["token"][0]
    with bolt_cutter(settings.neo4j_uri) as cutter:
        cut = open_graph(settings.model_copy(update={"neo4j_uri": cutter.uri}), unavailable_wait=1.0)
        recorder = ClickRecorder(cut)
        try:
            with _route(cut, recorder) as client:
                cut.run("RETURN 1")  # a pooled connection, which the outage then cuts
                cutter.go_down()
                started = time.monotonic()
                answer = client.get(_confirm_path(token), follow_redirects=False)
                elapsed = time.monotonic() - started
                assert answer.status_code == 302 and answer.headers["location"] == CTA
                assert elapsed < 0.5, elapsed  # the reader never waits for the graph
                assert not recorder.flush(timeout=2.5)  # held while the graph cannot answer
                assert _clicked(graph)["p1"] == (None, None)
                cutter.come_back()
                assert recorder.flush(timeout=30)
        finally:
            recorder.close()
            cut.close()
    at, count = _clicked(graph)["p1"]
    assert at is not None and count == 1


def test_a_tenant_with_click_tracking_off_gets_direct_links(
    settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    with api_client(settings, graph) as api:
        headers = api.headers_for(ADMIN_ID, admin=True)
        params = {"input": json.dumps({"tenantId": "default"})}
        assert ok(api.http.get("/trpc/tenants.get", params=params, headers=headers))["clickTracking"] is True
        refused = api.http.post("/trpc/tenants.update", json={"tenantId": "default", "clickTracking": None},
                                headers=headers)  # fmt: skip
        assert refused.status_code == 400  # on or off, never cleared
        off = {"tenantId": "default", "clickTracking": False}
        assert ok(api.http.post("/trpc/tenants.update", json=off, headers=headers))["clickTracking"] is False
    _send(settings, graph, tmp_path)
    [message] = standin.accepted
    assert not _CLICK.findall(message["TextBody"]) and not _CLICK.findall(message["HtmlBody"])
    assert f"Open it: {CTA}" in message["TextBody"]
    assert f'href="{CTA.replace("&", "&amp;")}"' in message["HtmlBody"]


def test_the_click_write_seeks_its_unique_indexes_and_never_scans(graph: Graph) -> None:
    """A batch costs its own rows: each profile by its unique campaignUnsubscribeId (a seek), then its
    own CAMPAIGN_STATE relationships to the campaign; never a label or index scan."""
    row = {"unsubscribeId": "u", "campaignId": "c", "campaignCreatedAt": "t", "at": "t", "count": 1}
    with graph.driver.session(database=graph.database) as session:
        plan = (
            session.run("EXPLAIN " + statement("email_click_record"), clicks=[row], batchId="b")
            .consume()
            .plan
        )
    assert plan is not None
    every = operators(plan)
    assert any(op.startswith("NodeUniqueIndexSeek") for op in every), " ".join(every)
    assert not any("Scan" in op for op in every), every
