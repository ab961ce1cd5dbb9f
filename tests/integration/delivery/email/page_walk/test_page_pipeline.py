"""The email page walk's pipeline within one job: pages back to back, a page recorded while the page
after next is claimed, a throttle releasing the page claimed ahead, and a claim that does not commit
never sent.

Real Neo4j, the real worker and the loopback Postmark stand-in."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_tx import ClaimedPage
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph, PendingWrite, Tx
from campaign_engine.wiring import Queues, build_email_worker
from tests.support.concurrency import wait_for
from tests.support.delivery import StepClock, start_dispatch
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    claimed,
    emailed,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin


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
