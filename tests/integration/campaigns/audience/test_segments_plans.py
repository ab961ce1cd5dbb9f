"""Live segments' query plans, against real Neo4j: each arm seeks an index and never scans profiles, a
small segment reads only its candidates, and a tag segment's page reads its own rows."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.graph.graph import Graph
from tests.support.delivery import (
    make_campaign,
)
from tests.support.plans import operators
from tests.support.segments import (
    _plan_statement,
    _profiles,
    _segmented,
    _tag,
)


@pytest.mark.parametrize(
    ("segment", "seek"),
    [
        ({"tag": "beta"}, "RelationshipIndexSeek"),
        ({"all": [{"locale": "fr"}, {"timeZone": "UTC", "not": True}]}, "NodeIndexSeekByRange"),
        ({"timeZone": "UTC"}, "NodeIndexSeek"),
        ({"memberOf": "launch"}, "RelationshipIndexSeek"),
        ({"engaged": {"campaignId": "launch", "event": "clicked"}}, "NodeUniqueIndexSeek"),
    ],
)
def test_each_arm_seeks_an_index_and_never_scans_profiles(
    graph: Graph, segment: dict[str, Any], seek: str
) -> None:
    make_campaign(graph, "launch", channels=["inApp"])
    _segmented(graph, "c1", segment)
    text, params = _plan_statement(graph, "c1")
    plan = graph.driver.execute_query("EXPLAIN " + text, params, database_=graph.database).summary.plan
    ops = operators(plan)
    assert sum("RelationshipIndexSeek" in op for op in ops) >= 1, ops  # the static members
    assert any(seek in op for op in ops), ops
    assert not any("Scan" in op for op in ops), ops


def test_a_small_segment_among_many_profiles_reads_only_its_candidates(graph: Graph) -> None:
    many = [f"p{i:05d}" for i in range(5000)]
    graph.run(
        "UNWIND $ids AS id CREATE (:Profile {profileId: id, tenants: ['default'], timeZone: 'UTC'})", ids=many
    )
    _tag(graph, many[::250], "rare")  # 20 of 5,000
    _segmented(graph, "c1", {"tag": "rare"})
    text, params = _plan_statement(graph, "c1")
    summary = graph.driver.execute_query("PROFILE " + text, params, database_=graph.database).summary
    hits = _db_hits(summary.profile)
    assert hits < 1_000, hits  # all profiles would be > 5,000 on the profile index alone
    row = graph.driver.execute_query(text, params, database_=graph.database).records[0]
    assert row["read"] == 20


def _db_hits(plan: dict[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(child) for child in plan.get("children", []))


def test_a_tag_segment_page_reads_its_own_rows_whatever_the_segment(graph: Graph) -> None:
    """A tag seek keysets on tag_member (slug, profileId): the page after a cursor deep in a segment of
    4,000 reads about as much as the first page of a segment of 400, not the whole tag each time."""

    def page_hits(campaign_id: str, slug: str, count: int, cursor: str) -> int:
        ids = [f"{slug}{i:05d}" for i in range(count)]
        _profiles(graph, ids)
        _tag(graph, ids, slug)
        _segmented(graph, campaign_id, {"tag": slug})
        text, params = _plan_statement(graph, campaign_id)
        params |= {"cursor": cursor, "limit": 50}
        summary = graph.driver.execute_query("PROFILE " + text, params, database_=graph.database).summary
        return _db_hits(summary.profile)

    small = page_hits("c1", "small", 400, "")
    deep = page_hits("c2", "large", 4000, "large03000")
    assert deep < 2 * small, (deep, small)  # a top-n over the tag would read 4,000 links and more
