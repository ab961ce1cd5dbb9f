"""The email page walk's reads: it seeks the campaign's membership, reads only members (a live segment
through the same page), finds each claim's outcome by its id, moves the cursor past ineligible
members, and gives a claimed profile its unsubscribe id once.

Real Neo4j, the real worker and the loopback Postmark stand-in."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.frequency_cap import email_page_query
from campaign_engine.delivery.readiness import readiness_params
from campaign_engine.domain.frequency_cap import cap_params
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import Queues
from tests.support.delivery import NOW, run_worker, start_dispatch
from tests.support.email import (
    UNSUBSCRIBE_SECRET,
    accepted_to,
    add_email_members,
    address_of,
    make_email_campaign,
)
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

_PROFILE_READS = ("NodeByLabelScan", "NodeIndexSeek", "NodeIndexScan", "NodeUniqueIndexSeek", "AllNodesScan")


def _page_params(campaign_id: str, created_at: str, *, limit: int) -> dict[str, Any]:
    return {
        "campaignId": campaign_id,
        "campaignCreatedAt": created_at,
        "cursor": "",
        "limit": limit,
        "claimId": "claim-1",
        "dispatchId": "d-1",
        "now": "2026-03-01T12:00:00.000000Z",
        **cap_params({}, "email", now=NOW),
        **readiness_params({}, {}, now=NOW),  # no per-recipient time, no quiet hours: all ready
        **policy_params(NOW, 18),
    }


def _find(node: Any, prefix: str) -> Any:
    if str(node["operatorType"]).startswith(prefix):
        return node
    for child in node.get("children", []):
        try:
            return _find(child, prefix)
        except LookupError:
            continue
    raise LookupError(prefix)


def _db_hits(node: Any) -> int:
    return int(node.get("dbHits", 0)) + sum(_db_hits(child) for child in node.get("children", []))


@pytest.mark.parametrize("capped", [False, True], ids=["uncapped", "capped"])
def test_email_page_is_an_ordered_membership_seek_and_never_reads_all_profiles(
    graph: Graph, capped: bool
) -> None:
    with graph.driver.session(database=graph.database) as session:
        plan = (
            session.run("EXPLAIN " + email_page_query(capped), **_page_params("c", "x", limit=10))
            .consume()
            .plan
        )
    assert plan is not None
    below = operators(_find(plan, "Limit"))
    # The members come from audience_member (campaignId, profileId) in index order: no sort, and no
    # Profile label scan or Profile(profileId) seek, so a page costs the members it reads.
    assert any("RelationshipIndexSeek" in op for op in below), below
    assert not any(op.startswith(("Sort", "PartialSort", "Top")) for op in below), below
    every = operators(plan)
    assert not any(op.startswith(_PROFILE_READS) for op in every), every


def test_the_outcome_record_finds_each_claim_by_its_id_whatever_the_recipients_history(graph: Graph) -> None:
    """A recipient of many campaigns: the record seeks the claim's CAMPAIGN_STATE by the elementId the
    claim returned, and reaches the profile (its lock) through it, with no Profile seek and no walk
    of the profile's relationships."""
    created_at = make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    graph.run(  # 80 campaigns before this one, each with state on p1: a dense profile
        "MATCH (p:Profile {profileId: 'p1'}) UNWIND range(1, 80) AS i "
        "CREATE (p)-[:CAMPAIGN_STATE {emailedAt: 't'}]->(:Campaign {id: 'old' + i})"
    )
    [row] = graph.run(email_page_query(False), **_page_params("c1", created_at, limit=10))
    [[claimed_id, _, _, state_id, _]] = row["claimed"]
    assert claimed_id == "p1"
    params = {
        "rows": [{"stateId": state_id, "outcome": "accepted", "reason": None, "messageId": "m-1"}],
        "campaignId": "c1",
        "campaignCreatedAt": created_at,
        "claimId": "claim-1",
        "now": "2026-03-01T12:00:01.000000Z",
    }  # fmt: skip
    with graph.driver.session(database=graph.database) as session:
        summary = session.run("PROFILE " + statement("email_record"), params).consume()
    assert summary.profile is not None
    every = operators(summary.profile)
    assert any("RelationshipByElementIdSeek" in op for op in every), every
    assert not any(op.startswith((*_PROFILE_READS, "Expand")) for op in every), every
    # One row's seek, lock and writes; expanding p1's 81 relationships would cost a hit each.
    assert _db_hits(summary.profile) < 40, _db_hits(summary.profile)
    [state] = graph.run(
        "MATCH (:Profile {profileId: 'p1'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'c1'}) RETURN s {.*} AS s"
    )
    assert (state["s"]["emailOutcome"], state["s"]["emailProviderMessageId"]) == ("accepted", "m-1")


