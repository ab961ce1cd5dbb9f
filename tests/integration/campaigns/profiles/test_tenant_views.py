"""A tenant's view of a person, the write side (docs/people.md), through the API on a real graph.

``p1`` belongs to alpha and beta, with shared facts a platform admin wrote. Every write path of alpha
(``profiles.upsert`` by each role and by an API key, the CSV and roster imports over HTTP) leaves
beta's ``profiles.get`` and the shared facts exactly as they were, and alpha reads its own writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, TEST_SECRETS_KEY
from tests.support.api import TrpcClient, api_client, error_code, ok

SHARED = {
    "profileId": "p1",
    "tenants": ["alpha", "beta"],
    "emails": [{"address": "p1@shared.example", "primary": True, "verified": True}],
    "locale": "en",
    "timeZone": "Europe/London",
    "dob": "1980-01-01",
    "isManaged": False,
    "notificationsWebhook": "https://shared.example/hook",
    "tags": ["shared-tag"],
    "connections": ["p2"],
}
# What alpha writes about p1: every fact a view holds except the receiver (an admin's, tested apart).
ALPHA_FACTS = {
    "profileId": "p1",
    "emails": [{"address": "p1@alpha.example", "primary": True, "verified": False}],
    "locale": "fr",
    "timeZone": "Europe/Paris",
    "dob": "1981-02-02",
    "isManaged": True,
    "tags": ["alpha-tag"],
    "connections": ["p3"],
}
ROLES = ["author", "publisher", "admin"]


class Caller:
    def __init__(self, api: TrpcClient, token: str) -> None:
        self.api, self.headers = api, {"authorization": f"Bearer {token}"}

    def mutate(self, path: str, data: Any) -> Any:
        return self.api.http.post(f"/trpc/{path}", json=data, headers=self.headers)

    def get(self, pid: str = "p1") -> Any:
        params = {"input": json.dumps({"profileId": pid})}
        return ok(self.api.http.get("/trpc/profiles.get", params=params, headers=self.headers))

    def upload(self, path: str, body: str, **params: str) -> Any:
        headers = {**self.headers, "content-type": "text/csv"}
        answer = self.api.http.post(path, content=body.encode(), params=params, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json()


def _member(api: TrpcClient, tenant: str, role: str) -> Caller:
    token = mint_token(api.settings, profile_id=f"{tenant}-{role}", tenant_id=tenant, roles=[role])
    return Caller(api, token)


def _platform(api: TrpcClient) -> Caller:
    return Caller(api, mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE))


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        platform = _platform(client)
        for tenant in ("alpha", "beta"):
            ok(platform.mutate("tenants.create", {"tenantId": tenant, "name": tenant.title()}))
        others = [{"profileId": p, "tenants": ["alpha", "beta"]} for p in ("p2", "p3")]
        ok(platform.mutate("profiles.upsert", {"profiles": others}))
        ok(platform.mutate("profiles.upsert", {"profiles": [SHARED]}))
        yield client


def _facts(answer: dict[str, Any]) -> dict[str, Any]:
    keep = ("emails", "locale", "timeZone", "dob", "isManaged", "notificationsWebhook", "tags", "connections")
    return {k: answer[k] for k in keep}


def _stored_shared(graph: Graph) -> list[dict[str, Any]]:
    """The Profile's own properties and relationships, as the platform wrote them."""
    return graph.run(
        "MATCH (p:Profile {profileId: 'p1'}) "
        "RETURN p {.*, campaignStateLock: null} AS props, "
        "[(p)-[:HAS_CONTACT_METHOD]->(m) | m.value] AS emails, "
        "[(p)-[r:HAS_TAG]->(t) WHERE r.tenantId IS NULL | t.slug] AS tags, "
        "[(p)-[r:CONNECTED_WITH]-(o) WHERE r.tenantId IS NULL | o.profileId] AS connections"
    )


