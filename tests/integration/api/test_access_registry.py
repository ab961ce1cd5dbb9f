"""Every procedure of the registry, called with every kind of credential against tenant A's data, answers
as its declared access says: the tenant boundary and the role table, walked as callers meet
them.

Tenant ``alpha`` (A) holds a live campaign with an audience and a dispatch, a grant and an API key;
tenant ``beta`` (B) holds its own campaign under the same ref, so a boundary that compared refs alone
would hand B's admin A's campaign. A refused call must leave A's data exactly as it was; an admitted one
must find A's data (never NOT_FOUND) and fail, if at all, only for what the input asks. A procedure
without a sample input here fails the test, as one without a row in its router's table fails at import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.access import PEOPLE_ONLY, ROLES, Access, role_satisfies
from campaign_engine.api.app import ROUTERS
from campaign_engine.api.auth import ADMIN_SCOPE
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.access_credentials import CREDENTIALS, DID_ADMIN, A, B, Credential, jwt_header
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import StepClock, local_queues

SECRET_NAME = "Alpha's secret launch"  # in A's campaign only: any answer to B holding it is a leak
REF = "launch"  # A's and B's campaign both


CAMPAIGN = {
    "id": REF,
    "name": SECRET_NAME,
    "channels": ["inApp", "notify"],
    "message": {"title": "In app"},
    "notification": {"title": "Big news", "body": "Something happened"},
}


@dataclass
class Seeded:
    dispatch_id: str
    key_id: str
    endpoint_id: str


def _platform(api: TrpcClient, tenant: str) -> dict[str, str]:
    return jwt_header(ADMIN_ID, tenant=tenant, scope=ADMIN_SCOPE)(api)


def _seed(api: TrpcClient, graph: Graph, clock: StepClock) -> Seeded:
    graph.run("MATCH (n) DETACH DELETE n")
    a, b = _platform(api, A), _platform(api, B)

    def call(path: str, data: Any, headers: dict[str, str]) -> Any:
        return ok(api.http.post(f"/trpc/{path}", json=data, headers=headers))

    def read(path: str, data: Any, headers: dict[str, str]) -> Any:
        return ok(api.http.get(f"/trpc/{path}", params={"input": json.dumps(data)}, headers=headers))

    members = [{"profileId": p, "notificationsWebhook": f"https://{p}.example/hook"} for p in ("p1", "p2")]
    members[0]["emails"] = [{"address": "gone@example.com", "primary": True}]  # suppressed, below
    call("tenants.create", {"tenantId": A, "name": "Alpha", "appOrigin": "https://alpha.example"}, a)
    call("profiles.upsert", {"profiles": members}, a)
    graph.run(
        "CREATE (:EmailSuppression {address: 'gone@example.com', reason: 'hard_bounce', source: 'postmark',"
        " suppressedAt: '2026-03-01T12:00:00.000000Z'})"
    )
    call("campaigns.create", {**CAMPAIGN, "name": "Beta's own"}, b)
    call("campaigns.create", CAMPAIGN, a)
    call(
        "campaigns.addAudience",
        {"campaignId": REF, "source": {"type": "profileIds", "profileIds": ["p1"]}},
        a,
    )
    call("campaigns.setStatus", {"campaignId": REF, "status": "live"}, a)
    token = read("campaigns.previewDispatch", {"campaignId": REF}, a)["previewToken"]
    started = call("campaigns.dispatch", {"campaignId": REF, "expectedPreviewToken": token}, a)
    call("access.grant", {"tenantId": A, "subject": "viewer-a", "role": "viewer"}, a)
    call("profiles.upsert", {"profiles": [{"profileId": "did-admin", "did": DID_ADMIN.did}]}, a)
    call("access.grant", {"tenantId": A, "subject": "did-admin", "role": "admin"}, a)
    call("access.grant", {"tenantId": A, "subject": "someone", "role": "author"}, a)
    live = call("apiKeys.create", {"tenantId": A, "name": "live", "role": "admin"}, a)
    revoked = call("apiKeys.create", {"tenantId": A, "name": "revoked", "role": "admin"}, a)
    call("apiKeys.revoke", {"id": revoked["id"]}, a)
    expires = (clock.now + timedelta(seconds=30)).isoformat()
    expired = call(
        "apiKeys.create", {"tenantId": A, "name": "expired", "role": "admin", "expiresAt": expires}, a
    )
    endpoint = call("webhookEndpoints.create", {"url": "https://hooks.alpha.example/e", "events": ["*"]}, a)
    clock.now += timedelta(minutes=1)
    api.keys = {"live": live["key"], "revoked": revoked["key"], "expired": expired["key"]}  # type: ignore[attr-defined]
    return Seeded(dispatch_id=started["dispatchId"], key_id=live["id"], endpoint_id=endpoint["id"])


_NODES = "MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props"
_RELATIONSHIPS = (
    "MATCH (a)-[r]->(b) RETURN elementId(a) AS a, elementId(b) AS b, type(r) AS type, properties(r) AS props"
)
_RESTORE_NODES = "UNWIND $nodes AS n CREATE (x:$(n.labels)) SET x = n.props, x.restoreId = n.id"
_RESTORE_RELATIONSHIPS = """
UNWIND $relationships AS r
MATCH (a {restoreId: r.a}), (b {restoreId: r.b})
CREATE (a)-[x:$(r.type)]->(b) SET x = r.props
"""


class Restorer:
    """A's and B's data as ``_seed`` made it, put back in three statements: a mutation that succeeded
    changed it, and seeding again through the API cost a third of the test (127 seeds, 43 s)."""

    def __init__(self, graph: Graph) -> None:
        self.nodes, self.relationships = graph.run(_NODES), graph.run(_RELATIONSHIPS)

    def restore(self, graph: Graph) -> None:
        graph.run("MATCH (n) DETACH DELETE n")
        graph.run(_RESTORE_NODES, nodes=self.nodes)
        graph.run(_RESTORE_RELATIONSHIPS, relationships=self.relationships)
        graph.run("MATCH (n) REMOVE n.restoreId")


def _inputs(seeded: Seeded) -> dict[str, Any]:
    """A valid input naming A's data, for every procedure."""
    campaign = {"campaignId": REF}
    p1, p2 = ({"type": "profileIds", "profileIds": [p]} for p in ("p1", "p2"))
    dispatch = {"dispatchId": seeded.dispatch_id}
    tenant = {"tenantId": A}
    return {
        "access.grant": {"tenantId": A, "subject": "newcomer", "role": "viewer"},
        "access.revoke": {"tenantId": A, "subject": "someone", "role": "author"},
        "access.list": tenant,
        "access.me": None,
        "apiKeys.create": {"tenantId": A, "name": "ci", "role": "viewer"},
        "apiKeys.list": tenant,
        "apiKeys.revoke": {"id": seeded.key_id},
        "audit.list": {},
        "campaigns.create": {**CAMPAIGN, "id": "another", "name": "Another"},
        "campaigns.get": campaign,
        "campaigns.list": {},
        "campaigns.update": {"campaignId": REF, "description": "changed"},
        "campaigns.setStatus": {"campaignId": REF, "status": "paused"},
        "campaigns.delete": campaign,
        "campaigns.explainRecipient": {"campaignId": REF, "profileId": "p1"},
        "campaigns.duplicate": {"campaignId": REF, "id": "copy-of-it"},
        "campaigns.previewAudience": {"campaignId": REF, "source": {"type": "all"}},
        "campaigns.previewSegment": {"segment": {"memberOf": REF}},
        "campaigns.addAudience": {"campaignId": REF, "source": p2},
        "campaigns.removeAudience": {"campaignId": REF, "source": p1},
        "campaigns.getAudience": campaign,
        "campaigns.getStats": campaign,
        "campaigns.sendTestToMe": campaign,
        "campaigns.previewDispatch": campaign,
        "campaigns.dispatch": {"campaignId": REF, "expectedPreviewToken": "stale"},
        "campaigns.approveDispatch": {"campaignId": REF, "previewToken": "stale", "acceptFallback": True},
        "campaigns.listAwaitingApproval": None,
        "campaigns.scheduleDispatch": {
            "campaignId": REF, "sendAt": "2030-01-01T00:00:00Z", "expectedPreviewToken": "stale"
        },
        "campaigns.cancelScheduledDispatch": dispatch,
        "campaigns.getDispatch": dispatch,
        "campaigns.resumeDispatch": dispatch,
        "campaigns.chooseVariant": {**dispatch, "variantId": "A"},  # not testing: CONFLICT once admitted
        "campaigns.listDispatches": campaign,
        "campaigns.listUncertainEmails": dispatch,
        "campaigns.previewEmail": campaign,
        "campaigns.getMyCampaigns": None,
        "campaigns.recordEvent": {"campaignId": REF, "event": "shown"},
        "campaigns.discover": None,
        "campaigns.enroll": campaign,
        "campaigns.leave": campaign,
        "campaigns.unsubscribeFromAnnouncements": {"token": "not-a-token"},
        "preferences.getAnnouncementPreferences": None,
        "preferences.updateAnnouncementPreferences": {"announcementEmailOptOut": False},
        "profiles.upsert": {"profiles": [{"profileId": "p3"}]},
        "profiles.get": {"profileId": "p1"},
        "profiles.delete": {"profileId": "p2"},
        "profiles.rotateWebhookSecret": {"profileId": "p1"},
        "suppressions.list": {},
        "suppressions.get": {"address": "gone@example.com"},
        "suppressions.remove": {"address": "gone@example.com"},
        "tenants.create": {"tenantId": "gamma", "name": "Gamma"},
        "tenants.update": {"tenantId": A, "name": "Alpha renamed"},
        "tenants.get": tenant,
        "tenants.list": {},
        "tenants.updateLayout": {"tenantId": A, "footerText": "Alpha School, est. 1901"},
        "tenants.previewLayout": {"tenantId": A, "layout": {"senderName": "Alpha News"}},
        "webhookEndpoints.create": {"url": "https://hooks.alpha.example/v2", "events": ["campaign.created"]},
        "webhookEndpoints.list": None,
        "webhookEndpoints.update": {"id": seeded.endpoint_id, "description": "renamed", "events": ["*"]},
        "webhookEndpoints.delete": {"id": seeded.endpoint_id},
        "webhookEndpoints.rotateSecret": {"id": seeded.endpoint_id},
        "webhookEndpoints.deliveries": {"id": seeded.endpoint_id},
        "webhookEndpoints.replay": {"id": seeded.endpoint_id, "since": "2026-01-01T00:00:00Z"},
        # Signed in by a JWT, not a DID: BAD_REQUEST (challenges are a DID's), never 401/403.
        "utilities.getChallenges": {"amount": 3},
    }  # fmt: skip


