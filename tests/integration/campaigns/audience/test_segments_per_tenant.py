"""Tags, connections, locale and age as tenant beta reads them (docs/people.md): beta's own list or
fact where its view holds one, else the shared one, never alpha's; only people of beta. Segment
counts and pages, the tag and connections audience sources, and what alpha writes (through
profiles.upsert) changes none of it."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.members import add_audience, get_audience
from campaign_engine.campaigns.audience.segments import preview_segment
from campaign_engine.config import Settings
from campaign_engine.domain.audience import ConnectionsSource, TagSource
from campaign_engine.domain.segment import Segment
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy, policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query
from tests.support.api import api_client, ok
from tests.support.delivery import NOW, make_campaign
from tests.support.plans import operators
from tests.support.tenant_facts import own_tags, view

POLICY = Policy(now=NOW, adult_age=18, domain="campaigns.test")
BOTH = ["alpha", "beta"]

# What beta must read, whatever alpha writes.
SEGMENTS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "tag": ({"tag": "vip"}, ["p1", "p2", "p4"]),
    "connections": ({"connectedTo": "q"}, ["p1"]),
    "outsider": ({"connectedTo": "r"}, []),
    "locale": ({"locale": "fr"}, ["p2", "p4"]),
    "zone": ({"timeZone": "Europe/Paris"}, ["p3"]),
    "age": ({"ageAtLeast": 18}, ["p2", "p4", "q"]),
    "both": ({"all": [{"tag": "vip"}, {"locale": "fr"}]}, ["p2", "p4"]),
}


def _people(graph: Graph) -> None:
    """Shared facts, and beta's own where it wrote some. p5 and r are alpha's only."""
    people = [
        ("p1", BOTH, {"locale": "fr", "dob": "1980-01-01"}),
        ("p2", BOTH, {"locale": "en", "dob": "2015-01-01"}),
        ("p3", BOTH, {"locale": "de", "dob": "2014-01-01"}),
        ("p4", ["beta"], {"locale": "fr", "dob": "1990-01-01"}),
        ("p5", ["alpha"], {"locale": "fr", "dob": "1990-01-01"}),
        ("q", BOTH, {"dob": "1970-01-01"}),
        ("r", ["alpha"], {"dob": "1970-01-01"}),
    ]
    graph.run(
        "UNWIND $people AS row CREATE (p:Profile {profileId: row[0], tenants: row[1]}) SET p += row[2]",
        people=[list(row) for row in people],
    )
    graph.run(
        "MERGE (t:Tag {slug: 'vip'}) WITH t UNWIND ['p1', 'p3', 'p4', 'p5'] AS id "
        "MATCH (p:Profile {profileId: id}) MERGE (p)-[:HAS_TAG {slug: 'vip', profileId: id}]->(t)"
    )
    graph.run(
        "UNWIND [['q', 'p1'], ['q', 'p5'], ['r', 'p4']] AS pair "
        "MATCH (a:Profile {profileId: pair[0]}), (b:Profile {profileId: pair[1]}) "
        "MERGE (a)-[:CONNECTED_WITH]->(b)"
    )
    own_tags(graph, "beta", "p2", ["vip"])
    own_tags(graph, "beta", "p3", [])  # beta named p3's tags: none, whatever the shared ones
    view(graph, "beta", "p1", locale="en", dob="2015-01-01")
    view(graph, "beta", "p2", locale="fr-CA", dob="1985-01-01")
    view(graph, "beta", "p3", timeZone="Europe/Paris")


def _alpha_writes(settings: Settings, graph: Graph) -> None:
    """Everything an author of alpha might say about the same people, the opposite of beta's reading,
    through profiles.upsert (p4 is beta's alone: naming it, alpha's connections find it missing)."""
    facts = {"tags": ["vip", "club"], "locale": "fr", "dob": "1960-01-01", "timeZone": "Europe/Paris"}
    rows: list[dict[str, Any]] = [{"profileId": pid, **facts} for pid in ("p1", "p2", "p3")]
    rows += [{"profileId": "q", **facts, "connections": ["p2", "p3", "p4"]},
             {"profileId": "r", "connections": ["p1", "p2"]}]  # fmt: skip
    token = mint_token(settings, profile_id="alpha-author", scope="", tenant_id="alpha", roles=["author"])
    with api_client(settings, graph) as api:
        answer = api.http.post("/trpc/profiles.upsert", json={"profiles": rows},
                               headers={"authorization": f"Bearer {token}"})  # fmt: skip
    assert ok(answer)["missingConnections"] == 1


def _beta_reads(graph: Graph) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, (raw, _) in SEGMENTS.items():
        segment = Segment.model_validate(raw)
        count = preview_segment(graph, segment=segment, tenant_id="beta", now=NOW, adult_age=18).matches
        page = get_audience(graph, campaign_id=f"seg-{name}", cursor=None, limit=100, policy=POLICY)
        found[name] = (count, sorted(r.profile_id for r in page.records))
    verdicts = explain_recipient(graph, campaign_id="seg-both", profile_id="p1", now=NOW, adult_age=18)
    assert verdicts.segment is not None
    found["explained"] = [(c.condition, c.holds) for c in verdicts.segment.conditions]
    return found


def test_beta_reads_its_own_lists_and_facts_and_alphas_change_nothing(
    base_settings: Settings, graph: Graph
) -> None:
    _people(graph)
    for name, (raw, _) in SEGMENTS.items():
        make_campaign(
            graph, f"seg-{name}", channels=["inApp"], segment=raw, excludeMinors=False, tenant_id="beta"
        )
    before = _beta_reads(graph)
    assert {name: before[name] for name in SEGMENTS} == {
        name: (len(ids), ids) for name, (_, ids) in SEGMENTS.items()
    }
    assert before["explained"] == [("tag", True), ("locale", False)]  # p1 reads "en" in beta
    _alpha_writes(base_settings, graph)
    assert _beta_reads(graph) == before


def test_the_tag_and_connections_sources_add_only_betas(base_settings: Settings, graph: Graph) -> None:
    _people(graph)
    _alpha_writes(base_settings, graph)
    for name in ("by-tag", "by-connections"):
        make_campaign(graph, name, channels=["inApp"], excludeMinors=False, tenant_id="beta")
    tagged = add_audience(
        graph, campaign_id="by-tag", source=TagSource(type="tag", slug="vip"), policy=POLICY
    )
    source = ConnectionsSource(type="connections", profile_id="q")
    connected = add_audience(graph, campaign_id="by-connections", source=source, policy=POLICY)
    assert (tagged.added, connected.added) == (3, 1)
    members = {
        name: sorted(r.profile_id for r in get_audience(graph, campaign_id=name, cursor=None, limit=10,
                                                       policy=POLICY).records)
        for name in ("by-tag", "by-connections")
    }  # fmt: skip
    assert members == {"by-tag": ["p1", "p2", "p4"], "by-connections": ["p1"]}
    club = add_audience(graph, campaign_id="by-tag", source=TagSource(type="tag", slug="club"), policy=POLICY)
    assert (club.added, club.not_found) == (0, ["club"])  # alpha's tag names nobody of beta's


@pytest.mark.parametrize(
    ("segment", "seek"),
    [
        ({"tag": "vip"}, "RelationshipIndexSeek"),
        ({"locale": "fr"}, "NodeIndexSeekByRange"),
        ({"timeZone": "UTC"}, "NodeIndexSeek"),
        ({"ageAtLeast": 30}, "NodeIndexSeekByRange"),
    ],
)
def test_view_arms_seek_the_views_index_and_never_scan(
    graph: Graph, segment: dict[str, Any], seek: str
) -> None:
    _people(graph)
    make_campaign(graph, "c1", channels=["inApp"], segment=segment, tenant_id="beta")
    node = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c {.*} AS c")[0]["c"]
    compiled = graph.read(lambda tx: compile_for(tx, node))
    assert compiled is not None
    params = {"campaignId": "c1", "cursor": "", "limit": 100, "now": "2026-03-01T12:00:00.000000Z",
              "readyAt": {}, "fallbackReadyAt": "2026-03-01T12:00:00.000000Z", "staleBefore": None,
              **policy_params(NOW, 18), **compiled.params(NOW)}  # fmt: skip
    text = segment_query("dispatch_page", compiled)
    ops = operators(
        graph.driver.execute_query("EXPLAIN " + text, params, database_=graph.database).summary.plan
    )
    assert any(seek in op for op in ops), ops
    assert not any("Scan" in op for op in ops), ops
    if "tag" not in segment:  # the view's own seek, beside the shared one
        assert sum("NodeIndexSeek" in op for op in ops) >= 2, ops


def _plan_lines(plan: dict[str, Any]) -> list[str]:
    details = str(plan.get("args", {}).get("Details", ""))
    own = [f"{str(plan['operatorType']).split('@')[0]} {details}"]
    return own + [line for child in plan.get("children", []) for line in _plan_lines(child)]


def test_the_tag_page_seeks_the_tenants_own_tags_by_tenant_and_tag(graph: Graph) -> None:
    """The tag source's page reads a tenant's own tag edges from tag_member_tenant (tenantId, slug,
    profileId), so alpha's edges of the same tag are never read for beta's page; the shared ones from
    tag_member; no scan."""
    _people(graph)
    params = {"tenant": "beta", "key": "vip", "cursor": "", "limit": 100}
    summary = graph.driver.execute_query("EXPLAIN " + statement("audience_tag_page"), params,
                                         database_=graph.database).summary  # fmt: skip
    assert summary.plan is not None
    lines = _plan_lines(summary.plan)
    own = [line for line in lines if "IndexSeek" in line and "tenantId, slug, profileId" in line]
    assert own and "tenantId = $tenant" in own[0] and "slug = $key" in own[0], lines
    assert any("IndexSeek" in line and "HAS_TAG(slug, profileId)" in line for line in lines), lines
    assert not any("Scan" in line for line in lines), lines