def _alpha_writers(api: TrpcClient) -> Iterator[tuple[str, Caller]]:
    for role in ROLES:
        yield role, _member(api, "alpha", role)
    admin = _member(api, "alpha", "admin")
    key = ok(admin.mutate("apiKeys.create", {"tenantId": "alpha", "name": "sis", "role": "author"}))
    yield "api key", Caller(api, key["key"])


def test_each_alpha_writer_changes_only_alphas_view(api: TrpcClient, graph: Graph) -> None:
    beta, platform = _member(api, "beta", "viewer"), _platform(api)
    beta_before, shared_before, stored = beta.get(), platform.get(), _stored_shared(graph)
    assert _facts(beta_before) == _facts(shared_before)  # beta reads the shared facts: no view yet
    for who, writer in _alpha_writers(api):
        ok(writer.mutate("profiles.upsert", {"profiles": [ALPHA_FACTS]}))
        assert beta.get() == beta_before, who
        assert platform.get() == shared_before, who
        assert _stored_shared(graph) == stored, who
        mine = writer.get()
        assert {k: mine[k] for k in ALPHA_FACTS if k != "profileId"} == {
            **{k: v for k, v in ALPHA_FACTS.items() if k != "profileId"}
        }, who
        assert mine["notificationsWebhook"] == SHARED["notificationsWebhook"]  # not overridden: shared
        # Audited in the writer's tenant, as every profiles.upsert.
        entry = graph.run(
            "MATCH (a:AuditEntry {procedure: 'profiles.upsert'}) RETURN a.tenantId AS t "
            "ORDER BY a.at DESC LIMIT 1"
        )
        assert entry == [{"t": "alpha"}], who
    views = graph.run("MATCH (:Profile {profileId: 'p1'})-[:HAS_VIEW]->(v:TenantView) RETURN v.tenantId AS t")
    assert views == [{"t": "alpha"}]  # one view, however many writes


def test_null_falls_back_and_an_empty_list_is_alphas_own(api: TrpcClient) -> None:
    author = _member(api, "alpha", "author")
    ok(author.mutate("profiles.upsert", {"profiles": [ALPHA_FACTS]}))
    empty = {"profileId": "p1", "emails": [], "tags": [], "connections": []}
    ok(author.mutate("profiles.upsert", {"profiles": [empty]}))
    mine = author.get()
    assert (mine["emails"], mine["tags"], mine["connections"]) == ([], [], [])  # alpha's: no emails
    cleared = dict.fromkeys(k for k in ALPHA_FACTS if k != "profileId")
    ok(author.mutate("profiles.upsert", {"profiles": [{"profileId": "p1", **cleared}]}))
    assert _facts(author.get()) == _facts(_platform(api).get())  # every fact falls back to the shared


def test_platform_writes_the_shared_facts_and_leaves_alphas(api: TrpcClient) -> None:
    author, platform = _member(api, "alpha", "author"), _platform(api)
    ok(
        author.mutate(
            "profiles.upsert", {"profiles": [{"profileId": "p1", "tags": ["x"], "connections": ["p3"]}]}
        )
    )
    same = {"profileId": "p1", "tags": ["x", "y"], "connections": ["p2", "p3"]}
    ok(platform.mutate("profiles.upsert", {"profiles": [same]}))  # slugs and links alpha holds too
    shared = platform.get()
    assert (shared["tags"], shared["connections"]) == (["x", "y"], ["p2", "p3"])
    mine = author.get()
    assert (mine["tags"], mine["connections"]) == (["x"], ["p3"])
    ok(platform.mutate("profiles.upsert", {"profiles": [{"profileId": "p1", "tags": [], "connections": []}]}))
    assert (platform.get()["tags"], platform.get()["connections"]) == ([], [])
    assert author.get()["tags"] == ["x"] and author.get()["connections"] == ["p3"]