# What a call may change without changing anyone's data: its rate-limit bucket, a key's last use, a
# DID-auth challenge issued and used to sign the call in.
_BOOKKEEPING = "(n:RateBucket OR n:DidChallenge)"
_ALPHA = (
    "n.tenantId = 'alpha' OR 'alpha' IN coalesce(n.tenants, []) OR n:EmailSuppression "
    "OR EXISTS { (n)-[]-(:Campaign {tenantId: 'alpha'}) }"
)


_ALPHA_ENDS = "NOT m:Campaign OR m.tenantId = 'alpha'"
_COUNTERS = frozenset({"lastUsedAt", "campaignStateLock"})  # a key's last use, a lock's counter: not data


def _fingerprint(graph: Graph, where: str = "true", ends: str = "true") -> str:
    """Nodes matching ``where`` and their outgoing relationships to nodes matching ``ends``."""
    rows = graph.run(
        f"MATCH (n) WHERE NOT {_BOOKKEEPING} AND ({where}) OPTIONAL MATCH (n)-[r]->(m) WHERE {ends} "
        "RETURN labels(n) AS l, properties(n) AS p, type(r) AS t, properties(r) AS rp, elementId(m) AS m"
    )
    for row in rows:
        row["p"] = {k: v for k, v in (row["p"] or {}).items() if k not in _COUNTERS}
    canonical = sorted(json.dumps(row, sort_keys=True, default=str) for row in rows)
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


