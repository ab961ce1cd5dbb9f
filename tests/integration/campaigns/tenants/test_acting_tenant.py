"""The tenant a call acts in, picked by the console's tenant header, over the real API and a real Neo4j: a
platform admin acts in any tenant (and the audit entry says which), a person whose token names no tenant
acts where their grants are and nowhere else, and a credential that names a tenant acts there alone."""

from __future__ import annotations

import json
from typing import Any

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.api.context import TENANT_HEADER
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.tenant_records import EMAIL_CAMPAIGN, mutate, seeded


def _headers(token: str, tenant: str | None) -> dict[str, str]:
    headers = {"authorization": f"Bearer {token}"}
    if tenant is not None:
        headers[TENANT_HEADER] = tenant
    return headers


def _get(api: TrpcClient, path: str, token: str, tenant: str | None, data: Any = None) -> Any:
    params = {} if data is None else {"input": json.dumps(data)}
    return api.http.get(f"/trpc/{path}", params=params, headers=_headers(token, tenant))


def _post(api: TrpcClient, path: str, token: str, tenant: str | None, data: Any) -> Any:
    return api.http.post(f"/trpc/{path}", json=data, headers=_headers(token, tenant))


def test_a_platform_admin_acts_in_the_tenant_picked_and_the_audit_entry_says_so(
    base_settings: Settings, graph: Graph
) -> None:
    settings = seeded(base_settings)
    with api_client(settings, graph) as api:
        admin = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
        created = ok(_post(api, "campaigns.create", admin, "acme", EMAIL_CAMPAIGN))
        assert created["tenantId"] == "acme"
        assert [c["id"] for c in ok(_get(api, "campaigns.list", admin, "acme"))["records"]] == ["news"]
        assert ok(_get(api, "campaigns.list", admin, None))["records"] == []  # the default tenant's
        me = ok(_get(api, "access.me", admin, "acme"))
        assert (me["tenantId"], me["role"], me["platform"]) == ("acme", "admin", True)
    rows = graph.run(
        "MATCH (a:AuditEntry {procedure: 'campaigns.create'}) RETURN a.tenantId AS tenant, a.actor AS actor"
    )
    assert [(r["tenant"], r["actor"]) for r in rows] == [("acme", ADMIN_ID)]


def test_a_person_whose_token_names_no_tenant_acts_only_where_granted(
    base_settings: Settings, graph: Graph
) -> None:
    settings = seeded(base_settings)
    with api_client(settings, graph) as api:
        ok(mutate(api, "access.grant", {"tenantId": "acme", "subject": "p-ann", "role": "publisher"}))
        ann = mint_token(settings, profile_id="p-ann")  # as an organisation's provider issues it
        me = ok(_get(api, "access.me", ann, None))
        assert (me["tenantId"], me["role"], me["tenants"]) == ("default", None, ["acme"])
        me = ok(_get(api, "access.me", ann, "acme"))
        assert (me["tenantId"], me["role"], me["platform"]) == ("acme", "publisher", False)
        assert ok(_post(api, "campaigns.create", ann, "acme", EMAIL_CAMPAIGN))["tenantId"] == "acme"
        # A tenant she holds no role in: refused for every procedure, a signed-in user's included.
        for response in (
            _get(api, "access.me", ann, "default"),
            _get(api, "campaigns.list", ann, "default"),
            _post(api, "campaigns.create", ann, "default", {**EMAIL_CAMPAIGN, "id": "elsewhere"}),
        ):
            assert response.status_code == 403 and error_code(response) == "FORBIDDEN", response.text
    assert graph.run("MATCH (c:Campaign {tenantId: 'default'}) RETURN count(c) AS n")[0]["n"] == 0


def test_a_credential_that_names_a_tenant_cannot_pick_another(base_settings: Settings, graph: Graph) -> None:
    settings = seeded(base_settings)
    with api_client(settings, graph) as api:
        tenant_admin = mint_token(settings, profile_id="t-admin", tenant_id="acme", roles=["admin"])
        assert ok(_get(api, "access.me", tenant_admin, "acme"))["role"] == "admin"  # its own: fine
        assert ok(_get(api, "access.me", tenant_admin, None))["tenants"] == []
        key = ok(
            _post(
                api,
                "apiKeys.create",
                tenant_admin,
                None,
                {"tenantId": "acme", "name": "ci", "role": "publisher"},
            )
        )
        for token in (tenant_admin, key["key"]):
            for response in (
                _get(api, "campaigns.list", token, "default"),
                _post(api, "campaigns.create", token, "default", EMAIL_CAMPAIGN),
            ):
                assert response.status_code == 403 and error_code(response) == "FORBIDDEN", response.text
                assert "acts in tenant 'acme' only" in response.json()["error"]["message"]
    assert graph.run("MATCH (c:Campaign) RETURN count(c) AS n")[0]["n"] == 0
