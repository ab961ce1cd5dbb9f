"""What the audit-trail tests share: a recording notify self-tester, the entries read back, every admin
mutation the routers declare, ``Audited`` (one call and the entry it must leave), and a campaign with
its members."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from campaign_engine.api.app import ROUTERS
from campaign_engine.api.auth import mint_token
from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, error_code, ok
from tests.support.delivery import StepClock

# Admin mutations that write nothing (a POST only because a large source does not fit in a GET).
READ_ONLY_MUTATIONS = {"campaigns.previewAudience", "campaigns.previewSegment"}


class RecordingTester:
    """The notify self-tester port: records what it was asked to send."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, *, admin_id: str, campaign: CampaignPublic, test_id: str) -> None:
        self.sent.append(test_id)


def entries(graph: Graph) -> list[dict[str, Any]]:
    rows = graph.run("MATCH (a:AuditEntry) RETURN a {.*} AS a ORDER BY a.at, a.id")
    return [row["a"] for row in rows]


def admin_mutation_paths() -> set[str]:
    return {
        procedure.path
        for router in ROUTERS
        for procedure in router.procedures
        if procedure.kind == "mutation" and procedure.access not in ("public", "user")
    }


class Audited:
    """Calls admin procedures and checks each success added exactly one entry, for that call."""

    def __init__(self, api: TrpcClient, graph: Graph, clock: StepClock) -> None:
        self.api, self.graph, self.clock = api, graph, clock
        self.seen: set[str] = set()

    def __call__(
        self, path: str, data: Any, *, request_id: str | None = None, actor: str = ADMIN_ID
    ) -> tuple[Any, dict[str, Any]]:
        self.clock.now += timedelta(seconds=1)
        before = {entry["id"] for entry in entries(self.graph)}
        headers = self.api.headers_for(ADMIN_ID, admin=True)
        if actor != ADMIN_ID:  # a publisher of the default tenant, by signed claims
            token = mint_token(self.api.settings, profile_id=actor, tenant_id="default", roles=["publisher"])
            headers = {"authorization": f"Bearer {token}"}
        if request_id is not None:
            headers["x-request-id"] = request_id
        response = self.api.http.post(f"/trpc/{path}", json=data, headers=headers)
        result = ok(response)
        new = [entry for entry in entries(self.graph) if entry["id"] not in before]
        [entry] = [e for e in new if e["tenantId"] == "default"]  # the trail the call acts in
        # A change to another tenant's record is also shown in that tenant's own trail, once.
        others = [e for e in new if e is not entry]
        assert all((e["targetType"], e["targetId"]) == ("tenant", e["tenantId"]) for e in others), others
        assert len(others) == len({e["tenantId"] for e in others}) <= 1, (path, new)
        same = ("procedure", "actor", "at", "requestId", "targetType", "targetId", "detail")
        assert all({k: e.get(k) for k in same} == {k: entry.get(k) for k in same} for e in others)
        assert (entry["procedure"], entry["actor"], entry["at"]) == (
            path,
            actor,
            format_ts(self.clock.now),
        )
        assert request_id is None or entry["requestId"] == request_id
        assert len(entry["requestId"]) >= 1
        self.seen.add(path)
        return result, entry

    def refused(self, path: str, data: Any, code: str, *, as_: str = ADMIN_ID, admin: bool = True) -> None:
        before = entries(self.graph)
        assert error_code(self.api.mutate(path, data, as_=as_, admin=admin)) == code, path
        assert entries(self.graph) == before, path


CAMPAIGN = {
    "id": "c1",
    "name": "Hello",
    "channels": ["inApp", "notify"],
    "message": {"title": "In app"},
    "notification": {"title": "Big news", "body": "Something happened"},
}
MEMBERS = ["m1", "m2", "m3"]


def _profiles(*ids: str) -> dict[str, Any]:
    return {
        "profiles": [{"profileId": pid, "notificationsWebhook": f"https://{pid}.example/hook"} for pid in ids]
    }
