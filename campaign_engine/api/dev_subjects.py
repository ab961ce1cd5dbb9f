"""``make dev``'s sign-in list: who its local OpenID provider (``devidp/``) may sign in.

The issue's rule for ``make dev``: the provider signs in the dev users, the platform admins
(``CAMPAIGN_ADMIN_PROFILE_IDS``) and every subject granted a role in a tenant, and nobody else. The
grants live in Neo4j and change while ``make dev`` runs (a platform admin grants a colleague in the
console), so the provider reads this route again on each sign-in rather than a file written once.
Served under ``CAMPAIGN_LOCAL_DEVELOPMENT`` only: it names subjects across tenants without a
credential, which only a developer's own loopback stack may do. Read-only; nothing is recorded.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from campaign_engine.campaigns.tenants.access_grants import granted_subjects
from campaign_engine.graph.graph import Graph

__all__ = ["SUBJECTS_PATH", "dev_subjects_router"]

SUBJECTS_PATH = "/dev/sign-in-subjects"
# More grants than a developer's stack holds; the list stays one small answer whatever is seeded.
_MAX_GRANTS = 1000


def dev_subjects_router(*, graph: Graph, admins: frozenset[str]) -> APIRouter:
    router = APIRouter()

    @router.get(SUBJECTS_PATH, include_in_schema=False)
    def sign_in_subjects() -> JSONResponse:
        """``{admins: [id], granted: [{subject, tenantId, role}]}``, sorted."""
        grants = granted_subjects(graph, limit=_MAX_GRANTS).records
        body = {
            "admins": sorted(admins),
            "granted": [{"subject": g.subject, "tenantId": g.tenant_id, "role": g.role} for g in grants],
        }
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return router
