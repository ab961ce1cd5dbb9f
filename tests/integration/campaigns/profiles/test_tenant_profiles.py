"""Profiles belong to tenants, walked through the API: a tenant's credential reads and
writes only its members, its audiences reach only them, and it never sees another tenant's membership.

People: p1 uses both apps, p2 only alpha, p3 only beta.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok

CAMPAIGN = {"id": "hello", "name": "Hello", "channels": ["inApp"], "message": {"title": "Hi"}}


class Caller:
    def __init__(self, api: TrpcClient, headers: dict[str, str]) -> None:
        self.api, self.headers = api, headers

    def mutate(self, path: str, data: Any) -> Any:
        return self.api.http.post(f"/trpc/{path}", json=data, headers=self.headers)

    def query(self, path: str, data: Any = None) -> Any:
        params = {} if data is None else {"input": json.dumps(data)}
        return self.api.http.get(f"/trpc/{path}", params=params, headers=self.headers)


def _caller(
    api: TrpcClient, sub: str, *, tenant: str | None = None, roles: list[str] | None = None
) -> Caller:
    scope = ADMIN_SCOPE if sub == ADMIN_ID else ""
    token = mint_token(api.settings, profile_id=sub, scope=scope, tenant_id=tenant, roles=roles)
    return Caller(api, {"authorization": f"Bearer {token}"})


def _person(pid: str, **fields: Any) -> dict[str, Any]:
    return {"profileId": pid, "emails": [{"address": f"{pid}@example.com", "primary": True}], **fields}


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        platform = _caller(client, ADMIN_ID)
        people = [
            _person("p1", tenants=["alpha", "beta"], connections=["p2", "p3"]),
            _person("p2", tenants=["alpha"]),
            _person("p3", tenants=["beta"]),
        ]
        # Connections name profiles that exist: the first pass creates them, the second links them.
        ok(platform.mutate("profiles.upsert", {"profiles": [{**p, "connections": None} for p in people]}))
        ok(platform.mutate("profiles.upsert", {"profiles": people}))
        yield client


def test_a_tenant_reads_and_writes_only_its_members(api: TrpcClient, graph: Graph) -> None:
    author = _caller(api, "ana", tenant="alpha", roles=["author"])
    admin = _caller(api, "ada", tenant="alpha", roles=["admin"])

    # p3 is beta's: taking it in is refused whole, and p4 of the same batch is not written either.
    taken = author.mutate("profiles.upsert", {"profiles": [_person("p3"), _person("p4")]})
    assert error_code(taken) == "CONFLICT"
    assert graph.run("MATCH (p:Profile {profileId: 'p4'}) RETURN count(p) AS n")[0]["n"] == 0
    named = author.mutate("profiles.upsert", {"profiles": [_person("p4", tenants=["beta"])]})
    assert error_code(named) == "FORBIDDEN" and "platform" in named.json()["error"]["message"]
    created = ok(author.mutate("profiles.upsert", {"profiles": [_person("p4", connections=["p1", "p3"])]}))
    assert (created["created"], created["missingConnections"]) == (1, 1)  # p3 is not alpha's to link

    p1 = ok(author.query("profiles.get", {"profileId": "p1"}))
    assert p1["tenants"] == ["alpha"]  # beta's membership is not alpha's to see
    assert p1["connections"] == ["p2", "p4"]  # nor p1's connection to beta's p3
    assert error_code(author.query("profiles.get", {"profileId": "p3"})) == "NOT_FOUND"
    platform = _caller(api, ADMIN_ID)
    assert ok(platform.query("profiles.get", {"profileId": "p1"}))["tenants"] == ["alpha", "beta"]
    assert ok(platform.query("profiles.get", {"profileId": "p4"}))["tenants"] == ["alpha"]

    # alpha's delete takes p1 out of alpha only; beta keeps the person.
    assert error_code(admin.mutate("profiles.delete", {"profileId": "p3"})) == "NOT_FOUND"
    ok(admin.mutate("profiles.delete", {"profileId": "p1"}))
    assert ok(platform.query("profiles.get", {"profileId": "p1"}))["tenants"] == ["beta"]
    assert error_code(author.query("profiles.get", {"profileId": "p1"})) == "NOT_FOUND"
    # A person alpha alone held goes altogether.
    ok(admin.mutate("profiles.delete", {"profileId": "p2"}))
    assert error_code(platform.query("profiles.get", {"profileId": "p2"})) == "NOT_FOUND"


def test_audiences_resolve_inside_the_campaign_tenant(api: TrpcClient) -> None:
    author = _caller(api, "ana", tenant="alpha", roles=["author"])
    ok(author.mutate("campaigns.create", CAMPAIGN))

    def preview(source: dict[str, Any]) -> Any:
        return ok(author.mutate("campaigns.previewAudience", {"campaignId": "hello", "source": source}))

    assert preview({"type": "all"})["count"] == 2  # p1 and p2, never beta's p3
    by_id = preview({"type": "profileIds", "profileIds": ["p1", "p3"]})
    assert (by_id["count"], by_id["notFound"]) == (1, ["p3"])  # p3 is missing, as if it did not exist
    assert preview({"type": "connections", "profileId": "p1"})["count"] == 1  # p2; p3 is beta's
    assert preview({"type": "connections", "profileId": "p3"})["notFound"] == ["p3"]

    added = ok(author.mutate("campaigns.addAudience", {"campaignId": "hello", "source": {"type": "all"}}))
    assert added["added"] == 2
    page = ok(author.query("campaigns.getAudience", {"campaignId": "hello"}))
    assert [r["profileId"] for r in page["records"]] == ["p1", "p2"]
    explain = author.query("campaigns.explainRecipient", {"campaignId": "hello", "profileId": "p3"})
    assert error_code(explain) == "NOT_FOUND"


def test_discovery_shows_only_the_tenants_a_person_uses(api: TrpcClient) -> None:
    publisher = _caller(api, "pia", tenant="alpha", roles=["publisher"])
    ok(publisher.mutate("campaigns.create", {**CAMPAIGN, "discoverable": True, "excludeMinors": False}))
    ok(publisher.mutate("campaigns.setStatus", {"campaignId": "hello", "status": "live"}))

    def discovered(pid: str) -> list[str]:
        return [c["campaignId"] for c in ok(_caller(api, pid).query("campaigns.discover"))["campaigns"]]

    assert discovered("p2") == ["hello"]
    assert discovered("p3") == []  # beta's p3 does not use alpha's app
    assert error_code(_caller(api, "p3").mutate("campaigns.enroll", {"campaignId": "hello"})) == "NOT_FOUND"


def test_a_tenant_sees_only_its_members_suppressions(api: TrpcClient, graph: Graph) -> None:
    graph.run(
        "UNWIND ['p2@example.com', 'p3@example.com'] AS a "
        "CREATE (:EmailSuppression {address: a, reason: 'hard_bounce', source: 'postmark', "
        "suppressedAt: '2026-03-01T12:00:00.000000Z'})"
    )
    viewer = _caller(api, "vic", tenant="alpha", roles=["viewer"])
    listed = ok(viewer.query("suppressions.list", {}))
    assert [s["address"] for s in listed["records"]] == ["p2@example.com"]
    assert error_code(viewer.query("suppressions.get", {"address": "p3@example.com"})) == "NOT_FOUND"
    admin = _caller(api, "ada", tenant="alpha", roles=["admin"])
    lifted = admin.mutate("suppressions.remove", {"address": "p2@example.com"})
    assert error_code(lifted) == "FORBIDDEN" and "platform" in lifted.json()["error"]["message"]
    platform = _caller(api, ADMIN_ID)
    assert len(ok(platform.query("suppressions.list", {}))["records"]) == 2
