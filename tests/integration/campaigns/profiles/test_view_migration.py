"""The upgrade to tenant views rewrites nothing (docs/people.md, "For operators upgrading").

The graph is built by the previous release's own statement (commit 2ebfa99's
``cypher/profiles/upsert_profiles.cypher``, kept verbatim below: a fixture that does not need the
repository's history), so no view exists. Then the new code reads and writes it: each tenant reads the
facts as they were, and a tenant's first write creates its view and leaves the shared facts unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client, ok

PREVIOUS_UPSERT = """
UNWIND $rows AS row
OPTIONAL MATCH (existing:Profile {profileId: row.profileId})
WITH row, existing IS NULL AS created
MERGE (p:Profile {profileId: row.profileId})
  ON CREATE SET p.announcementEmailOptOut = false, p.announcementPushOptOut = false,
                p.isManaged = false, p.isServiceProfile = false, p.campaignUnsubscribeId = randomUUID()
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1, p += row.props,
    p.tenants = coalesce(row.tenants, p.tenants, [$tenant])
WITH p, row, created
CALL (p, row) {
  WITH p, row WHERE row.emails IS NOT NULL
  OPTIONAL MATCH (p)-[:HAS_CONTACT_METHOD]->(old:ContactMethod {type: 'email'})
  DETACH DELETE old
  WITH DISTINCT p, row
  UNWIND row.emails AS email
  CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: email.address,
                                                     isVerified: email.verified, isPrimary: email.primary})
}
CALL (p, row) {
  WITH p, row WHERE row.tags IS NOT NULL
  OPTIONAL MATCH (p)-[old:HAS_TAG]->(:Tag)
  DELETE old
  WITH DISTINCT p, row
  UNWIND row.tags AS slug
  MERGE (t:Tag {slug: slug})
  MERGE (p)-[:HAS_TAG {slug: slug, profileId: p.profileId}]->(t)
}
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created, count(*) AS total
"""
OLD_ROW = {
    "profileId": "p1",
    "props": {"locale": "en", "timeZone": "Europe/London", "dob": "1980-01-01", "isManaged": False},
    "emails": [{"address": "p1@old.example", "verified": True, "primary": True}],
    "tags": ["old-tag"],
    "connections": None,
    "tenants": ["alpha", "beta"],
}
OLD_FACTS = {
    "locale": "en",
    "timeZone": "Europe/London",
    "dob": "1980-01-01",
    "isManaged": False,
    "emails": [{"address": "p1@old.example", "verified": True, "primary": True}],
    "tags": ["old-tag"],
}


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    graph.run(PREVIOUS_UPSERT, rows=[OLD_ROW], tenant="alpha")
    with api_client(base_settings, graph) as client:
        yield client


def _get(api: TrpcClient, tenant: str, role: str = "author") -> dict[str, Any]:
    token = mint_token(api.settings, profile_id=f"{tenant}-{role}", tenant_id=tenant, roles=[role])
    params = {"input": json.dumps({"profileId": "p1"})}
    return ok(api.http.get("/trpc/profiles.get", params=params, headers={"authorization": f"Bearer {token}"}))


def _facts(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: answer[k] for k in OLD_FACTS}


def _shared(graph: Graph) -> list[dict[str, Any]]:
    return graph.run(
        "MATCH (p:Profile {profileId: 'p1'}) RETURN p {.*, campaignStateLock: null} AS props, "
        "[(p)-[:HAS_CONTACT_METHOD]->(m) | m {.*}] AS emails, "
        "[(p)-[r:HAS_TAG]->() WHERE r.tenantId IS NULL | r {.*}] AS tags"
    )


def test_old_facts_are_the_shared_facts_and_a_first_write_makes_a_view(api: TrpcClient, graph: Graph) -> None:
    assert graph.run("MATCH (v:TenantView) RETURN count(v) AS n") == [{"n": 0}]
    assert _facts(_get(api, "alpha")) == OLD_FACTS
    assert _facts(_get(api, "beta")) == OLD_FACTS
    before = _shared(graph)

    token = mint_token(api.settings, profile_id="alpha-author", tenant_id="alpha", roles=["author"])
    row = {"profileId": "p1", "locale": "fr", "emails": [{"address": "p1@alpha.example"}], "tags": ["a"]}
    answer = api.http.post(
        "/trpc/profiles.upsert", json={"profiles": [row]}, headers={"authorization": f"Bearer {token}"}
    )
    assert ok(answer)["updated"] == 1

    assert _shared(graph) == before  # nothing of the old facts rewritten
    views = graph.run("MATCH (:Profile {profileId: 'p1'})-[:HAS_VIEW]->(v:TenantView) RETURN v {.*} AS v")
    assert [v["v"]["tenantId"] for v in views] == ["alpha"]
    mine = _facts(_get(api, "alpha"))
    assert (mine["locale"], mine["emails"][0]["address"], mine["tags"]) == ("fr", "p1@alpha.example", ["a"])
    assert (mine["timeZone"], mine["dob"]) == ("Europe/London", "1980-01-01")  # not named: the old facts
    assert _facts(_get(api, "beta")) == OLD_FACTS