def test_alpha_connections_keep_both_ends_inside_alpha(api: TrpcClient) -> None:
    author, beta = _member(api, "alpha", "author"), _member(api, "beta", "viewer")
    ok(author.mutate("profiles.upsert", {"profiles": [{"profileId": "p3", "connections": ["p1"]}]}))
    assert author.get("p1")["connections"] == ["p2", "p3"]  # p1 keeps its shared p2 and gains p3
    assert author.get("p3")["connections"] == ["p1"]
    assert beta.get("p1")["connections"] == ["p2"] and beta.get("p3")["connections"] == []


def test_only_an_admin_writes_a_receiver(api: TrpcClient, graph: Graph) -> None:
    beta, platform = _member(api, "beta", "viewer"), _platform(api)
    beta_before, shared_keys = beta.get(), _keys(graph, "MATCH (p:Profile {profileId: 'p1'}) RETURN p")
    hook = {"profileId": "p1", "notificationsWebhook": "https://alpha.example/hook", "locale": "de"}
    for role in ("author", "publisher"):
        writer = _member(api, "alpha", role)
        for row in (hook, {"profileId": "p1", "notificationsWebhook": None, "locale": "de"}):
            refused = writer.mutate("profiles.upsert", {"profiles": [{"profileId": "p2"}, row]})
            assert error_code(refused) == "FORBIDDEN", role
            assert "admin" in refused.json()["error"]["message"]
    assert graph.run("MATCH (v:TenantView) RETURN count(v) AS n") == [{"n": 0}]  # nothing written
    admin = _member(api, "alpha", "admin")
    secret = ok(admin.mutate("profiles.upsert", {"profiles": [hook]}))["webhookSecrets"][0]["secret"]
    assert admin.get()["notificationsWebhook"] == "https://alpha.example/hook"
    assert (
        beta.get() == beta_before and platform.get()["notificationsWebhook"] == SHARED["notificationsWebhook"]
    )
    view = "MATCH (:Profile {profileId: 'p1'})-[:HAS_VIEW]->(v:TenantView {tenantId: 'alpha'}) RETURN v AS p"
    alpha_keys = _keys(graph, view)
    assert alpha_keys is not None and alpha_keys != shared_keys and secret
    # Rotating by alpha turns alpha's ring only; the shared receiver keeps its own.
    rotated = ok(admin.mutate("profiles.rotateWebhookSecret", {"profileId": "p1"}))["secret"]
    assert rotated and _keys(graph, view) != alpha_keys
    assert _keys(graph, "MATCH (p:Profile {profileId: 'p1'}) RETURN p") == shared_keys
    # Beta has no receiver of its own to rotate.
    beta_admin = _member(api, "beta", "admin")
    assert error_code(beta_admin.mutate("profiles.rotateWebhookSecret", {"profileId": "p1"})) == "BAD_REQUEST"


def _keys(graph: Graph, query: str) -> Any:
    return graph.run(query)[0]["p"].get("notificationsWebhookKeys")


def test_the_imports_write_alphas_view(api: TrpcClient, graph: Graph) -> None:
    beta, platform = _member(api, "beta", "viewer"), _platform(api)
    beta_before, shared_before, stored = beta.get(), platform.get(), _stored_shared(graph)
    for index, (_, writer) in enumerate(_alpha_writers(api)):
        csv = "profileId,email,locale,timeZone,dob,tags\np1,p1@csv.example,fr,Europe/Paris,1982-03-03,csv\n"
        report = writer.upload("/imports/profiles", csv)
        # The first writer fills alpha's view; each later one finds it holding the row already.
        expected = (1, 0) if index == 0 else (0, 1)
        assert (report["updated"], report["unchanged"], report["rejectedCount"]) == (*expected, 0)
        # No links here: guardian links of a tenant are campaigns/profiles/guardians.py's to test.
        roster = "sourcedId,role,email\np3,student,\np1,parent,p1@roster.example\n"
        report = writer.upload("/imports/roster", roster, format="oneroster")
        assert report["rejectedCount"] == 0, report
        assert beta.get() == beta_before
        assert platform.get() == shared_before and _stored_shared(graph) == stored
        mine = writer.get()
        assert (mine["emails"][0]["address"], mine["locale"], mine["tags"]) == (
            "p1@csv.example",
            "fr",
            ["csv"],
        )
        assert writer.get("p3")["isManaged"] and not beta.get("p3")["isManaged"]


