"""The A/B test wave on the real graph, local queue, worker, sweeper, reference inbox
and Postmark stand-in: only the test wave is sent until the decision, which the page job woken at
``decideAt`` takes once (a duplicated job, a second decision run and an admin's late choice change
nothing); then the rest of the audience gets only the winner on every path, test members keep their
own variant, and nobody receives two."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.config import Settings
from campaign_engine.delivery.readiness import readiness_params
from campaign_engine.delivery.test_wave_page import chosen_claim_query, page_ids_query
from campaign_engine.domain.ab_variants import assigned_variant, in_test_wave
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.domain.frequency_cap import cap_params
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.test_wave import decide
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
)
from tests.support.email import add_email_members, email_settings
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

ADMIN = {"as_": ADMIN_ID, "admin": True}


def _content(tag: str) -> dict[str, Any]:
    return {
        "message": {"title": f"Card {tag}"},
        "notification": {"title": f"Push {tag}", "body": f"Body {tag}"},
        "email": {
            "subject": f"Subject {tag}",
            "title": f"Title {tag}",
            "body": f"Text {tag}",
            "ctaLabel": "Go",
        },
    }


def _campaign(campaign_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": campaign_id,
        "name": campaign_id,
        "channels": ["inApp", "notify", "email"],
        **_content("A"),
        # B's email tests the subject line alone: its body is A's (the base copy).
        "variants": [{"id": "A"}, {"id": "B", **_content("B"), "email": {"subject": "Subject B"}}],
        **extra,
    }


READERS = [f"t{i:02d}" for i in range(60)]
SHARE = 0.3


def _arm(campaign_id: str, pid: str) -> str:
    arm = assigned_variant([{"id": "A"}, {"id": "B"}], campaign_id=campaign_id, profile_id=pid)
    assert arm is not None
    return arm


class _Stack:
    def __init__(self, settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> None:
        self.settings, self.graph, self.queues, self.clock = settings, graph, queues, clock
        self.worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)

    def at(self, moment: Any) -> None:
        """The worker edge at ``moment``: sweep (due waves), then drain both queues."""
        self.clock.now = moment
        run_sweep(self.settings, self.graph, self.queues.dispatch, clock=self.clock)
        drain(self.worker.handle, self.queues)


@pytest.fixture
def stack(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> Iterator[tuple[_Stack, TrpcClient, str]]:
    standin.reset()
    # Waves of a few readers, to see each one: the evidence rule has its own module
    # (test_test_wave_evidence.py).
    settings = email_settings(
        delivery_settings(base_settings, campaign_dispatch_page_size=10), standin.url, standin.token,
        campaign_email_page_size=10, campaign_experiment_min_per_variant=1,
    )  # fmt: skip
    queues = local_queues(tmp_path / "q.sqlite3")
    clock = StepClock(NOW)
    run = _Stack(settings, graph, queues, clock)
    with (
        inbox_server(tmp_path) as inbox,
        api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api,
    ):
        try:
            yield run, api, f"{inbox.url}/api/notifications/send"
        finally:
            run.worker.close()


def _live(api: TrpcClient, graph: Graph, campaign: dict[str, Any], readers: list[str], hook: str) -> None:
    ok(api.mutate("campaigns.create", campaign, **ADMIN))
    add_email_members(graph, campaign["id"], readers, notificationsWebhook=hook, tenants=["default"])
    ok(api.mutate("campaigns.setStatus", {"campaignId": campaign["id"], "status": "live"}, **ADMIN))


def _dispatch(api: TrpcClient, campaign_id: str, experiment: dict[str, Any]) -> Any:
    token = ok(api.query("campaigns.previewDispatch", {"campaignId": campaign_id}, **ADMIN))["previewToken"]
    body = {"campaignId": campaign_id, "expectedPreviewToken": token, "experiment": experiment}
    return api.mutate("campaigns.dispatch", body, **ADMIN)


def _subjects(standin: PostmarkStandin) -> dict[str, list[str]]:
    sent: dict[str, list[str]] = {}
    for message in standin.accepted:
        sent.setdefault(message["To"].split("@")[0], []).append(message["Subject"])
    return sent


def test_an_experiment_is_refused_where_it_cannot_run_and_nothing_is_written(
    stack: tuple[_Stack, TrpcClient, str], graph: Graph
) -> None:
    _, api, hook = stack
    _live(api, graph, _campaign("plain", variants=None), ["p1"], hook)
    _live(api, graph, _campaign("no-inapp", channels=["notify", "email"],
                                variants=[{"id": "A"}, {"id": "B", "email": _content("B")["email"]}]),
          ["p1"], hook)  # fmt: skip
    _live(api, graph, _campaign("push-only", channels=["inApp", "notify"]), ["p1"], hook)
    _live(api, graph, {**_campaign("routed"), "minors": "guardians"}, ["p1"], hook)
    good = {"testShare": 0.2, "metric": "emailClicked", "decideAfterSeconds": 60}
    refused = [
        ("plain", good),  # no variants
        ("no-inapp", {**good, "metric": "shown"}),  # no in-app message
        ("push-only", good),  # emailClicked without email
        ("push-only", {**good, "metric": "clicked", "testShare": 0.6}),
        ("push-only", {**good, "metric": "clicked", "decideAfterSeconds": 0}),
        ("push-only", {**good, "metric": "clicked", "decideAfterSeconds": 8 * 86_400}),
        ("push-only", {**good, "metric": "opened"}),
        ("routed", good),  # minors routed to guardians
    ]
    for campaign_id, experiment in refused:
        answer = _dispatch(api, campaign_id, experiment)
        assert error_code(answer) == "BAD_REQUEST", (campaign_id, experiment)
        asked = {"campaignId": campaign_id, "experiment": experiment}
        assert error_code(api.query("campaigns.previewDispatch", asked, **ADMIN)) == "BAD_REQUEST"
    for campaign_id in ("plain", "no-inapp", "push-only", "routed"):
        assert ok(api.query("campaigns.listDispatches", {"campaignId": campaign_id}, **ADMIN)) == []
    assert graph.run("MATCH (c:Campaign) WHERE c.abTest IS NOT NULL RETURN c.id") == []
    # A plain dispatch has no experiment, phase or decision, and nothing to choose.
    started = ok(_dispatch(api, "plain", None))  # type: ignore[arg-type]
    plain = ok(api.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}, **ADMIN))
    assert (plain["experiment"], plain["phase"], plain["decision"]) == (None, None, None)
    chosen = api.mutate("campaigns.chooseVariant", {"dispatchId": started["dispatchId"], "variantId": "A"},
                        **ADMIN)  # fmt: skip
    assert error_code(chosen) == "CONFLICT"


def test_the_test_wave_goes_first_the_decision_is_taken_once_and_the_rest_gets_only_the_winner(
    stack: tuple[_Stack, TrpcClient, str], graph: Graph, standin: PostmarkStandin
) -> None:
    run, api, hook = stack
    _live(api, graph, _campaign("ab"), READERS, hook)
    arms = {pid: _arm("ab", pid) for pid in READERS}
    testers = {pid for pid in READERS if in_test_wave("ab", pid, SHARE)}
    rest = set(READERS) - testers
    assert {arms[p] for p in testers} == {"A", "B"} and len(rest) > 30  # a fixed draw: deterministic
    experiment = {"testShare": SHARE, "metric": "emailClicked", "decideAfterSeconds": 600}
    # The review may ask about the experiment: the test wave's size per variant, the same token.
    asked = ok(
        api.query("campaigns.previewDispatch", {"campaignId": "ab", "experiment": experiment}, **ADMIN)
    )
    plain = ok(api.query("campaigns.previewDispatch", {"campaignId": "ab"}, **ADMIN))
    assert asked["previewToken"] == plain["previewToken"] and plain["testWave"] is None
    assert asked["testWave"] == dict(Counter(arms[p] for p in testers))
    started = ok(_dispatch(api, "ab", experiment))
    email_id = started["dispatchIds"]["email"]
    decide_at = format_ts(NOW + timedelta(seconds=600))

    run.at(NOW)
    sent = _subjects(standin)
    assert set(sent) == testers  # only the test wave, each their own variant once
    assert all(sent[p] == [f"Subject {arms[p]}"] for p in testers)
    assert {p for p in READERS if inbox_records(hook.rsplit("/api", 1)[0], p)} == testers
    for dispatch_id in started["dispatchIds"].values():
        testing = ok(api.query("campaigns.getDispatch", {"dispatchId": dispatch_id}, **ADMIN))
        assert (testing["status"], testing["phase"], testing["nextPageAt"]) == (
            "sending",
            "testing",
            decide_at,
        )
        assert testing["experiment"] == experiment and testing["decision"] is None
        assert testing["cursor"] is None and testing["pass"] == 2  # the rest waits for the decision pass
    # In-app while testing: a test member sees their variant, everyone else no card yet.
    for pid in READERS:
        cards = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
        assert [c["variantId"] for c in cards] == ([arms[pid]] if pid in testers else []), pid
    waiting = sorted(rest)[0]
    why = ok(api.query("campaigns.explainRecipient", {"campaignId": "ab", "profileId": waiting}, **ADMIN))
    assert why["variant"]["inTestWave"] is False and why["variant"]["served"] is None

    # Every B test recipient clicks, no A one: B wins. A duplicate page job before the decision time
    # waits (nothing sent), and a sweep before it enqueues nothing.
    clickers = sorted(p for p in testers if arms[p] == "B")
    graph.run("MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {id: 'ab'}) WHERE p.profileId IN $ids "
              "SET s.emailClickedAt = $at", ids=clickers, at=format_ts(NOW))  # fmt: skip
    created = graph.run("MATCH (c:Campaign {id: 'ab'}) RETURN c.createdAt AS at")[0]["at"]
    early = PageJob(dispatch_id=email_id, campaign_id="ab", campaign_created_at=created, channel="email")
    run.queues.dispatch.send_batch([job_json(early)])
    run.at(NOW + timedelta(seconds=300))
    assert set(_subjects(standin)) == testers

    # At the decision time: the sweeper's due waves wake both walks, plus a duplicated job; one decides.
    run.queues.dispatch.send_batch([job_json(early), job_json(early)])
    run.at(NOW + timedelta(seconds=601))
    sent = _subjects(standin)
    assert set(sent) == set(READERS)
    bodies = {m["To"].split("@")[0]: str(m["TextBody"]) for m in standin.accepted}
    assert all(len(subjects) == 1 for subjects in sent.values())  # nobody got two emails
    assert all("Text A" in body and "Text B" not in body for body in bodies.values())
    for pid in READERS:
        served = arms[pid] if pid in testers else "B"
        assert sent[pid] == [f"Subject {served}"], pid
        view = re.search(r"https://[^/\s]+(/campaigns/view\?token=[A-Za-z0-9%._-]+)", bodies[pid])
        assert view is not None and f"Subject {served}" in api.http.get(view.group(1)).text, pid
        [record] = inbox_records(hook.rsplit("/api", 1)[0], pid)
        assert record["metadata"]["variantId"] == served, pid
        cards = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
        assert [c["variantId"] for c in cards] == [served], pid
    a_testers = sum(arms[p] == "A" for p in testers)
    expected_rates = [
        {"variantId": "A", "numerator": 0, "denominator": a_testers, "rate": 0.0},
        {"variantId": "B", "numerator": len(clickers), "denominator": len(clickers), "rate": 1.0},
    ]
    for dispatch_id in started["dispatchIds"].values():
        done = ok(api.query("campaigns.getDispatch", {"dispatchId": dispatch_id}, **ADMIN))
        assert (done["status"], done["phase"]) == ("completed", "rest")
        assert done["decision"]["winner"] == "B" and done["decision"]["rates"] == expected_rates
        assert done["decision"]["reason"] == "highest_rate"
        assert done["decision"]["decidedBy"] == "system:test-wave"
    entries = graph.run("MATCH (e:AuditEntry {procedure: 'delivery.testWave'}) RETURN e.detail AS detail")
    assert len(entries) == 1 and json.loads(entries[0]["detail"])["winner"] == "B"

    # The decision again (a job running twice) and an admin's late choice change nothing.
    audit = AuditContext(actor="system:test-wave", procedure="delivery.testWave", request_id="again",
                         at=format_ts(NOW), tenant_id="default")  # fmt: skip
    assert (
        graph.write(decide, campaign_id="ab", now=format_ts(NOW + timedelta(seconds=700)), audit=audit)
        is None
    )
    late = api.mutate("campaigns.chooseVariant", {"dispatchId": email_id, "variantId": "A"}, **ADMIN)
    assert error_code(late) == "CONFLICT"
    explained = ok(
        api.query("campaigns.explainRecipient", {"campaignId": "ab", "profileId": waiting}, **ADMIN)
    )
    assert explained["variant"]["served"] == "B" == explained["past"]["variantId"]
    export = api.http.get(
        "/exports/campaigns/ab/recipients.csv", headers=api.headers_for(ADMIN_ID, admin=True)
    )
    rows = {r["profileId"]: r["variantId"] for r in csv.DictReader(io.StringIO(export.text))}
    assert rows == {pid: (arms[pid] if pid in testers else "B") for pid in READERS}
    stats = ok(api.query("campaigns.getStats", {"campaignId": "ab"}, **ADMIN))["variants"]
    assert stats["B"]["emailed"] == len(rest) + len(clickers)
    assert Counter(rows.values())["A"] == a_testers


def test_an_admin_chooses_early_and_the_rest_starts_at_once(
    stack: tuple[_Stack, TrpcClient, str], graph: Graph, standin: PostmarkStandin
) -> None:
    run, api, hook = stack
    readers = READERS[:30]
    _live(api, graph, _campaign("early"), readers, hook)
    testers = {pid for pid in readers if in_test_wave("early", pid, SHARE)}
    experiment = {"testShare": SHARE, "metric": "shown", "decideAfterSeconds": 86_400}  # past the 900 s cap
    started = ok(_dispatch(api, "early", experiment))
    run.at(NOW)
    assert set(_subjects(standin)) == testers
    notify_id = started["dispatchIds"]["notify"]
    unknown = api.mutate("campaigns.chooseVariant", {"dispatchId": notify_id, "variantId": "Z"}, **ADMIN)
    assert error_code(unknown) == "BAD_REQUEST"
    chosen = ok(api.mutate("campaigns.chooseVariant", {"dispatchId": notify_id, "variantId": "A"}, **ADMIN))
    assert chosen["phase"] == "rest" and chosen["decision"]["winner"] == "A"
    assert chosen["decision"]["reason"] == "chosen"
    assert chosen["decision"]["decidedBy"] == ADMIN_ID and chosen["nextPageAt"] is None
    run.at(NOW + timedelta(seconds=5))  # well before decideAt: the choice started the rest pass
    sent = _subjects(standin)
    assert set(sent) == set(readers) and all(len(s) == 1 for s in sent.values())
    assert all(sent[p] == ["Subject A"] for p in set(readers) - testers)
    entries = graph.run("MATCH (e:AuditEntry {procedure: 'campaigns.chooseVariant'}) RETURN e.actor AS actor")
    assert entries == [{"actor": ADMIN_ID}]
    again = api.mutate("campaigns.chooseVariant", {"dispatchId": notify_id, "variantId": "B"}, **ADMIN)
    assert error_code(again) == "CONFLICT"


def test_a_scheduled_dispatch_keeps_its_experiment_until_it_fires(
    stack: tuple[_Stack, TrpcClient, str], graph: Graph, standin: PostmarkStandin
) -> None:
    run, api, hook = stack
    readers = READERS[:20]
    _live(api, graph, _campaign("later"), readers, hook)
    token = ok(api.query("campaigns.previewDispatch", {"campaignId": "later"}, **ADMIN))["previewToken"]
    experiment = {"testShare": SHARE, "metric": "clicked", "decideAfterSeconds": 120}
    send_at = NOW + timedelta(hours=1)
    body = {"campaignId": "later", "sendAt": format_ts(send_at), "expectedPreviewToken": token,
            "experiment": experiment}  # fmt: skip
    scheduled = ok(api.mutate("campaigns.scheduleDispatch", body, **ADMIN))
    assert [(d["status"], d["experiment"], d["phase"]) for d in scheduled] == [
        ("scheduled", experiment, None)
    ] * 2
    assert graph.run("MATCH (c:Campaign {id: 'later'}) RETURN c.abTest AS t") == [{"t": None}]
    run.at(send_at)  # the sweeper fires it: the test starts now, its decision 120 s later
    testers = {pid for pid in readers if in_test_wave("later", pid, SHARE)}
    assert set(_subjects(standin)) == testers
    fired = ok(api.query("campaigns.getDispatch", {"dispatchId": scheduled[0]["dispatchId"]}, **ADMIN))
    decide_at = format_ts(send_at + timedelta(seconds=120))
    assert (fired["status"], fired["phase"], fired["decideAt"], fired["nextPageAt"]) == (
        "sending", "testing", decide_at, decide_at
    )  # fmt: skip
    run.at(send_at + timedelta(seconds=121))
    sent = _subjects(standin)
    assert set(sent) == set(readers) and all(len(s) == 1 for s in sent.values())
    done = ok(api.query("campaigns.getDispatch", {"dispatchId": scheduled[0]["dispatchId"]}, **ADMIN))
    # No clicks at all: nothing tells the arms apart, it says so, and the first variant is sent.
    assert (done["decision"]["winner"], done["decision"]["reason"]) == ("A", "insufficient_evidence")


@pytest.mark.parametrize("capped", [False, True])
def test_a_testing_page_seeks_its_ids_in_index_order_and_claims_the_chosen_by_their_unique_key(
    graph: Graph, capped: bool
) -> None:
    """The two statements of an email page while a test wave is undecided (``delivery/test_wave_page``):
    the page's ids from audience_member in index order (no sort, no profile scan), then the claim of
    the chosen ids, each profile by its unique key, one UNWIND."""
    params = {
        "campaignId": "c", "campaignCreatedAt": "x", "cursor": "", "limit": 10, "claimId": "claim-1",
        "dispatchId": "d-1", "now": format_ts(NOW), "chosen": ["p1", "p2"],
        **cap_params({}, "email", now=NOW), **readiness_params({}, {}, now=NOW), **policy_params(NOW, 18),
    }  # fmt: skip
    with graph.driver.session(database=graph.database) as session:
        ids = session.run("EXPLAIN " + page_ids_query(None), **params).consume().plan
        claim = session.run("EXPLAIN " + chosen_claim_query(capped), **params).consume().plan
    assert ids is not None and claim is not None
    read = operators(ids)
    assert any("RelationshipIndexSeek" in op for op in read), read
    assert not any(op.startswith(("Sort", "PartialSort", "Top")) or "Scan" in op for op in read), read
    claimed = operators(claim)
    assert any(op.startswith("NodeUniqueIndexSeek") for op in claimed), claimed
    assert not any("Scan" in op for op in claimed), claimed
    assert "CYPHER replan=skip" in page_ids_query(None) and "CYPHER replan=skip" in chosen_claim_query(capped)
