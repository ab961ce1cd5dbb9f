"""Audience sources, preview/add/remove/page on real Neo4j, through the API and with real threads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.audience import members as audience
from campaign_engine.campaigns.profiles import records as profiles
from campaign_engine.config import Settings
from campaign_engine.domain.audience import DidsSource, did_web_for
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.concurrency import at_once
from tests.support.plans import operators

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DOMAIN = "campaigns.test"


def clock() -> datetime:
    return NOW


def seed_profiles(graph: Graph, rows: list[dict[str, Any]]) -> None:
    profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}), tenant_id="default")


def seed_campaign(graph: Graph, campaign_id: str = "c1", **fields: Any) -> None:
    data = {"id": campaign_id, "name": "Hello", "channels": ["inApp"], "message": {"title": "Hi"}, **fields}
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=NOW)


def policy() -> Policy:
    return Policy(now=NOW, adult_age=18, domain=DOMAIN)


def test_dids_match_by_stored_did_or_did_web_alias_and_count_once(
    base_settings: Settings, graph: Graph
) -> None:
    seed_profiles(graph, [{"profileId": "p1", "did": "did:plc:one"}, {"profileId": "p2"}])
    seed_campaign(graph)
    source = {
        "type": "dids",
        "dids": ["did:plc:one", did_web_for("p1", DOMAIN), did_web_for("p2", DOMAIN), "did:plc:nobody"],
    }
    with api_client(base_settings, graph, clock=clock) as api:
        preview = ok(
            api.mutate(
                "campaigns.previewAudience", {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True
            )
        )
        assert preview == {"count": 2, "added": 0, "notFound": ["did:plc:nobody"]}
        assert graph.run("MATCH ()-[m:IN_CAMPAIGN_AUDIENCE]->() RETURN count(m) AS n")[0]["n"] == 0
        added = ok(
            api.mutate(
                "campaigns.addAudience", {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True
            )
        )
        assert added == {"count": 2, "added": 2, "notFound": ["did:plc:nobody"]}
        again = ok(
            api.mutate(
                "campaigns.addAudience", {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True
            )
        )
        assert again["added"] == 0 and again["count"] == 2
    rels = graph.run(
        "MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->() RETURN p.profileId AS id, m {.*} AS m ORDER BY id"
    )
    assert [r["id"] for r in rels] == ["p1", "p2"]
    assert rels[0]["m"]["source"] == "dids" and rels[0]["m"]["selfEnrolled"] is False
    assert rels[0]["m"]["addedAt"] == "2026-03-01T12:00:00.000000Z"


def test_age_excluded_profiles_are_not_not_found(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(
        graph,
        [
            {"profileId": "adult", "dob": "2000-01-01"},
            {"profileId": "minor", "dob": "2015-01-01"},
            {"profileId": "managed-unknown", "isManaged": True},
            {"profileId": "unknown"},
        ],
    )
    seed_campaign(graph)
    source = {"type": "profileIds", "profileIds": ["adult", "minor", "managed-unknown", "unknown", "ghost"]}
    with api_client(base_settings, graph, clock=clock) as api:
        result = ok(
            api.mutate(
                "campaigns.addAudience", {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True
            )
        )
    assert result == {"count": 2, "added": 2, "notFound": ["ghost"]}
    ids = {r["id"] for r in graph.run("MATCH (p)-[:IN_CAMPAIGN_AUDIENCE]->() RETURN p.profileId AS id")}
    assert ids == {"adult", "unknown"}


def test_exclude_minors_false_has_no_age_filter(graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "minor", "dob": "2015-01-01"}, {"profileId": "m", "isManaged": True}])
    seed_campaign(graph, excludeMinors=False)
    src = audience.ProfileIdsSource.model_validate({"type": "profileIds", "profileIds": ["minor", "m"]})
    assert audience.add_audience(graph, campaign_id="c1", source=src, policy=policy()).added == 2


def test_tag_connections_and_all_sources(graph: Graph) -> None:
    seed_profiles(
        graph,
        [
            {"profileId": "a", "tags": ["vip"], "connections": ["b", "c"]},
            {"profileId": "b", "tags": ["vip"]},
            {"profileId": "c"},
            {"profileId": "d", "dob": "2015-05-05", "tags": ["vip"]},
        ],
    )
    seed_campaign(graph)

    def preview(raw: dict[str, Any]) -> tuple[int, list[str]]:
        from pydantic import TypeAdapter

        from campaign_engine.domain.audience import AudienceSource

        src = TypeAdapter(AudienceSource).validate_python(raw)
        result = audience.preview_audience(graph, campaign_id="c1", source=src, policy=policy())
        return result.count, result.not_found

    assert preview({"type": "tag", "slug": "vip"}) == (2, [])  # d is a minor
    assert preview({"type": "tag", "slug": "nope"}) == (0, ["nope"])
    assert preview({"type": "connections", "profileId": "a"}) == (2, [])
    assert preview({"type": "connections", "profileId": "zz"}) == (0, ["zz"])
    assert preview({"type": "all"}) == (3, [])


def test_source_lists_are_capped_at_10000(base_settings: Settings, graph: Graph) -> None:
    seed_campaign(graph)
    source = {"type": "profileIds", "profileIds": [f"p{i}" for i in range(10_001)]}
    with api_client(base_settings, graph, clock=clock) as api:
        response = api.mutate(
            "campaigns.addAudience", {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True
        )
    assert error_code(response) == "BAD_REQUEST"


def test_archived_campaign_rejects_audience_edits(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "p1"}])
    seed_campaign(graph)
    definitions.set_status(graph, campaign_id="c1", status="archived", now=NOW)
    source = {"type": "profileIds", "profileIds": ["p1"]}
    with api_client(base_settings, graph, clock=clock) as api:
        for proc in ("campaigns.addAudience", "campaigns.removeAudience"):
            response = api.mutate(proc, {"campaignId": "c1", "source": source}, as_=ADMIN_ID, admin=True)
            assert error_code(response) == "BAD_REQUEST", proc
        missing = api.mutate(
            "campaigns.addAudience", {"campaignId": "zz", "source": source}, as_=ADMIN_ID, admin=True
        )
        assert error_code(missing) == "NOT_FOUND"
        user = api.mutate("campaigns.addAudience", {"campaignId": "c1", "source": source}, as_="p1")
        assert error_code(user) == "FORBIDDEN"


def test_remove_audience(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(graph, [{"profileId": "p1"}, {"profileId": "p2"}, {"profileId": "p3"}])
    seed_campaign(graph)
    with api_client(base_settings, graph, clock=clock) as api:
        ok(
            api.mutate(
                "campaigns.addAudience",
                {"campaignId": "c1", "source": {"type": "all"}},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        removed = ok(
            api.mutate(
                "campaigns.removeAudience",
                {"campaignId": "c1", "source": {"type": "profileIds", "profileIds": ["p1", "p9"]}},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        assert removed == {"removed": 1}
        page = ok(api.query("campaigns.getAudience", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    assert [r["profileId"] for r in page["records"]] == ["p2", "p3"]


def test_get_audience_keyset_pages_and_reapplies_the_policy(base_settings: Settings, graph: Graph) -> None:
    seed_profiles(
        graph, [{"profileId": f"p{i:02d}", "did": f"did:plc:{i:02d}", "dob": "2000-01-01"} for i in range(7)]
    )
    seed_campaign(graph)
    with api_client(base_settings, graph, clock=clock) as api:
        ok(
            api.mutate(
                "campaigns.addAudience",
                {"campaignId": "c1", "source": {"type": "all"}},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        # p03's dob changes after it was added: paging must apply the policy again.
        graph.run("MATCH (p:Profile {profileId: 'p03'}) SET p.dob = '2016-01-01'")
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            data: dict[str, Any] = {"campaignId": "c1", "limit": 2}
            if cursor:
                data["cursor"] = cursor
            page = ok(api.query("campaigns.getAudience", data, as_=ADMIN_ID, admin=True))
            seen += [r["profileId"] for r in page["records"]]
            pages += 1
            if not page["hasMore"]:
                assert page["cursor"] is None
                break
            cursor = page["cursor"]
        too_big = api.query(
            "campaigns.getAudience", {"campaignId": "c1", "limit": 501}, as_=ADMIN_ID, admin=True
        )
        assert error_code(too_big) == "BAD_REQUEST"
    assert seen == ["p00", "p01", "p02", "p04", "p05", "p06"]
    assert pages == 3
    assert page["records"][-1] == {"profileId": "p06", "did": "did:plc:06", "member": True}


def test_get_audience_page_seeks_and_orders_by_the_membership_index(graph: Graph) -> None:
    plan = graph.driver.execute_query(
        "EXPLAIN " + statement("audience_page"),
        {"campaignId": "c1", "cursor": "", "limit": 10, **policy().params()},
        database_=graph.database,
    ).summary.plan
    ops = operators(plan)
    assert "DirectedRelationshipIndexSeek" in ops, ops
    assert "Sort" not in ops and "Top" not in ops, ops  # the page is read in index order, then LIMIT


def test_concurrent_add_audience_retries_count_each_membership_once(graph: Graph) -> None:
    ids = [f"p{i:04d}" for i in range(300)]
    for start in range(0, len(ids), 1000):
        seed_profiles(graph, [{"profileId": pid} for pid in ids[start : start + 1000]])
    seed_campaign(graph)
    dids = [did_web_for(pid, DOMAIN) for pid in ids]

    def worker(offset: int) -> int:
        # Overlapping slices: every call retries part of what the others add.
        chunk = dids[offset * 30 : offset * 30 + 90] if offset < 7 else dids
        src = DidsSource(type="dids", dids=chunk)
        return audience.add_audience(graph, campaign_id="c1", source=src, policy=policy()).added

    results = at_once(worker, [(i,) for i in range(8)])
    assert sum(results) == 300
    assert graph.run("MATCH ()-[m:IN_CAMPAIGN_AUDIENCE]->() RETURN count(m) AS n")[0]["n"] == 300