def _expected(path: str, access: Access, credential: Credential) -> str:
    """``refused-401``, ``refused-403``, ``beta`` (B's admin: refused or its own data), or ``admitted``."""
    if access == "public":
        return "admitted"
    if not credential.signed_in:
        return "refused-401"
    if credential.api_key and path in PEOPLE_ONLY:
        return "refused-403"
    if access == "user" or credential.platform:
        return "admitted"
    if access == "platform":
        return "refused-403"
    if credential.tenant_b_admin:
        return "beta"
    held = credential.tenant_role
    return "admitted" if role_satisfies(held, access) else "refused-403"  # type: ignore[arg-type]


@pytest.fixture
def harness(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[tuple[TrpcClient, StepClock]]:
    clock = StepClock()
    queues = local_queues(tmp_path / "queue.sqlite3")
    settings = base_settings.model_copy(update={"campaign_admin_profile_ids": ADMIN_ID})
    with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
        yield api, clock


def test_every_procedure_answers_every_credential_as_its_table_says(
    harness: tuple[TrpcClient, StepClock], graph: Graph
) -> None:
    api, clock = harness
    seeded = _seed(api, graph, clock)
    seed = Restorer(graph)
    inputs = _inputs(seeded)
    procedures = {p.path: p for router in ROUTERS for p in router.procedures}
    assert set(procedures) == set(inputs), "every procedure needs a sample input here"
    assert set(ROLES) == {"viewer", "author", "publisher", "admin"}

    checked = 0
    # The graph as the next call meets it: a refused call must leave it so, an admitted one may change
    # it (then it is read again), so each call costs one fingerprint, not two.
    before = _fingerprint(graph)
    for path, procedure in sorted(procedures.items()):
        for credential in CREDENTIALS:
            expected = _expected(path, procedure.access, credential)
            alpha_before = _fingerprint(graph, _ALPHA, _ALPHA_ENDS) if expected == "beta" else ""
            data = inputs[path]
            headers = credential.header(api)
            if procedure.kind == "query":
                params = {} if data is None else {"input": json.dumps(data)}
                response = api.http.get(f"/trpc/{path}", params=params, headers=headers)
            else:
                response = api.http.post(f"/trpc/{path}", json=data, headers=headers)
            body = response.text
            code = "OK" if response.status_code == 200 else response.json()["error"]["data"]["code"]
            where = f"{path} as {credential.name}: {code} {body[:300]}"
            assert code != "INTERNAL_SERVER_ERROR", where
            if expected == "refused-401":
                assert code == "UNAUTHORIZED", where
            elif expected == "refused-403":
                assert code == "FORBIDDEN", where
                assert procedure.access in json.loads(body)["error"]["message"], where  # names what it needs
            elif expected == "beta":
                # B's admin acts in B: A's data is missing to it, and nothing of A's changes or shows.
                assert SECRET_NAME not in body, where
                assert code in {"OK", "NOT_FOUND", "FORBIDDEN", "BAD_REQUEST", "CONFLICT"}, where
                if path.startswith(("access.", "apiKeys.")) or (
                    path.startswith("webhookEndpoints.") and not path.endswith((".create", ".list"))
                ):
                    assert code in {"FORBIDDEN", "NOT_FOUND"}, where
            else:
                assert code not in {"UNAUTHORIZED", "FORBIDDEN"}, where
                if procedure.access not in ("public", "user"):
                    assert code != "NOT_FOUND", where  # A's caller finds A's data
            if code != "OK":  # a refusal or failure writes nothing at all
                assert _fingerprint(graph) == before, f"a failed call changed the graph: {where}"
            elif expected == "beta":
                assert _fingerprint(graph, _ALPHA, _ALPHA_ENDS) == alpha_before, (
                    f"B changed A's data: {where}"
                )
            if code == "OK" and procedure.kind == "mutation":
                seed.restore(graph)  # the next caller meets A's data as it was
            if code == "OK":
                before = _fingerprint(graph)
            checked += 1
    assert checked == len(procedures) * len(CREDENTIALS)


def test_beta_writes_never_touch_alpha(harness: tuple[TrpcClient, StepClock], graph: Graph) -> None:
    """B's admin mutating with A's refs changes only B's own campaign, which shares the ref."""
    api, clock = harness
    _seed(api, graph, clock)
    b = jwt_header("admin-b", tenant=B, roles=["admin"])(api)
    alpha = "MATCH (c:Campaign {tenantId: 'alpha'}) RETURN c.description AS d, c.status AS s, c.revision AS r"
    before = graph.run(alpha)
    update = {"campaignId": REF, "description": "B was here"}
    assert ok(api.http.post("/trpc/campaigns.update", json=update, headers=b))["description"] == "B was here"
    ok(api.http.post("/trpc/campaigns.delete", json={"campaignId": REF}, headers=b))
    assert graph.run(alpha) == before
    # B's create of the ref it just deleted succeeds: a CONFLICT would have told B that A uses it.
    created = ok(api.http.post("/trpc/campaigns.create", json={**CAMPAIGN, "name": "B again"}, headers=b))
    assert (created["id"], created["tenantId"]) == (REF, B)
    listed = ok(api.http.get("/trpc/campaigns.list", headers=b))["records"]
    assert [(c["id"], c["name"]) for c in listed] == [(REF, "B again")]