def test_leaving_alpha_drops_alphas_view(api: TrpcClient, graph: Graph) -> None:
    author, admin = _member(api, "alpha", "author"), _member(api, "alpha", "admin")
    ok(author.mutate("profiles.upsert", {"profiles": [ALPHA_FACTS]}))
    beta_before = _member(api, "beta", "viewer").get()
    ok(admin.mutate("profiles.delete", {"profileId": "p1"}))
    left = graph.run(
        "MATCH (p:Profile {profileId: 'p1'}) RETURN COUNT { (p)-[:HAS_VIEW]->() } AS views, "
        "COUNT { (p)-[r]-() WHERE r.tenantId = 'alpha' } AS alphas, COUNT { (v:TenantView) } AS all, "
        "COUNT { (m:ContactMethod) WHERE m.value = 'p1@alpha.example' } AS emails"
    )
    assert left == [{"views": 0, "alphas": 0, "all": 1, "emails": 0}]  # p3's view (from the link) stays
    assert _member(api, "beta", "viewer").get() == beta_before
    ok(_platform(api).mutate("profiles.delete", {"profileId": "p3"}))
    ok(_platform(api).mutate("profiles.delete", {"profileId": "p1"}))
    gone = graph.run("MATCH (n) WHERE n:TenantView OR n:ContactMethod RETURN count(n) AS n")
    assert gone == [{"n": 0}]


def test_the_command_line_writes_the_view_of_the_token_it_runs_as(
    api: TrpcClient, graph: Graph, base_settings: Settings, tmp_path: Path
) -> None:
    """``profiles import --tenant alpha --token`` with alpha's credential writes alpha's view, as the
    HTTP import does; an author's JSONL row naming a receiver is refused; no token is the platform."""
    beta, platform = _member(api, "beta", "viewer"), _platform(api)
    beta_before, shared_before = beta.get(), platform.get()
    env = {
        **os.environ,
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "AUTH_JWT_SECRET": TEST_JWT_SECRET,
        "CAMPAIGN_SECRETS_KEY": TEST_SECRETS_KEY,
        "CAMPAIGN_ENV_FILE": "/dev/null",
    }

    def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "campaign_engine.cli", "profiles", "import", *args],
            env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    csv, jsonl = tmp_path / "p.csv", tmp_path / "p.jsonl"
    csv.write_text("profileId,email,locale\np1,p1@cli.example,fr\n", encoding="utf-8")
    jsonl.write_text(json.dumps({"profileId": "p1", "notificationsWebhook": "https://cli.example/h"}) + "\n")
    author = mint_token(api.settings, profile_id="alpha-author", tenant_id="alpha", roles=["author"])
    viewer = mint_token(api.settings, profile_id="alpha-viewer", tenant_id="alpha", roles=["viewer"])
    refused = cli(str(csv), "--tenant", "alpha", "--token", "-", stdin=viewer + "\n")
    assert refused.returncode == 3 and "author" in refused.stderr
    run = cli(str(csv), "--tenant", "alpha", "--token", "-", stdin=author + "\n")
    assert run.returncode == 0, run.stderr
    routed = cli(str(jsonl), "--token", author)  # the token's own tenant
    assert routed.returncode != 0 and "admin" in routed.stderr
    mine = _member(api, "alpha", "author").get()
    assert (mine["emails"][0]["address"], mine["locale"]) == ("p1@cli.example", "fr")
    assert mine["notificationsWebhook"] == SHARED["notificationsWebhook"]
    assert beta.get() == beta_before and platform.get() == shared_before
    entries = graph.run(
        "MATCH (a:AuditEntry {procedure: 'cli.profiles.import'}) RETURN a.tenantId AS t, a.actor AS a"
    )
    assert entries == [{"t": "alpha", "a": "alpha-author"}]
