"""Tenant records over the real API and a real Neo4j: the settings seed them once, ``tenants.*`` edits
them (refusals writing nothing, concurrent creates making one record), a tenant's own admin reads its
record and no other, and the reads seek the tenant id's index."""

from __future__ import annotations

import json
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.cypher import statement as cypher_statement
from campaign_engine.graph.graph import Graph
from tests.support.api import api_client, error_code, ok
from tests.support.concurrency import at_once
from tests.support.tenant_records import (
    CAP,
    SEED,
    audit_count,
    mutate,
    query,
    seeded,
    tenant,
)


def test_settings_seed_the_records_once_and_an_edit_survives_every_later_start(
    base_settings: Settings, graph: Graph
) -> None:
    settings = seeded(base_settings)
    with api_client(settings, graph) as api:
        default, acme = tenant(api, "default"), tenant(api, "acme")
        assert (default["name"], default["primaryColor"], default["appOrigin"]) == (
            "Northside Schools",
            "#123456",
            "https://app.example",
        )
        assert default["frequencyCaps"] == {"email": CAP}  # "*" is the default tenant's caps
        assert acme["frequencyCaps"] == {"notify": {"max": 1, "windowSeconds": 60}}
        assert (acme["logoUrl"], acme["textColor"], acme["emailFrom"], acme["approval"]) == (
            "https://acme.example/logo.png",
            "#000",
            None,
            None,
        )
        ok(mutate(api, "tenants.update", {"tenantId": "default", "name": "Renamed", "primaryColor": None}))

    # A later start with changed settings and a tenant named for the first time.
    later = seeded(
        base_settings,
        campaign_app_origins={**SEED["campaign_app_origins"], "late": "https://late.example"},
        campaign_tenants={**SEED["campaign_tenants"], "default": {"name": "Seed again"}},
    )
    with api_client(later, graph) as api:
        default = tenant(api, "default")
        assert (default["name"], default["primaryColor"]) == ("Renamed", None)  # the edit stands
        assert tenant(api, "late")["appOrigin"] == "https://late.example"  # created: absent before
        listed = ok(query(api, "tenants.list"))
        assert [r["tenantId"] for r in listed["records"]] == ["acme", "default", "late"]
    markers = graph.run(
        "MATCH (m:SchemaMigration) WHERE m.name STARTS WITH 'tenant_seed:' RETURN m.name AS n"
    )
    assert sorted(r["n"] for r in markers) == ["tenant_seed:acme", "tenant_seed:default", "tenant_seed:late"]


def test_a_seed_the_records_cannot_hold_stops_the_start(base_settings: Settings, graph: Graph) -> None:
    broken = seeded(base_settings, campaign_tenants={"Bad_Id": {"name": "x"}})
    with pytest.raises(ValueError, match="Bad_Id"), api_client(broken, graph):
        pass
    assert graph.run("MATCH (t:Tenant) RETURN count(t) AS n")[0]["n"] == 0


