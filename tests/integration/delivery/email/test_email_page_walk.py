"""The email page walk's shape: it seeks the campaign's membership, reads only
members, moves the cursor over every member it read, and pipelines pages within one job.

Real Neo4j, the real worker and the loopback Postmark stand-in.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_tx import ClaimedPage
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.frequency_cap import email_page_query
from campaign_engine.delivery.readiness import readiness_params
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.frequency_cap import cap_params
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, PendingWrite, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import Queues, build_email_worker, build_worker
from tests.support.concurrency import wait_for
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import (
    UNSUBSCRIBE_SECRET,
    accepted_to,
    add_email_members,
    address_of,
    claimed,
    email_settings,
    emailed,
    make_email_campaign,
)
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

_PROFILE_READS = ("NodeByLabelScan", "NodeIndexSeek", "NodeIndexScan", "NodeUniqueIndexSeek", "AllNodesScan")


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


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
    _run(settings.model_copy(update={"campaign_email_page_size": 10}), graph, queues)
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
    _run(settings.model_copy(update={"campaign_email_page_size": 7}), graph, queues)
    assert accepted_to(postmark) == sorted(address_of(p) for p in rare[3:])


def test_a_page_of_ineligible_members_moves_the_cursor_past_them(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["o1", "o2", "o3"], announcementEmailOptOut=True)
    add_email_members(graph, "c1", ["p1"])
    start_dispatch(graph, queues.dispatch, max_recipients=100)
    _run(settings.model_copy(update={"campaign_email_page_size": 2}), graph, queues)
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
    _run(small, graph, queues)
    first = ids()
    assert (first["p0"], first["p3"]) == ("kept-p0", "kept-p3")
    assert all(first.values()) and len(set(first.values())) == len(members), first
    assert linked() == first
    postmark.reset()
    start_dispatch(graph, queues.dispatch, "c2")
    _run(small, graph, queues)
    assert ids() == first
    assert linked() == first


def _run(settings: Settings, graph: Graph, queues: Queues) -> None:
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()


def _walking_worker(settings: Settings, graph: Graph, queues: Queues, members: list[str]) -> EmailWorker:
    """A dispatch of campaign c1 to ``members`` and an email worker that walks on in pages of 10."""
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    start_dispatch(graph, queues.dispatch, max_recipients=1000)
    settings = settings.model_copy(update={"campaign_email_page_size": 10, "campaign_email_run_seconds": 30})
    worker = build_email_worker(settings, graph, queues, clock=StepClock())
    assert worker is not None
    return worker


def _first_job(queues: Queues) -> PageJob:
    [message] = queues.dispatch.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    return job


def test_one_job_walks_pages_back_to_back_and_emails_each_member_once(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    members = [f"p{i:03d}" for i in range(95)]
    worker = _walking_worker(settings, graph, queues, members)
    try:
        outcome = worker.handle_page(_first_job(queues))
    finally:
        worker.close()
    assert (outcome.outcome, outcome.pages, outcome.emailed) == ("completed", 10, 95)
    assert postmark.batch_calls == 10
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)
    assert queues.dispatch.receive(max_messages=10) == []  # no successor job: the run walked on itself
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.pages, record.cursor) == ("completed", 95, 10, "p094")


def test_a_page_is_recorded_while_the_walk_claims_the_page_after_next(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    """Page 1's record + CAS runs on its own connection while the walk claims page 3; that claim reads
    the Dispatch before page 1's CAS commits, so it must accept page 1's cursor as this walk's own.
    The test holds the Dispatch's write lock, so page 1's CAS waits: page 3 is claimed meanwhile only if
    both hold (an inline record would block the walk; the strict cursor gate would skip the claim)."""
    members = [f"p{i:03d}" for i in range(35)]
    worker = _walking_worker(settings, graph, queues, members)
    job = _first_job(queues)
    with graph.driver.session() as session, ThreadPoolExecutor(max_workers=1) as walker:
        holder = session.begin_transaction()
        holder.run(
            "MATCH (d:Dispatch {id: $id}) SET d.casLock = coalesce(d.casLock, 0) + 1", id=job.dispatch_id
        )
        try:
            walking = walker.submit(worker.handle_page, job)
            deadline = time.monotonic() + 30
            while set(members[20:30]) - set(claimed(graph, "c1")):
                assert time.monotonic() < deadline, "page 3 was not claimed while page 1's CAS waited"
                assert not walking.done(), walking.result()
                time.sleep(0.05)
            [record] = list_dispatches(graph, "c1")
            assert (record.cursor, record.pages) == (None, 0)  # page 1's CAS is still waiting
        finally:
            holder.rollback()
        outcome = walking.result(timeout=60)
    worker.close()
    assert (outcome.outcome, outcome.pages, outcome.emailed) == ("completed", 4, 35)
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # each exactly once
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.pages, record.cursor) == ("completed", 35, 4, "p034")


def test_a_throttle_inside_a_run_releases_the_page_claimed_ahead_and_still_emails_everyone_once(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    members = [f"p{i:03d}" for i in range(50)]
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    start_dispatch(graph, queues.dispatch, max_recipients=1000)
    settings = settings.model_copy(update={"campaign_email_page_size": 10, "campaign_email_run_seconds": 30})
    postmark.pass_next(2)
    postmark.throttle_next(1, retry_after="0")  # the third page's batch
    worker = build_email_worker(settings, graph, queues, clock=StepClock())
    assert worker is not None
    try:
        outcome = worker.handle_page(_first_job(queues))
        assert (outcome.outcome, outcome.emailed, outcome.throttled) == ("throttled", 20, 10)
        # The fourth page was claimed while the third was with the provider; it was never sent, and
        # its claims are released: only the first two pages are claimed now.
        assert claimed(graph, "c1") == members[:20] == emailed(graph, "c1")
        [record] = list_dispatches(graph, "c1")
        assert (record.cursor, record.status) == ("p019", "sending")
        assert worker.handle_page(_first_job(queues)).outcome == "completed"
    finally:
        worker.close()
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # each exactly once
    assert postmark.batch_calls == 2 + 1 + 3


@pytest.fixture
def forty_five(settings: Settings, graph: Graph, queues: Queues) -> tuple[list[str], EmailWorker]:
    """45 members and a worker that walks them in pages of 10 (the fifth page is short)."""
    members = [f"p{i:03d}" for i in range(45)]
    return members, _walking_worker(settings, graph, queues, members)


def test_a_claim_commits_while_the_walk_claims_the_page_after_it(
    forty_five: tuple[list[str], EmailWorker],
    queues: Queues,
    postmark: PostmarkStandin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page claimed ahead commits on the committer thread while the walk claims the next page: the
    commit (~40% of a claim) is off the walk's serial chain. Pages 2's and 3's commits are held until
    the page after each is claimed: that happens only if the walk does not wait for the commit, and only
    if the open claim's locks (its profiles, the campaign it links them to) do not stop the next claim
    (a walk that waits times the hold out, and the order below fails)."""
    members, worker = forty_five
    events: list[tuple[str, str | None]] = []
    commit = PendingWrite.commit
    held_until = {"p019": "p029", "p029": "p039"}

    def held_commit(self: PendingWrite[ClaimedPage]) -> None:
        events.append(("commit started", self.result.last))
        after = held_until.get(str(self.result.last))
        if after is not None:
            with contextlib.suppress(AssertionError):  # timed out: the order assertions below say why
                wait_for(f"the claim of {after}", lambda: ("claimed", after) in events, timeout=20)
        commit(self)
        events.append(("commit ended", self.result.last))

    claim = worker._tx.claim

    def noted_claim(tx: Tx, job: PageJob, **kwargs: Any) -> ClaimedPage:
        page = claim(tx, job, **kwargs)
        events.append(("claimed", page.last))
        return page

    monkeypatch.setattr(PendingWrite, "commit", held_commit)
    monkeypatch.setattr(worker._tx, "claim", noted_claim)
    try:
        outcome = worker.handle_page(_first_job(queues))
    finally:
        worker.close()
    assert (outcome.outcome, outcome.pages, outcome.emailed) == ("completed", 5, 45)
    for page_end, next_end in (("p019", "p029"), ("p029", "p039")):
        started = events.index(("commit started", page_end))
        assert events.index(("claimed", next_end)) < events.index(("commit ended", page_end)), events
        assert started < events.index(("claimed", next_end)), events
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # each exactly once


