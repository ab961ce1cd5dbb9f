"""Every app call's statements keep the plan they get first: ``getMyCampaigns``' reads, ``recordEvent``'s
write and the rate limit's count run with ``replan=skip``. Their plans seek unique keys, which no
statistic can improve, while a replan under load stalled every call of a process behind its compile
(a batch waits for the statement, and the next batch for it). The plan each gets first, even on an
empty graph as here, must already be the seek: where the planner could start from the campaigns
instead (on no statistics it did, two runs in three), an index hint pins the profile."""

from __future__ import annotations

import pytest

from campaign_engine.campaigns.engagement import events, guardian_cards
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from tests.support.plans import operators

# Each statement as the code fills it, with the unique-key seeks its plan must open with.
_HOT = {
    "my_campaigns": (statement("my_campaigns"), "NodeUniqueIndexSeek"),
    "my_guardian_campaigns": (guardian_cards._statement("my_guardian_campaigns"), "NodeUniqueIndexSeek"),
    "my_tests_of": (statement("my_tests_of"), "NodeUniqueIndexSeek"),
    "live_segment_campaigns": (statement("live_segment_campaigns"), "NodeUniqueIndexSeek"),
    "record_event": (events._record_query("shown"), "NodeUniqueIndexSeek"),
    "rate_limit_hit": (statement("rate_limit_hit"), "NodeUniqueIndexSeek"),
}


@pytest.mark.parametrize("name", sorted(_HOT))
def test_app_statements_seek_unique_keys_and_never_replan(graph: Graph, name: str) -> None:
    text, seek = _HOT[name]
    plan = graph.driver.execute_query("EXPLAIN " + text, database_=graph.database).summary.plan
    ops = operators(plan)
    assert "CYPHER replan=skip" in text
    assert any(op.startswith(seek) for op in ops), f"{name}: {ops}"
    assert not any("Scan" in op for op in ops), ops