def test_create_get_list_and_their_refusals(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        created = ok(
            mutate(
                api,
                "tenants.create",
                {
                    "tenantId": "acme",
                    "name": "Acme",
                    "appOrigin": "https://acme.example:8443",
                    "emailFrom": "Acme <news@acme.example>",
                    "frequencyCaps": {"email": CAP},
                    "approval": {"minRecipients": 500},
                },
            )
        )
        assert created["createdAt"] == created["updatedAt"] and created["approval"] == {"minRecipients": 500}
        assert tenant(api, "acme") == created
        assert error_code(mutate(api, "tenants.create", {"tenantId": "acme", "name": "Again"})) == "CONFLICT"
        assert tenant(api, "acme")["name"] == "Acme"
        assert error_code(query(api, "tenants.get", {"tenantId": "nobody"})) == "NOT_FOUND"

        entries = audit_count(graph)
        for bad in (
            {"appOrigin": "http://acme.example"},  # http only for loopback
            {"appOrigin": "https://acme.example/path"},
            {"logoUrl": "http://acme.example/logo.png"},
            {"primaryColor": "blue"},
            {"emailFrom": "news@acme.example\r\nBcc: x@evil.example"},
            {"approval": {"minRecipients": 0}},
            {"frequencyCaps": {"sms": CAP}},
            {"tenantId": "Not_An_Id"},
            {"surprise": 1},
        ):
            response = mutate(api, "tenants.create", {"tenantId": "beta", "name": "Beta", **bad})
            assert error_code(response) == "BAD_REQUEST", bad
        ids = graph.run("MATCH (t:Tenant) RETURN t.tenantId AS id ORDER BY id")
        assert [r["id"] for r in ids] == ["acme", "default"]
        assert audit_count(graph) == entries  # nothing half-written

        for tenant_id in ("b", "c", "d"):
            ok(mutate(api, "tenants.create", {"tenantId": tenant_id, "name": tenant_id.upper()}))
        # The default tenant was seeded at start (CAMPAIGN_DEFAULT_TENANT_ID, no other setting).
        first = ok(query(api, "tenants.list", {"limit": 2}))
        assert [r["tenantId"] for r in first["records"]] == ["acme", "b"] and first["hasMore"] is True
        second = ok(query(api, "tenants.list", {"limit": 2, "cursor": first["cursor"]}))
        assert [r["tenantId"] for r in second["records"]] == ["c", "d"] and second["hasMore"] is True
        third = ok(query(api, "tenants.list", {"limit": 2, "cursor": second["cursor"]}))
        assert [r["tenantId"] for r in third["records"]] == ["default"] and third["hasMore"] is False
        assert third["cursor"] is None
        # A user without admin rights reads nothing.
        assert api.query("tenants.list", as_="someone").status_code == 403


def test_update_patches_clears_and_refuses_without_writing(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        ok(mutate(api, "tenants.create", {"tenantId": "acme", "name": "Acme", "primaryColor": "#111111"}))
        patched = ok(
            mutate(
                api,
                "tenants.update",
                {
                    "tenantId": "acme",
                    "logoUrl": "https://acme.example/l.png",
                    "approval": {"minRecipients": 9},
                },
            )
        )
        assert (patched["name"], patched["primaryColor"], patched["logoUrl"]) == (
            "Acme",
            "#111111",
            "https://acme.example/l.png",
        )
        cleared = ok(
            mutate(api, "tenants.update", {"tenantId": "acme", "primaryColor": None, "approval": None})
        )
        assert (cleared["primaryColor"], cleared["approval"], cleared["logoUrl"]) == (
            None,
            None,
            "https://acme.example/l.png",
        )
        assert cleared["updatedAt"] >= patched["updatedAt"] and cleared["createdAt"] == patched["createdAt"]
        entries = audit_count(graph)
        for bad in (
            {"name": None},
            {"name": ""},
            {"textColor": "#12"},
            {"appOrigin": "https://u:p@a.example"},
        ):
            assert error_code(mutate(api, "tenants.update", {"tenantId": "acme", **bad})) == "BAD_REQUEST", (
                bad
            )
        assert tenant(api, "acme") == cleared and audit_count(graph) == entries
        missing = mutate(api, "tenants.update", {"tenantId": "nobody", "name": "X"})
        assert error_code(missing) == "NOT_FOUND"
        assert graph.run("MATCH (t:Tenant {tenantId: 'nobody'}) RETURN count(t) AS n")[0]["n"] == 0
        [entry] = graph.run(
            "MATCH (a:AuditEntry {procedure: 'tenants.update', targetId: 'acme'}) WITH a ORDER BY a.orderKey"
            " RETURN collect(a.detail)[0] AS detail"
        )
        assert entry["detail"] == '{"fields":["approval","logoUrl"]}'


def test_concurrent_creates_of_one_id_make_one_record_and_patches_of_two_fields_keep_both(
    base_settings: Settings, graph: Graph
) -> None:
    with api_client(base_settings, graph) as api:
        answers = at_once(
            lambda name: mutate(api, "tenants.create", {"tenantId": "race", "name": name}), [("A",), ("B",)]
        )
        assert sorted(r.status_code for r in answers) == [200, 409]
        patches = [
            ({"tenantId": "race", "logoUrl": "https://r.example/l.png"},),
            ({"tenantId": "race", "textColor": "#222"},),
        ]
        for response in at_once(lambda data: mutate(api, "tenants.update", data), patches):
            assert response.status_code == 200, response.text
        record = tenant(api, "race")
        assert (record["logoUrl"], record["textColor"]) == (
            "https://r.example/l.png",
            "#222",
        )  # no lost update


def test_a_tenants_own_admin_reads_its_record_and_no_other(base_settings: Settings, graph: Graph) -> None:
    with api_client(seeded(base_settings), graph) as api:

        def as_(profile_id: str, tenant: str, role: str) -> dict[str, str]:
            token = mint_token(api.settings, profile_id=profile_id, tenant_id=tenant, roles=[role])
            return {"authorization": f"Bearer {token}"}

        def get(tenant_id: str, headers: dict[str, str]) -> Any:
            params = {"input": json.dumps({"tenantId": tenant_id})}
            return api.http.get("/trpc/tenants.get", params=params, headers=headers)

        admin = as_("acme-admin", "acme", "admin")
        assert ok(get("acme", admin))["name"] == "Acme Academy"
        assert error_code(get("default", admin)) == "FORBIDDEN"  # another tenant's record
        assert error_code(get("acme", as_("acme-publisher", "acme", "publisher"))) == "FORBIDDEN"
        assert error_code(api.http.get("/trpc/tenants.list", headers=admin)) == "FORBIDDEN"
        patch = {"tenantId": "acme", "name": "Mine now"}
        assert error_code(api.http.post("/trpc/tenants.update", json=patch, headers=admin)) == "FORBIDDEN"


@pytest.mark.parametrize(
    ("statement", "params"), [("tenant_list", {"cursor": "", "limit": 3}), ("tenant_get", {"tenantId": "a"})]
)
def test_tenant_reads_seek_the_tenant_id_constraint_index_and_never_sort(
    graph: Graph, statement: str, params: dict[str, Any]
) -> None:
    with graph.driver.session(database=graph.database) as session:
        plan = session.run("EXPLAIN " + cypher_statement(statement), params).consume().plan
    operators: list[str] = []

    def walk(node: Any) -> None:
        operators.append(f"{node['operatorType']} {node.get('args', {}).get('Details', '')}")
        for child in node.get("children", []):
            walk(child)

    walk(plan)
    assert any("IndexSeek" in op and "Tenant(tenantId)" in op for op in operators), operators
    assert not any(op.split()[0].startswith(("Sort", "Top", "PartialSort")) for op in operators), operators
    assert not any("Scan" in op for op in operators), operators
