"""The tenant migration on a graph the previous release made: its own code, run from git.

The release before tenants (``PREVIOUS_RELEASE``) is extracted from this repository's history into a
temporary folder (``bench/_support.py:release_tree``) and writes, through its own use cases, campaigns
with a tenant label (the default one and another), audit entries and profiles without any tenant. This
release then starts on that graph: each campaign keeps its id and belongs to its tenant, every profile is
the default tenant's, the old trail is read by tenant, and both tenants can reuse each other's ids from
now on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench._support import release_tree
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok

PREVIOUS_RELEASE = "5ba923f"  # main before the tenant boundary

# Run by the previous release's interpreter path: its package, its Cypher, this test's Neo4j.
_WRITER = """
import json, sys
from datetime import datetime, timezone
from campaign_engine.campaigns import audience, definitions, profiles
from campaign_engine.campaigns.audience import Policy
from campaign_engine.config import Settings
from campaign_engine.domain.audience import AllSource
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.schema import apply_schema

uri, user, password = sys.argv[1:4]
graph = open_graph(Settings(neo4j_uri=uri, neo4j_user=user, neo4j_password=password, _env_file=None))
apply_schema(graph)
now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
def audit(tenant):
    return AuditContext.begin(actor="old-admin", procedure="campaigns.create", request_id="r", now=now,
                              tenant_id=tenant)
rows = [{"profileId": "p1", "emails": [{"address": "p1@example.com", "primary": True}]}, {"profileId": "p2"}]
profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}))
for cid, tenant in (("spring", "default"), ("acme-news", "acme")):
    data = {"id": cid, "name": cid.title(), "channels": ["inApp"], "message": {"title": "Hi"}}
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id=tenant, now=now,
                                audit=audit(None if tenant == "default" else tenant))
audience.add_audience(graph, campaign_id="spring", source=AllSource(type="all"),
                      policy=Policy(now=now, adult_age=18, domain="campaigns.test"))
graph.close()
print(json.dumps({"ok": True}))
"""


def _headers(api: TrpcClient, *, tenant: str | None = None, roles: list[str] | None = None) -> dict[str, str]:
    sub, scope = (ADMIN_ID, ADMIN_SCOPE) if roles is None else ("someone", "")
    token = mint_token(api.settings, profile_id=sub, scope=scope, tenant_id=tenant, roles=roles)
    return {"authorization": f"Bearer {token}"}


def _get(api: TrpcClient, path: str, data: Any, headers: dict[str, str]) -> Any:
    return ok(api.http.get(f"/trpc/{path}", params={"input": json.dumps(data)}, headers=headers))


def test_data_of_the_previous_release_lands_in_its_tenants(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    password = base_settings.neo4j_password.get_secret_value() if base_settings.neo4j_password else ""
    with release_tree(PREVIOUS_RELEASE) as old:  # bench/_support.py: git archive, checked to import
        written = subprocess.run(
            [sys.executable, "-c", _WRITER, base_settings.neo4j_uri, base_settings.neo4j_user, password],
            env={**os.environ, "PYTHONPATH": str(old)},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    assert written.returncode == 0, written.stderr
    # The old code wrote what this release must migrate: no ref, no tenant on profiles or old entries.
    assert graph.run("MATCH (c:Campaign) WHERE c.ref IS NOT NULL RETURN count(c) AS n")[0]["n"] == 0
    assert graph.run("MATCH (p:Profile) WHERE p.tenants IS NOT NULL RETURN count(p) AS n")[0]["n"] == 0

    apply_schema(graph, default_tenant="default")  # what every start of this release does
    with api_client(base_settings, graph) as api:
        default, acme = _headers(api), _headers(api, tenant="acme")
        assert [c["id"] for c in _get(api, "campaigns.list", {}, default)["records"]] == ["spring"]
        assert [c["id"] for c in _get(api, "campaigns.list", {}, acme)["records"]] == ["acme-news"]
        members = _get(api, "campaigns.getAudience", {"campaignId": "spring"}, default)["records"]
        assert [m["profileId"] for m in members] == ["p1", "p2"]
        assert _get(api, "profiles.get", {"profileId": "p1"}, default)["tenants"] == ["default"]
        trail = _get(api, "audit.list", {}, _headers(api, tenant="acme", roles=["viewer"]))["records"]
        assert [(e["campaignId"], e["actor"]) for e in trail] == [("acme-news", "old-admin")]
        old_default = _get(api, "audit.list", {"campaignId": "spring"}, default)["records"]
        assert [e["actor"] for e in old_default] == ["old-admin"]

        # From now on ids are per tenant: the default tenant may take acme's, without touching it.
        campaign = {"id": "acme-news", "name": "Ours", "channels": ["inApp"], "message": {"title": "Hi"}}
        response = api.http.post("/trpc/campaigns.create", json=campaign, headers=default)
        assert ok(response)["id"] == "acme-news"
        stored = graph.run("MATCH (c:Campaign) RETURN c.id AS id, c.tenantId AS t, c.name AS n ORDER BY id")
        assert stored == [
            {"id": "acme-news", "t": "acme", "n": "Acme-News"},
            {"id": "default~acme-news", "t": "default", "n": "Ours"},
            {"id": "spring", "t": "default", "n": "Spring"},
        ]
