"""Guardians through ``profiles.upsert`` and ``profiles.get`` on the real app and graph."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.guardians import families, granted_pairs, upsert_families
from tests.support.plans import operators

ADULT, MINOR = "1980-01-01", "2016-01-01"


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def _upsert(api: TrpcClient, rows: list[dict[str, Any]]) -> Any:
    return api.mutate("profiles.upsert", {"profiles": rows}, as_=ADMIN_ID, admin=True)


def _get(api: TrpcClient, pid: str) -> Any:
    return ok(api.query("profiles.get", {"profileId": pid}, as_=ADMIN_ID, admin=True))


def _links(graph: Graph) -> list[dict[str, Any]]:
    return graph.run(
        "MATCH (g:Profile)-[r:GUARDIAN_OF]->(m:Profile) RETURN g.profileId AS g, m.profileId AS m, "
        "properties(r) AS props ORDER BY g, m"
    )


def test_links_are_set_read_both_ways_changed_and_removed(api: TrpcClient, graph: Graph) -> None:
    answer = ok(
        _upsert(
            api,
            [
                {
                    "profileId": "kid",
                    "dob": MINOR,
                    "guardians": [
                        {"profileId": "mum", "consent": "granted"},
                        {"profileId": "dad", "consent": "revoked"},
                    ],
                },
                {"profileId": "mum", "dob": ADULT},
                {"profileId": "dad"},
            ],
        )
    )
    assert answer["guardianLinks"] == 2
    kid = _get(api, "kid")
    assert kid["guardians"] == [
        {"profileId": "dad", "consent": "revoked"},
        {"profileId": "mum", "consent": "granted"},
    ]
    assert kid["guardianOf"] == []
    assert _get(api, "mum")["guardianOf"] == [{"profileId": "kid", "consent": "granted"}]
    [first, _] = _links(graph)
    assert first["props"]["source"] == "api" and first["props"]["setBy"] == ADMIN_ID
    assert first["props"]["updatedAt"] and first["props"]["sourceRef"]
    [entry] = graph.run(
        "MATCH (a:AuditEntry {procedure: 'profiles.upsert'}) RETURN a.detail AS d, a.id AS id"
    )
    assert json.loads(entry["d"])["guardianLinks"] == 2 and first["props"]["sourceRef"] == entry["id"]

    before = _links(graph)  # the same input again writes nothing: provenance kept
    assert (
        ok(
            _upsert(
                api,
                [
                    {
                        "profileId": "kid",
                        "guardians": [
                            {"profileId": "mum", "consent": "granted"},
                            {"profileId": "dad", "consent": "revoked"},
                        ],
                    }
                ],
            )
        )["guardianLinks"]
        == 0
    )
    assert _links(graph) == before
    ok(_upsert(api, [{"profileId": "kid", "locale": "fr"}]))  # omitted: unchanged
    assert len(_links(graph)) == 2

    assert (
        ok(_upsert(api, [{"profileId": "kid", "guardians": [{"profileId": "dad", "consent": "granted"}]}]))[
            "guardianLinks"
        ]
        == 1
    )
    assert _get(api, "kid")["guardians"] == [{"profileId": "dad", "consent": "granted"}]
    assert _get(api, "mum")["guardianOf"] == []
    ok(_upsert(api, [{"profileId": "kid", "guardians": []}]))
    assert _links(graph) == [] and _get(api, "dad")["guardianOf"] == []


def _nothing_written(graph: Graph) -> None:
    assert _links(graph) == []
    assert graph.run("MATCH (p:Profile {profileId: 'new-kid'}) RETURN p") == []
    assert graph.run("MATCH (a:AuditEntry) RETURN a") == []


def test_bad_guardians_are_bad_request_and_nothing_is_written(api: TrpcClient, graph: Graph) -> None:
    graph.run(
        "CREATE (:Profile {profileId: 'teen', dob: $dob, tenants: ['default']}), "
        "(:Profile {profileId: 'managed', isManaged: true, tenants: ['default']}), "
        "(:Profile {profileId: 'elsewhere', dob: $adult, tenants: ['beta']})",
        dob=MINOR,
        adult=ADULT,
    )
    for guardian, words in (
        ("ghost", "'ghost' is not a profile of this tenant"),
        ("teen", "'teen' is a minor"),
        ("managed", "'managed' is a minor"),
        ("elsewhere", "'elsewhere' is not a profile"),
    ):
        answer = _upsert(
            api,
            [
                {
                    "profileId": "new-kid",
                    "dob": MINOR,
                    "guardians": [{"profileId": guardian, "consent": "granted"}],
                }
            ],
        )
        assert answer.status_code == 400 and error_code(answer) == "BAD_REQUEST", guardian
        assert words in answer.json()["error"]["message"], answer.text
        _nothing_written(graph)
    for bad in (
        [{"profileId": "new-kid", "consent": "granted"}],
        [{"profileId": "a", "consent": "granted"}, {"profileId": "a", "consent": "revoked"}],
        [{"profileId": "a", "consent": "maybe"}],
    ):
        answer = _upsert(api, [{"profileId": "new-kid", "guardians": bad}])
        assert error_code(answer) == "BAD_REQUEST", bad
        _nothing_written(graph)


def test_a_tenant_links_only_its_own_members(api: TrpcClient, graph: Graph) -> None:
    graph.run(
        "CREATE (:Profile {profileId: 'beta-mum', dob: $adult, tenants: ['beta']}), "
        "(:Profile {profileId: 'alpha-mum', dob: $adult, tenants: ['alpha']})",
        adult=ADULT,
    )
    token = mint_token(api.settings, profile_id="alpha-author", scope="", tenant_id="alpha", roles=["author"])
    headers = {"authorization": f"Bearer {token}"}

    def upsert(guardian: str) -> Any:
        body = {
            "profiles": [
                {"profileId": "alpha-kid", "guardians": [{"profileId": guardian, "consent": "granted"}]}
            ]
        }
        return api.http.post("/trpc/profiles.upsert", json=body, headers=headers)

    refused = upsert("beta-mum")
    assert refused.status_code == 400 and "'beta-mum' is not a profile of this tenant" in refused.text
    assert _links(graph) == []
    assert ok(upsert("alpha-mum"))["guardianLinks"] == 1
    seen = api.http.get("/trpc/profiles.get", params={"input": '{"profileId": "alpha-mum"}'}, headers=headers)
    assert ok(seen)["guardianOf"] == [{"profileId": "alpha-kid", "consent": "granted"}]


def test_generated_families_match_an_independent_count(api: TrpcClient, graph: Graph) -> None:
    found = families(60)
    links = upsert_families(api, found, as_=ADMIN_ID)
    assert links == sum(len(f.guardians) * len(f.children) for f in found)
    granted = graph.run(
        "MATCH (g:Profile)-[:GUARDIAN_OF {consent: 'granted'}]->(c:Profile) "
        "RETURN g.profileId AS g, c.profileId AS c"
    )
    assert {(r["g"], r["c"]) for r in granted} == granted_pairs(found)
    assert upsert_families(api, found, as_=ADMIN_ID) == 0  # idempotent


def test_the_check_and_the_write_seek_profiles_by_id_and_never_scan(graph: Graph) -> None:
    rows = [{"profileId": "kid", "guardians": [{"profileId": "mum", "consent": "granted"}]}]
    statements = {
        "guardians_check": (statement("guardians_check"),
                            {"rows": rows, "tenant": None, "assumed": [], "newTenant": None,
                             **policy_params(datetime.now(UTC), 18)}),
        "guardians_write": (statement("guardians_write"),
                            {"rows": rows, "tenant": None, "source": "api", "sourceRef": None, "setBy": None,
                             "now": "x"}),
    }  # fmt: skip
    for name, (text, params) in statements.items():
        plan = graph.driver.execute_query("EXPLAIN " + text, params, database_=graph.database).summary.plan
        ops = operators(plan)
        assert any(op.startswith("NodeUniqueIndexSeek") for op in ops), (name, ops)  # "(Locking)" in a write
        assert not any("Scan" in op for op in ops), (name, ops)
