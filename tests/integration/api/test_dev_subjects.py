"""make dev's sign-in list: ``/dev/sign-in-subjects`` names the platform admins and every tenant's granted
subjects, read again on each call (a revoked grant is gone at once), and outside local development the
route does not exist (it names subjects across tenants without a credential). Real Neo4j, in-process API."""

from __future__ import annotations

from campaign_engine.api.dev_subjects import SUBJECTS_PATH
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok


def test_the_dev_provider_reads_the_admins_and_every_tenants_grants_in_local_development_only(
    base_settings: Settings, graph: Graph
) -> None:
    local = base_settings.model_copy(update={"campaign_local_development": True})
    with api_client(local, graph) as api:
        for tenant in ("north", "south"):
            ok(
                api.mutate(
                    "tenants.create", {"tenantId": tenant, "name": tenant.title()}, as_=ADMIN_ID, admin=True
                )
            )
        for tenant, subject, role in [("north", "p-olga", "publisher"), ("south", "p-olga", "viewer"),
                                      ("south", "a-sam", "author")]:  # fmt: skip
            grant = {"tenantId": tenant, "subject": subject, "role": role}
            ok(api.mutate("access.grant", grant, as_=ADMIN_ID, admin=True))
        answer = api.http.get(SUBJECTS_PATH)
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
        assert ADMIN_ID in answer.json()["admins"]
        assert answer.json()["granted"] == [
            {"subject": "a-sam", "tenantId": "south", "role": "author"},
            {"subject": "p-olga", "tenantId": "north", "role": "publisher"},
            {"subject": "p-olga", "tenantId": "south", "role": "viewer"},
        ]
        revoke = {"tenantId": "south", "subject": "a-sam", "role": "author"}
        ok(api.mutate("access.revoke", revoke, as_=ADMIN_ID, admin=True))
        assert "a-sam" not in {g["subject"] for g in api.http.get(SUBJECTS_PATH).json()["granted"]}
    elsewhere = base_settings.model_copy(update={"campaign_local_development": False})
    with api_client(elsewhere, graph) as api:
        assert api.http.get(SUBJECTS_PATH).status_code == 404
