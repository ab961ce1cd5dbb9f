"""What grows with the audience stays bounded: the dispatch preview walks keyset pages with a
running digest, graph audience sources are read a page at a time, and a campaign delete retires the
campaign in one small transaction and reaps its relationships in bounded ones. Real Neo4j throughout."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import pytest

from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.audience import members as audience
from campaign_engine.campaigns.audience.members import CHUNK
from campaign_engine.campaigns.sending.dispatch import PREVIEW_PAGE, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.domain.audience import AllSource, TagSource
from campaign_engine.domain.dispatch import preview_token
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.rules.policy import Policy, policy_params
from tests.support.concurrency import at_once
from tests.support.delivery import NOW, make_campaign
from tests.support.email import EMAIL_COPY
from tests.support.plans import operators

P = ParamSpec("P")
R = TypeVar("R")

# More members than one page of everything that pages, so every walk crosses a page boundary.
MEMBERS = max(PREVIEW_PAGE, CHUNK) + 37


class CountingGraph(Graph):
    """The real graph, counting its write transactions (nothing is faked)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__(graph.driver, database=graph.database)
        self.writes = 0

    def write(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        self.writes += 1
        return super().write(fn, *args, **kwargs)


def create_members(graph: Graph, campaign_id: str, count: int, *, prefix: str = "m") -> None:
    """``count`` profiles, each a member of ``campaign_id``. Every 3rd has a dob and a primary verified
    address (email-eligible), every 5th opted out of notifications, every 7th was already notified."""
    graph.run(
        """
        UNWIND range(0, $count - 1) AS i
        WITH i, $prefix + right('00000' + toString(i), 6) AS id
        CREATE (p:Profile {profileId: id, announcementPushOptOut: i % 5 = 0, announcementEmailOptOut: false,
                           isManaged: false, isServiceProfile: false, tenants: ['default'],
                           dob: CASE WHEN i % 3 = 0 THEN '1990-01-01' END})
        WITH i, p
        MATCH (c:Campaign {id: $campaignId})
        CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, addedAt: '2026-01-01',
                                           source: 'test', selfEnrolled: false}]->(c)
        FOREACH (_ IN CASE WHEN i % 7 = 0 THEN [1] ELSE [] END |
          CREATE (p)-[:CAMPAIGN_STATE {notifiedAt: '2026-01-02'}]->(c))
        FOREACH (_ IN CASE WHEN i % 3 = 0 THEN [1] ELSE [] END |
          CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {
            type: 'email', value: p.profileId + '@example.com', isPrimary: true, isVerified: true}))
        """,
        count=count,
        prefix=prefix,
        campaignId=campaign_id,
    )


def expected_token(graph: Graph, campaign_id: str, notify: list[int], email: list[int]) -> str:
    """The digest computed independently from the seeded design: for every profile in ascending
    profileId its notify entry, then its email entry."""
    node = graph.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS c", id=campaign_id)[0]["c"]
    entries: list[str] = []
    for i in sorted(set(notify) | set(email)):
        pid = f"m{i:06d}"
        entries += [pid] if i in notify else []
        entries += [f"email\x1f{pid}\x1f{pid}@example.com"] if i in email else []
    return preview_token(
        campaign_id=campaign_id,
        created_at=node["createdAt"],
        revision=node["revision"],
        definition=node["definition"],
        profile_ids=entries,
    )


def test_preview_pages_the_audience_and_pins_the_same_recipients(graph: Graph) -> None:
    make_campaign(graph, "big", channels=["notify", "email"], email=EMAIL_COPY)
    create_members(graph, "big", MEMBERS)

    preview = preview_dispatch(
        graph, campaign_id="big", now=NOW, settings=DispatchSettings(adult_age=18, max_recipients=MEMBERS)
    )

    ids = range(MEMBERS)
    notify = [i for i in ids if i % 5 and i % 7]
    email = [i for i in ids if i % 3 == 0]  # dob and address; nobody claimed or opted out of email
    assert preview.audience_count == MEMBERS
    assert preview.already_notified_count == len([i for i in ids if i % 7 == 0])
    assert preview.notification_recipient_count == len(notify)
    assert preview.email_recipient_count == len(email)
    assert preview.recipient_count == len(set(notify) | set(email))
    assert preview.preview_token == expected_token(graph, "big", notify, email)
    with pytest.raises(BadRequest):  # the cap still holds when it is crossed on a later page
        preview_dispatch(
            graph,
            campaign_id="big",
            now=NOW,
            settings=DispatchSettings(adult_age=18, max_recipients=len(notify) - 1),
        )


@pytest.mark.parametrize("members", [2000, 0], ids=["real_memberships", "empty_graph"])
def test_preview_page_is_an_ordered_index_seek(graph: Graph, members: int) -> None:
    # Statistics of a database with real memberships, fresh, and no plan cached from an emptier graph
    # (on an empty one a scan of the whole index is as cheap as a seek, and a full test session had
    # cached exactly that plan before the seek was pinned by a hint). The statement runs with
    # replan=skip, so the plan an empty graph gets first is the one it keeps: a seek too.
    if members:
        create_members(graph, "c1", members)
        create_members(graph, "c2", members, prefix="n")
    assert "CYPHER replan=skip" in statement("dispatch_preview")
    graph.run("CALL db.prepareForReplanning()")
    graph.run("CALL db.clearQueryCaches()")
    plan = graph.driver.execute_query(
        "EXPLAIN " + statement("dispatch_preview"),
        {
            "campaignId": "c1",
            "cursor": "",
            "limit": 10,
            "notify": True,
            "email": True,
            **policy_params(NOW, 18),
        },
        database_=graph.database,
    ).summary.plan
    assert plan is not None
    ops = operators(plan)
    # The seek's operator name depends on what the planner knows (plain or ByRange seek); what matters
    # is that the page is a relationship index seek and nothing scans or sorts the audience.
    assert any("RelationshipIndexSeek" in op for op in ops), ops
    assert not any(op.endswith("Scan") for op in ops), ops
    assert "Sort" not in ops and "Top" not in ops, ops


def test_graph_sources_are_read_in_pages_and_count_every_profile(graph: Graph) -> None:
    make_campaign(graph, "everyone", channels=["inApp"])
    make_campaign(graph, "tagged", channels=["inApp"])
    create_members(graph, "nobody-yet", MEMBERS)  # no such campaign: profiles only
    graph.run(  # shared tags, keyed as profiles.upsert writes them (the tag page seeks the keys)
        "MERGE (t:Tag {slug: 'vip'}) WITH t MATCH (p:Profile) WHERE p.profileId ENDS WITH '1' "
        "CREATE (p)-[:HAS_TAG {slug: t.slug, profileId: p.profileId}]->(t)"
    )
    tagged = len([i for i in range(MEMBERS) if i % 10 == 1])
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    every, vip = AllSource(type="all"), TagSource(type="tag", slug="vip")
    counting = CountingGraph(graph)

    assert (
        audience.preview_audience(graph, campaign_id="everyone", source=every, policy=policy).count == MEMBERS
    )
    added = audience.add_audience(counting, campaign_id="everyone", source=every, policy=policy)
    assert (added.count, added.added) == (MEMBERS, MEMBERS)
    assert counting.writes == -(-MEMBERS // CHUNK)  # one bounded transaction per page
    assert audience.add_audience(graph, campaign_id="tagged", source=vip, policy=policy).added == tagged
    removed = audience.remove_audience(graph, campaign_id="everyone", source=every, policy=policy)
    assert removed.removed == MEMBERS
    assert graph.run("MATCH ()-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign) RETURN c.id AS id, count(m) AS n") == [
        {"id": "tagged", "n": tagged}
    ]


def test_every_profile_page_walks_the_profile_index_in_order(graph: Graph) -> None:
    plan = graph.driver.execute_query(
        "EXPLAIN MATCH (p:Profile) WHERE p.profileId > $cursor WITH p.profileId AS profileId "
        "ORDER BY profileId LIMIT $limit RETURN collect(profileId) AS profileIds",
        {"cursor": "", "limit": 10},
        database_=graph.database,
    ).summary.plan
    assert plan is not None
    ops = operators(plan)
    assert any(op.startswith("NodeUniqueIndexSeekByRange") or op == "NodeIndexSeekByRange" for op in ops), ops
    assert "Sort" not in ops and "Top" not in ops, ops


def test_delete_retires_at_once_and_reaps_in_bounded_transactions(graph: Graph) -> None:
    created = make_campaign(graph, "big")
    create_members(graph, "big", MEMBERS)
    graph.run(
        "MATCH (c:Campaign {id: 'big'}) CREATE (:Dispatch {id: 'd1', status: 'sending'})-[:DISPATCH_OF]->(c) "
        "WITH c MATCH (p:Profile {profileId: 'm000001'}) CREATE (p)-[:CAMPAIGN_TEST {testId: 't'}]->(c)"
    )
    relationships = graph.run("MATCH (:Campaign {id: 'big'})-[r]-() RETURN count(r) AS n")[0]["n"]

    deletion.retire_campaign(graph, campaign_id="big")  # what a crash right after retirement leaves

    with pytest.raises(NotFound):
        definitions.get_campaign(graph, "big")
    assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0
    make_campaign(graph, "big", now=datetime(2026, 3, 2, tzinfo=UTC))  # the id is free at once
    assert definitions.get_campaign(graph, "big").created_at != created
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    page = audience.get_audience(graph, campaign_id="big", cursor=None, limit=10, policy=policy)
    assert page.records == []  # the old incarnation's memberships are not the new one's
    assert (
        preview_dispatch(
            graph, campaign_id="big", now=NOW, settings=DispatchSettings(adult_age=18, max_recipients=10)
        ).audience_count
        == 0
    )

    counting = CountingGraph(graph)
    removed = deletion.reap_deleted_campaigns(counting, batch=1000)

    assert removed == relationships - 1  # the Dispatch went with the retirement
    assert counting.writes >= removed // 1000
    assert graph.run("MATCH (t:DeletedCampaign) RETURN count(t) AS n")[0]["n"] == 0
    assert graph.run("MATCH (c:Campaign {id: 'big'})-[r]-() RETURN count(r) AS n")[0]["n"] == 0
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == MEMBERS  # profiles stay


def test_concurrent_reapers_and_deletes_leave_nothing_behind(graph: Graph) -> None:
    for campaign_id in ("a", "b"):
        make_campaign(graph, campaign_id)
        create_members(graph, campaign_id, 3000, prefix=campaign_id)
    deletion.retire_campaign(graph, campaign_id="a")

    at_once(
        lambda job: job(),
        [
            (lambda: deletion.reap_deleted_campaigns(graph, batch=500),),
            (lambda: deletion.reap_deleted_campaigns(graph, batch=700),),
            (lambda: deletion.delete_campaign(graph, campaign_id="b"),),
        ],
    )

    assert graph.run("MATCH (c) WHERE c:Campaign OR c:DeletedCampaign RETURN count(c) AS n")[0]["n"] == 0
    assert (
        graph.run("MATCH (:Profile)-[r]->() WHERE NOT r:HAS_CONTACT_METHOD RETURN count(r) AS n")[0]["n"] == 0
    )


def test_a_writer_waiting_on_the_lock_of_a_campaign_being_deleted_finds_it_gone(graph: Graph) -> None:
    make_campaign(graph, "c1")
    found: list[Any] = []
    with graph.driver.session(database=graph.database) as session:
        deleting = session.begin_transaction()
        deleting.run(
            "MATCH (c:Campaign {id: 'c1'}) SET c.campaignStateLock = c.campaignStateLock + 1"
        ).consume()
        waiter = threading.Thread(target=lambda: found.append(graph.write(lock_campaign, "c1")))
        waiter.start()
        waiter.join(timeout=1)
        assert waiter.is_alive()  # blocked on the campaign lock
        deleting.run("MATCH (c:Campaign {id: 'c1'}) REMOVE c:Campaign SET c:DeletedCampaign").consume()
        deleting.commit()
        waiter.join(timeout=30)
    assert found == [None]
