"""What getMyCampaigns' reads cost, planned against the real Neo4j: a call pays for the caller's
memberships and for the live campaigns with a segment, never for every live campaign of the deployment."""

from __future__ import annotations

from typing import Any

from campaign_engine.campaigns.engagement import cards
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from tests.support.delivery import NOW


def _db_hits(node: Any) -> int:
    return int(node.get("dbHits", 0)) + sum(_db_hits(child) for child in node.get("children", []))


def test_the_live_segment_read_touches_only_the_campaigns_with_a_segment(graph: Graph) -> None:
    """200 live in-app campaigns without a segment beside one with: the read finds the one and costs
    about what it costs beside none (before its index it read all 201 on every call)."""
    graph.run(
        "CREATE (:Profile {profileId: 'p1', tenants: ['default']})"
        " WITH 1 AS one UNWIND range(0, 200) AS i"
        " CREATE (:Campaign {id: 'c' + i, tenantId: 'default', status: 'live', hasInAppMessage: true,"
        " hasSegment: i = 200, updatedAt: '2026-01-01T00:00:00Z', definition: '{}'})"
    )
    with graph.driver.session() as session:
        policy = Policy(now=NOW, adult_age=18, domain="x")
        summary = session.run(
            "PROFILE " + cards._read(), profileIds=["p1"], now=format_ts(NOW), **policy.params()
        )
        rows = [campaign["id"] for record in summary for campaign in record["segmentCampaigns"]]
        profile = summary.consume().profile
    assert rows == ["c200"]
    assert profile is not None and _db_hits(profile) < 60, _db_hits(profile)
