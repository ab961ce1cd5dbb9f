"""Every app call's statements keep the plan they get first: ``getMyCampaigns``' reads, ``recordEvent``'s
write and the rate limit's count run with ``replan=skip``. Their plans seek unique keys, which no
statistic can improve, while a replan under load stalled every call of a process behind its compile
(a batch waits for the statement, and the next batch for it). The plan each gets first, even on an
empty graph as here, must already be the seek: where the planner could start from the campaigns
instead (on no statistics it did, two runs in three), an index hint pins the profile."""

from __future__ import annotations

import pytest

from campaign_engine.campaigns.engagement import cards, events
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from tests.support.plans import operators

# Each statement as the code fills it, with how many unique-key seeks its plan must make: getMyCampaigns'
# read opens each of its four parts (members, guardians, tests, segment campaigns) at the caller's profile.
_HOT = {
    "my_campaigns": (cards._read(), 4),
    "record_event": (events._record_query("shown"), 1),
    "rate_limit_hit": (statement("rate_limit_hit"), 1),
}


@pytest.mark.parametrize("name", sorted(_HOT))
def test_app_statements_seek_unique_keys_and_never_replan(graph: Graph, name: str) -> None:
    text, seeks = _HOT[name]
    plan = graph.driver.execute_query("EXPLAIN " + text, database_=graph.database).summary.plan
    ops = operators(plan)
    assert "CYPHER replan=skip" in text
    assert sum(op.startswith("NodeUniqueIndexSeek") for op in ops) >= seeks, f"{name}: {ops}"
    assert not any("Scan" in op for op in ops), ops
