"""What the tenant-record tests share: settings that seed the records, the API's calls and reads, a
notify cap and an email campaign, and the audit entries counted."""

from __future__ import annotations

from typing import Any

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, ok

CAP = {"max": 3, "windowSeconds": 604800}
SEED: dict[str, Any] = {
    "campaign_tenants": {
        "default": {"name": "Northside Schools", "primaryColor": "#123456"},
        "acme": {"name": "Acme Academy", "logoUrl": "https://acme.example/logo.png", "textColor": "#000"},
    },
    "campaign_app_origins": {"default": "https://app.example", "acme": "https://acme.example"},
    "campaign_frequency_caps": {"*": {"email": CAP}, "acme": {"notify": {"max": 1, "windowSeconds": 60}}},
}
EMAIL_CAMPAIGN = {
    "id": "news",
    "name": "News",
    "channels": ["email"],
    "email": {"subject": "Big news", "title": "Hello", "body": "Body", "ctaLabel": "Open"},
}


def seeded(base: Settings, **extra: Any) -> Settings:
    return base.model_copy(update={**SEED, **extra})


def mutate(api: TrpcClient, path: str, data: Any) -> Any:
    return api.mutate(path, data, as_=ADMIN_ID, admin=True)


def query(api: TrpcClient, path: str, data: Any = None) -> Any:
    return api.query(path, data, as_=ADMIN_ID, admin=True)


def tenant(api: TrpcClient, tenant_id: str) -> dict[str, Any]:
    return dict(ok(query(api, "tenants.get", {"tenantId": tenant_id})))


def audit_count(graph: Graph) -> int:
    return int(graph.run("MATCH (a:AuditEntry {targetType: 'tenant'}) RETURN count(a) AS n")[0]["n"])