def test_a_claim_that_does_not_commit_is_never_sent_and_the_page_claimed_after_it_is_rolled_back(
    forty_five: tuple[list[str], EmailWorker],
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Page 3's claim transaction is terminated by the server before its commit, as a kill or a
    timeout would: its commit fails while the walk has already claimed page 4. Page 3 must not be sent
    (it holds no durable claim), page 4 must be rolled back (committed, its recipients would be
    claimed but never sent, and skipped for ever), and the successor job takes both, once."""
    members, worker = forty_five
    claim = worker._tx.claim

    def claim_terminated_on_page_3(tx: Tx, job: PageJob, **kwargs: Any) -> ClaimedPage:
        page = claim(tx, job, **kwargs)
        if kwargs["after"] == "p019":
            [mine] = tx.run(
                "SHOW TRANSACTIONS YIELD transactionId, currentQuery "
                "WHERE currentQuery STARTS WITH 'SHOW TRANSACTIONS' RETURN transactionId"
            ).value()
            with graph.driver.session() as session:
                session.run("TERMINATE TRANSACTION $id", id=mine).consume()
        return page

    monkeypatch.setattr(worker._tx, "claim", claim_terminated_on_page_3)
    try:
        outcome = worker.handle_page(_first_job(queues))
        assert (outcome.outcome, outcome.emailed) == ("next", 20)
        assert claimed(graph, "c1") == members[:20] == emailed(graph, "c1")  # pages 3 and 4: no claim
        assert accepted_to(postmark) == sorted(address_of(p) for p in members[:20])
        [record] = list_dispatches(graph, "c1")
        assert (record.cursor, record.status) == ("p019", "sending")
        monkeypatch.setattr(worker._tx, "claim", claim)
        assert worker.handle_page(_first_job(queues)).outcome == "completed"  # the successor job
    finally:
        worker.close()
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)  # each exactly once
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.cursor) == ("completed", 45, "p044")