def test_a_small_audience_among_many_profiles_reads_only_its_members(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    created_at = make_email_campaign(graph)
    members = [f"p{i:05d}" for i in range(0, 6000, 200)]  # 30 members spread over 6,000 profiles
    graph.run(
        "UNWIND range(0, 5999) AS i CREATE (:Profile {profileId: 'p' + right('0000' + toString(i), 5), "
        "dob: '1990-01-01', isManaged: false, isServiceProfile: false})"
    )
    add_email_members(graph, "c1", members)
    with graph.driver.session(database=graph.database) as session:
        summary = session.run(
            "PROFILE " + email_page_query(False), **_page_params("c1", created_at, limit=1000)
        ).consume()
    assert summary.profile is not None
    hits = _db_hits(summary.profile)
    # The 30 members cost their seek, lock, rules and claim; walking the 6,000 profiles after the
    # cursor would cost at least a hit per profile on its own.
    assert hits < 6000, hits
    graph.run("MATCH ()-[s:CAMPAIGN_STATE]->() DELETE s")  # the PROFILE above claimed them

    start_dispatch(graph, queues.dispatch, max_recipients=10_000)
    run_worker(settings.model_copy(update={"campaign_email_page_size": 10}), graph, queues)
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.pages) == ("completed", 30, 4)


def test_a_live_segment_is_claimed_through_the_same_page_among_many_profiles(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    """A segment's matches are read, locked and claimed by the same statement as members,
    opted-out and other tenants' profiles skipped as for members, without walking all profiles."""
    make_email_campaign(graph, segment={"tag": "rare"})
    profiles = [f"p{i:04d}" for i in range(3000)]
    add_email_members(graph, "c1", profiles, member=False, tenants=["default"])
    rare = profiles[::150]  # 20 of 3,000
    graph.run("MATCH (p:Profile) WHERE p.profileId IN $ids SET p.tenants = ['other']", ids=rare[:2])
    graph.run("MATCH (p:Profile {profileId: $id}) SET p.announcementEmailOptOut = true", id=rare[2])
    graph.run(
        "MERGE (t:Tag {slug: 'rare'}) WITH t MATCH (p:Profile) WHERE p.profileId IN $ids "
        "MERGE (p)-[:HAS_TAG {slug: t.slug, profileId: p.profileId}]->(t)",
        ids=rare,
    )
    node = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c {.*} AS c")[0]["c"]
    compiled = graph.read(lambda tx: compile_for(tx, node))
    assert compiled is not None
    with graph.driver.session(database=graph.database) as session:
        summary = session.run(
            "PROFILE " + email_page_query(False, compiled),
            **_page_params("c1", node["createdAt"], limit=1000),
            **compiled.params(NOW),
        ).consume()
    assert summary.profile is not None
    hits = _db_hits(summary.profile)
    assert hits < 3000, hits  # a hit per profile would be 3,000 on its own
    graph.run("MATCH ()-[s:CAMPAIGN_STATE]->() DELETE s")  # the PROFILE above claimed them

    start_dispatch(graph, queues.dispatch, max_recipients=10_000)
    run_worker(settings.model_copy(update={"campaign_email_page_size": 7}), graph, queues)
    assert accepted_to(postmark) == sorted(address_of(p) for p in rare[3:])


def test_a_page_of_ineligible_members_moves_the_cursor_past_them(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["o1", "o2", "o3"], announcementEmailOptOut=True)
    add_email_members(graph, "c1", ["p1"])
    start_dispatch(graph, queues.dispatch, max_recipients=100)
    run_worker(settings.model_copy(update={"campaign_email_page_size": 2}), graph, queues)
    assert accepted_to(postmark) == [address_of("p1")]
    [record] = list_dispatches(graph, "c1")
    # Pages: [o1, o2] claims no one yet moves the cursor, [o3, p1], then an empty page completes.
    assert (record.status, record.emailed, record.cursor, record.pages) == ("completed", 1, "p1", 3)


def test_a_claimed_profile_without_an_unsubscribe_id_gets_one_in_the_claim_once_for_life(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    """Profiles made before ids existed and not yet backfilled: the claim allocates theirs, under its
    lock, and every link carries the profile's one id; ids already given are never replaced."""
    members = [f"p{i}" for i in range(6)]
    for campaign_id in ("c1", "c2"):
        make_email_campaign(graph, campaign_id)
    add_email_members(graph, "c1", members)  # MERGEd raw: no campaignUnsubscribeId
    add_email_members(graph, "c2", members, emails=[])  # the same profiles and addresses
    graph.run(
        "MATCH (p:Profile) WHERE p.profileId IN $ids SET p.campaignUnsubscribeId = 'kept-' + p.profileId",
        ids=["p0", "p3"],
    )

    def ids() -> dict[str, str | None]:
        rows = graph.run("MATCH (p:Profile) RETURN p.profileId AS pid, p.campaignUnsubscribeId AS uid")
        return {row["pid"]: row["uid"] for row in rows}

    def linked() -> dict[str, str]:
        tokens = UnsubscribeTokens(UNSUBSCRIBE_SECRET)
        out = {}
        for message in postmark.accepted:
            [header] = [h["Value"] for h in message["Headers"] if h["Name"] == "List-Unsubscribe"]
            token = header.split("token=", 1)[1].rstrip(">")
            out[str(message["To"]).split("@")[0]] = tokens.read(token)
        return out

    small = settings.model_copy(
        update={"campaign_email_page_size": 4}
    )  # one page with both kinds, one without
    start_dispatch(graph, queues.dispatch, "c1")
    run_worker(small, graph, queues)
    first = ids()
    assert (first["p0"], first["p3"]) == ("kept-p0", "kept-p3")
    assert all(first.values()) and len(set(first.values())) == len(members), first
    assert linked() == first
    postmark.reset()
    start_dispatch(graph, queues.dispatch, "c2")
    run_worker(small, graph, queues)
    assert ids() == first
    assert linked() == first
