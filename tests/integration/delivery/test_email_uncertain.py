"""Claims abandoned between claim and record are counted ``uncertain`` and listed.

A claim is written as the claim transaction writes it and then left alone, as a worker killed before
its provider call leaves it (``test_email_faults.py`` kills a real worker process for the same end).
Real Neo4j, the real sweeper, the API over the tRPC wire, the loopback Postmark stand-in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.provider import OutgoingEmail, SendResult
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    email_settings,
    email_states,
    make_email_campaign,
)
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

HORIZON = 600


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(
        base_settings, postmark.url, postmark.token, campaign_email_uncertain_after_seconds=HORIZON
    )


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _abandon_claims(graph: Graph, dispatch_id: str, profile_ids: list[str]) -> None:
    """What the claim transaction commits before the provider call; nothing ever records an outcome."""
    graph.run(
        """
        MATCH (c:Campaign {id: 'c1'})
        UNWIND $ids AS id
        MATCH (p:Profile {profileId: id})
        CREATE (p)-[:CAMPAIGN_STATE {emailClaimedAt: $now, emailClaimId: 'dead-worker',
                                     emailDispatchId: $dispatchId, emailOutcome: 'claimed'}]->(c)
        """,
        ids=profile_ids,
        now=format_ts(NOW),
        dispatchId=dispatch_id,
    )


def test_an_abandoned_claim_is_counted_uncertain_once_listed_and_never_sent(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3", "p4", "p5"])
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
    _abandon_claims(graph, dispatch_id, ["p1", "p2", "p3"])
    clock = StepClock(NOW + timedelta(seconds=HORIZON - 1))
    assert run_sweep(settings, graph, queues.dispatch, clock=clock).abandoned == {}  # not yet past it

    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert accepted_to(postmark) == [address_of("p4"), address_of("p5")]  # the claimed are never sent

    clock.now = NOW + timedelta(seconds=HORIZON + 1)
    assert run_sweep(settings, graph, queues.dispatch, clock=clock).abandoned == {dispatch_id: 3}
    assert run_sweep(settings, graph, queues.dispatch, clock=clock).abandoned == {}  # counted once
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.uncertain) == ("completed", 2, 3)
    assert "claim_abandoned" in str(record.last_error)
    states = email_states(graph, "c1")
    assert {states[p]["emailOutcome"] for p in ("p1", "p2", "p3")} == {"uncertain"}
    assert states["p1"]["emailClaimedAt"]  # the claim stays: never retried blindly

    with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
        first = ok(
            api.query(
                "campaigns.listUncertainEmails",
                {"dispatchId": dispatch_id, "limit": 2},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        assert [item["profileId"] for item in first["items"]] == ["p1", "p2"]
        assert first["items"][0]["reason"] == "claim_abandoned" and first["nextAfter"] == "p2"
        rest = ok(
            api.query(
                "campaigns.listUncertainEmails",
                {"dispatchId": dispatch_id, "after": "p2", "limit": 2},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        assert [item["profileId"] for item in rest["items"]] == ["p3"] and rest["nextAfter"] is None
        missing = api.query("campaigns.listUncertainEmails", {"dispatchId": "nope"}, as_=ADMIN_ID, admin=True)
        assert error_code(missing) == "NOT_FOUND"
        denied = api.query("campaigns.listUncertainEmails", {"dispatchId": dispatch_id}, as_="someone")
        assert error_code(denied) in ("FORBIDDEN", "UNAUTHORIZED")
    assert accepted_to(postmark) == [address_of("p4"), address_of("p5")]


class _OutlastsTheHorizon:
    """A provider call slower than the horizon (a fake at the port): the sweep runs while it is in
    flight and counts the claim uncertain; then the provider accepts."""

    name = "slow"

    def __init__(self, during_send: Callable[[], None]) -> None:
        self.during_send = during_send

    def verify(self) -> None:
        pass

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        self.during_send()
        return [SendResult(m.key, "accepted", provider_message_id=f"m-{m.key}") for m in messages]

    def close(self) -> None:
        pass


def test_a_late_outcome_replaces_the_uncertain_count_so_each_recipient_counts_once(
    settings: Settings, graph: Graph, queues: Queues
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
    clock = StepClock()
    swept: list[dict[str, int]] = []

    def sweep_past_the_horizon() -> None:
        clock.now = NOW + timedelta(seconds=HORIZON + 1)
        swept.append(run_sweep(settings, graph, queues.dispatch, clock=clock).abandoned)

    worker = build_worker(
        settings,
        graph,
        queues=queues,
        clock=clock,
        sweep_every=None,
        email_provider=_OutlastsTheHorizon(sweep_past_the_horizon),
    )
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert swept == [{dispatch_id: 2}]
    states = email_states(graph, "c1")
    assert {s["emailOutcome"] for s in states.values()} == {"accepted"}
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.uncertain) == ("completed", 2, 0)


def test_the_sweep_and_the_listing_seek_the_email_outcome_index(graph: Graph) -> None:
    """Both run against every campaign's states: an index seek, never a scan of CAMPAIGN_STATE."""
    with graph.driver.session(database=graph.database) as session:
        sweep = session.run(
            "EXPLAIN " + statement("email_abandoned"), before="x", now="x", limit=10
        ).consume()
        listing = session.run(
            "EXPLAIN " + statement("uncertain_emails_list"), dispatchId="d", after="", limit=10
        ).consume()
    for summary in (sweep, listing):
        assert summary.plan is not None
        ops = operators(summary.plan)
        assert any("RelationshipIndexSeek" in op for op in ops), ops
        assert not any("RelationshipTypeScan" in op or "AllNodesScan" in op for op in ops), ops
