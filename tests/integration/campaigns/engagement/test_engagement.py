"""getMyCampaigns, recordEvent, discover/enroll/leave on real Neo4j (API and real threads)."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.engagement.cards import CardCache, my_campaigns_of
from campaign_engine.campaigns.engagement.events import EventCall, record_event, record_events
from campaign_engine.campaigns.engagement.models import EventKind, EventResult
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.campaigns.profiles import records as profiles
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate, CampaignPatch
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.rules.policy import Policy
from tests.support.api import api_client, error_code, ok
from tests.support.concurrency import at_once

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def seed_profiles(graph: Graph, rows: list[dict[str, Any]]) -> None:
    profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}), tenant_id="default")


def live_campaign(graph: Graph, campaign_id: str, *, status: str = "live", **fields: Any) -> None:
    data = {
        "id": campaign_id,
        "name": f"N-{campaign_id}",
        "channels": ["inApp"],
        "message": {"title": f"T-{campaign_id}"},
        **fields,
    }
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=NOW)
    if status != "draft":
        definitions.set_status(graph, campaign_id=campaign_id, status="live", now=NOW)
    if status in {"paused", "archived"}:
        definitions.set_status(graph, campaign_id=campaign_id, status=status, now=NOW)  # type: ignore[arg-type]


def add_member(graph: Graph, campaign_id: str, profile_id: str) -> None:
    graph.run(
        "MATCH (p:Profile {profileId: $p}), (c:Campaign {id: $c}) "
        "CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: $c, profileId: $p, addedAt: 'x', source: 'test', "
        "selfEnrolled: false}]->(c)",
        p=profile_id,
        c=campaign_id,
    )


def test_get_my_campaigns_shows_only_visible_campaigns_in_order(
    base_settings: Settings, graph: Graph
) -> None:
    seed_profiles(
        graph, [{"profileId": "u1", "dob": "2000-01-01"}, {"profileId": "kid", "dob": "2015-01-01"}]
    )
    live_campaign(graph, "low", message={"title": "low", "priority": 1}, startsAt="2026-01-01T00:00:00Z")
    live_campaign(graph, "high", message={"title": "high", "priority": 9})
    live_campaign(graph, "early", message={"title": "early", "priority": 1}, startsAt="2025-01-01T00:00:00Z")
    live_campaign(graph, "draft", status="draft")
    live_campaign(graph, "paused", status="paused")
    live_campaign(graph, "future", startsAt="2026-04-01T00:00:00Z")
    live_campaign(graph, "ended", startsAt="2026-01-01T00:00:00Z", endsAt="2026-03-01T12:00:00Z")
    live_campaign(graph, "disabled", message={"title": "off", "enabled": False})
    live_campaign(
        graph, "notify-only", channels=["notify"], message=None, notification={"title": "n", "body": "b"}
    )
    live_campaign(graph, "not-member")
    for cid in ("low", "high", "early", "draft", "paused", "future", "ended", "disabled", "notify-only"):
        add_member(graph, cid, "u1")
        add_member(graph, cid, "kid")
    with api_client(base_settings, graph, clock=clock) as api:
        mine = ok(api.query("campaigns.getMyCampaigns", as_="u1"))["campaigns"]
        assert [c["campaignId"] for c in mine] == ["high", "early", "low"]
        fields = {
            "campaignId",
            "name",
            "message",
            "locale",
            "variantId",
            "startsAt",
            "endsAt",
            "state",
            "testId",
        }
        # A field without a value is left out, never null (LearnCard's validators refuse null).
        assert {"campaignId", "name", "message"} <= set(mine[0]) <= fields
        assert not {"state", "testId", "variantId"} & set(mine[0])
        assert all(value is not None for card in mine for value in card.values())
        assert ok(api.query("campaigns.getMyCampaigns", as_="kid"))["campaigns"] == []  # age policy
        assert ok(api.query("campaigns.getMyCampaigns", as_="nobody"))["campaigns"] == []
        assert error_code(api.query("campaigns.getMyCampaigns")) == "UNAUTHORIZED"
        # Reading consumes nothing.
        assert ok(api.query("campaigns.getMyCampaigns", as_="u1"))["campaigns"] == mine


def test_record_event_counts_and_timestamps(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "u1"}, {"profileId": "u2"}])
    live_campaign(graph, "c1")
    add_member(graph, "c1", "u1")
    with api_client(base_settings, graph, clock=clock) as api:
        first = ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u1"))
        assert first["recorded"] is True and first["state"]["shownCount"] == 1
        ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u1"))
        clicked = ok(
            api.mutate(
                "campaigns.recordEvent", {"campaignId": "c1", "event": "clicked", "actionId": "a1"}, as_="u1"
            )
        )
        state = clicked["state"]
        assert state["shownCount"] == 2 and state["clickedCount"] == 1 and state["dismissedCount"] == 0
        assert state["lastActionId"] == "a1"
        assert state["shownFirstAt"] == state["shownLastAt"] == "2026-03-01T12:00:00.000000Z"
        mine = ok(api.query("campaigns.getMyCampaigns", as_="u1"))["campaigns"]
        assert mine[0]["state"]["shownCount"] == 2
        # Non-members, unknown campaigns and bad events.
        assert (
            error_code(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u2"))
            == "NOT_FOUND"
        )
        assert (
            error_code(api.mutate("campaigns.recordEvent", {"campaignId": "zz", "event": "shown"}, as_="u1"))
            == "NOT_FOUND"
        )
        assert (
            error_code(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "opened"}, as_="u1"))
            == "BAD_REQUEST"
        )
        definitions.set_status(graph, campaign_id="c1", status="paused", now=NOW)
        assert (
            error_code(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u1"))
            == "NOT_FOUND"
        )


def test_twenty_concurrent_events_make_one_state_with_exact_counts(graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "u1"}])
    live_campaign(graph, "c1")
    add_member(graph, "c1", "u1")
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    kinds: list[EventKind] = ["shown"] * 10 + ["clicked"] * 6 + ["dismissed"] * 4

    def worker(kind: EventKind) -> EventResult:
        return record_event(
            graph, profile_id="u1", campaign_id="c1", event=kind, action_id=None, test_id=None, policy=policy
        )

    at_once(worker, [(kind,) for kind in kinds])
    rows = graph.run(
        "MATCH (:Profile {profileId: 'u1'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'c1'}) RETURN s {.*} AS s"
    )
    assert len(rows) == 1
    state = rows[0]["s"]
    assert (state["shownCount"], state["clickedCount"], state["dismissedCount"]) == (10, 6, 4)


def test_discover_enroll_leave(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(
        graph, [{"profileId": "u1", "dob": "2000-01-01"}, {"profileId": "kid", "dob": "2014-01-01"}]
    )
    live_campaign(graph, "open", discoverable=True)
    live_campaign(graph, "hidden")
    live_campaign(graph, "open-draft", status="draft", discoverable=True)
    live_campaign(graph, "open-later", discoverable=True, startsAt="2027-01-01T00:00:00Z")
    live_campaign(graph, "admin-added", discoverable=True)
    add_member(graph, "admin-added", "u1")
    with api_client(base_settings, graph, clock=clock) as api:
        found = ok(api.query("campaigns.discover", as_="u1"))["campaigns"]
        assert [c["campaignId"] for c in found] == ["open"]
        assert ok(api.query("campaigns.discover", as_="kid"))["campaigns"] == []
        assert error_code(api.mutate("campaigns.enroll", {"campaignId": "open"}, as_="kid")) == "NOT_FOUND"
        for hidden in ("hidden", "open-draft", "open-later", "nope"):
            assert error_code(api.mutate("campaigns.enroll", {"campaignId": hidden}, as_="u1")) == "NOT_FOUND"
        assert ok(api.mutate("campaigns.enroll", {"campaignId": "open"}, as_="u1")) == {
            "enrolled": True,
            "created": True,
        }
        assert ok(api.mutate("campaigns.enroll", {"campaignId": "open"}, as_="u1"))["created"] is False
        rel = graph.run(
            "MATCH (:Profile {profileId: 'u1'})-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {id: 'open'}) "
            "RETURN m {.*} AS m"
        )
        assert len(rel) == 1 and rel[0]["m"]["selfEnrolled"] is True
        assert ok(api.query("campaigns.discover", as_="u1"))["campaigns"] == []
        assert [
            c["campaignId"] for c in ok(api.query("campaigns.getMyCampaigns", as_="u1"))["campaigns"]
        ] == ["admin-added", "open"]
        assert ok(api.mutate("campaigns.leave", {"campaignId": "admin-added"}, as_="u1")) == {"left": False}
        assert ok(api.mutate("campaigns.leave", {"campaignId": "open"}, as_="u1")) == {"left": True}
        assert ok(api.mutate("campaigns.leave", {"campaignId": "open"}, as_="u1")) == {"left": False}
        assert [c["campaignId"] for c in ok(api.query("campaigns.discover", as_="u1"))["campaigns"]] == [
            "open"
        ]


def test_concurrent_events_through_two_batching_services_count_one_by_one(graph: Graph) -> None:
    """Two API processes' services, 30 simultaneous events of one profile: batches hold several events
    of the same pair, yet there is one state, exact counts, and each event saw its own count."""
    seed_profiles(graph, [{"profileId": "u1"}])
    live_campaign(graph, "c1")
    add_member(graph, "c1", "u1")
    services = [
        EngagementService(graph, policy=lambda: Policy(now=NOW, adult_age=18, domain="x")) for _ in range(2)
    ]
    kinds: list[EventKind] = ["shown"] * 16 + ["clicked"] * 8 + ["dismissed"] * 6

    def worker(i: int, kind: EventKind) -> tuple[str, EventResult]:
        result = services[i % 2].record_event(
            profile_id="u1", campaign_id="c1", event=kind, action_id=f"a{i}", test_id=None
        )
        return kind, result

    results = at_once(worker, list(enumerate(kinds)))
    for service in services:
        service.close()
    rows = graph.run("MATCH (:Profile {profileId: 'u1'})-[s:CAMPAIGN_STATE]->() RETURN s {.*} AS s")
    assert len(rows) == 1
    state = rows[0]["s"]
    assert (state["shownCount"], state["clickedCount"], state["dismissedCount"]) == (16, 8, 6)
    for kind, n in (("shown", 16), ("clicked", 8), ("dismissed", 6)):
        seen = sorted(getattr(r.state, f"{kind}_count") for k, r in results if k == kind and r.state)
        assert seen == list(range(1, n + 1)), kind


def test_a_batch_records_the_allowed_events_and_refuses_only_the_others(graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "u1"}, {"profileId": "u2"}])
    live_campaign(graph, "c1")
    live_campaign(graph, "draft", status="draft")
    add_member(graph, "c1", "u1")
    add_member(graph, "draft", "u1")
    calls = [
        EventCall("u1", "c1", "shown"),
        EventCall("u2", "c1", "shown"),  # not a member
        EventCall("u1", "draft", "clicked"),  # not live
        EventCall("ghost", "c1", "shown"),  # no such profile
        EventCall("u1", "c1", "shown", "cta"),
    ]
    outcomes = record_events(graph, calls, policy=Policy(now=NOW, adult_age=18, domain="x"))
    assert [type(outcome).__name__ for outcome in outcomes] == [
        "EventResult", "NotFound", "NotFound", "NotFound", "EventResult",
    ]  # fmt: skip
    first, last = outcomes[0], outcomes[4]
    assert isinstance(first, EventResult) and isinstance(last, EventResult)
    assert first.state is not None and first.state.shown_count == 1
    assert last.state is not None and (last.state.shown_count, last.state.last_action_id) == (2, "cta")
    assert graph.run("MATCH ()-[s:CAMPAIGN_STATE]->() RETURN count(s) AS n") == [{"n": 1}]


def test_batched_reads_keep_each_caller_apart_and_never_serve_a_stale_card(graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "u1"}, {"profileId": "u2"}, {"profileId": "u3"}])
    for cid in ("a", "b"):
        live_campaign(graph, cid)
    add_member(graph, "a", "u1")
    add_member(graph, "a", "u2")
    add_member(graph, "b", "u2")
    cards = CardCache()
    policy = Policy(now=NOW, adult_age=18, domain="x")
    found = graph.read(lambda tx: my_campaigns_of(tx, ["u1", "u2", "u3"], policy=policy, cards=cards))
    assert {pid: [c.campaign_id for c in mine.cards] for pid, mine in found.items()} == {
        "u1": ["a"],
        "u2": ["a", "b"],
        "u3": [],
    }

    later = datetime(2026, 3, 1, 12, 5, tzinfo=UTC)
    patch = CampaignPatch.model_validate({"campaignId": "a", "message": {"title": "changed"}})
    definitions.update_campaign(graph, patch=patch, now=later)
    again = graph.read(lambda tx: my_campaigns_of(tx, ["u1"], policy=policy, cards=cards))
    message = again["u1"].cards[0].message
    assert message is not None and message.title == "changed"


def test_refused_enrol_and_leave_take_no_campaign_lock(base_settings: Settings, graph: Graph) -> None:
    # An admin's audience change holds the campaign lock; callers who may not join, or have nothing to
    # leave, are answered at once instead of queueing behind it (any signed-in user can send these).
    seed_profiles(
        graph, [{"profileId": "u1", "dob": "2000-01-01"}, {"profileId": "kid", "dob": "2014-01-01"}]
    )
    live_campaign(graph, "open", discoverable=True)
    live_campaign(graph, "hidden")
    with api_client(base_settings, graph, clock=clock) as api, graph.driver.session() as session:
        holder = session.begin_transaction()
        assert lock_campaign(holder, "open") is not None and lock_campaign(holder, "hidden") is not None
        answers: list[Any] = []

        def refused_calls() -> None:
            answers.append(error_code(api.mutate("campaigns.enroll", {"campaignId": "open"}, as_="kid")))
            answers.append(error_code(api.mutate("campaigns.enroll", {"campaignId": "hidden"}, as_="u1")))
            answers.append(ok(api.mutate("campaigns.leave", {"campaignId": "open"}, as_="u1")))
            answers.append(error_code(api.mutate("campaigns.leave", {"campaignId": "nope"}, as_="u1")))

        caller = threading.Thread(target=refused_calls, daemon=True)
        caller.start()
        caller.join(timeout=5)
        answered_under_lock = not caller.is_alive()
        holder.rollback()  # frees a caller stuck on the lock, so a failure ends instead of hanging
        caller.join(timeout=30)
        assert answered_under_lock, "a refused enroll/leave waited for the campaign lock"
        assert answers == ["NOT_FOUND", "NOT_FOUND", {"left": False}, "NOT_FOUND"]
        # The lock free again, an eligible caller enrols and leaves as before.
        assert ok(api.mutate("campaigns.enroll", {"campaignId": "open"}, as_="u1"))["created"] is True
        assert ok(api.mutate("campaigns.leave", {"campaignId": "open"}, as_="u1")) == {"left": True}


def test_a_batch_of_events_locks_its_profiles_in_its_one_statement(
    graph: Graph, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch of one kind of event is one statement before the commit: it takes every profile's lock
    (graph/locks.py) before it reads an event, so no separate lock round trip precedes it."""
    seed_profiles(graph, [{"profileId": "u1"}, {"profileId": "u2"}])
    live_campaign(graph, "a")
    add_member(graph, "a", "u1")
    add_member(graph, "a", "u2")
    policy = Policy(now=NOW, adult_age=18, domain="x")
    calls = [EventCall("u2", "a", "shown"), EventCall("u1", "a", "shown")]
    query = "MATCH (p:Profile) RETURN p.profileId AS id, p.campaignStateLock AS n ORDER BY id"
    before = [row["n"] for row in graph.run(query)]
    with caplog.at_level(logging.DEBUG, logger="neo4j"):
        results = record_events(graph, calls, policy=policy)
    assert all(isinstance(result, EventResult) and result.recorded for result in results), results
    sent = [r.getMessage() for r in caplog.records if "C: RUN" in r.getMessage()]
    assert len(sent) == 1 and "campaignStateLock" in sent[0], sent
    assert [row["n"] for row in graph.run(query)] == [n + 1 for n in before]  # each lock taken once
