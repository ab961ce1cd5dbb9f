"""The audit trail's entries: every committed admin mutation has exactly one, written in its own
transaction; a failed one has none; a failure after the audit write rolls it back; an audience change
of many chunks is one entry.

Every mutation is called through the real API (tRPC over HTTP, real graph, real local queue)."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest
from neo4j.exceptions import ConstraintError

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns.audience.members import CHUNK
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.graph import Graph, Tx
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, ok
from tests.support.audit import (
    CAMPAIGN,
    MEMBERS,
    READ_ONLY_MUTATIONS,
    Audited,
    _profiles,
    admin_mutation_paths,
    entries,
)
from tests.support.delivery import NOW, StepClock


def test_every_admin_mutation_commits_exactly_one_entry_with_its_revisions(
    api: TrpcClient, graph: Graph, clock: StepClock
) -> None:
    call = Audited(api, graph, clock)

    _, entry = call("profiles.upsert", _profiles(ADMIN_ID, *MEMBERS))
    assert (entry["targetType"], entry["targetId"]) == ("profile", "batch")
    assert entry["detail"] == (
        '{"count":4,"created":4,"profileIds":["admin-1","m1","m2","m3"],"unchanged":0,"updated":0}'
    )

    created, entry = call("campaigns.create", CAMPAIGN, request_id="req-create-1")
    assert (entry["targetType"], entry["targetId"], entry["campaignId"]) == ("campaign", "c1", "c1")
    assert entry["campaignCreatedAt"] == created["createdAt"]
    assert (entry.get("revisionBefore"), entry["revisionAfter"]) == (None, 1)

    updated, entry = call("campaigns.update", {"campaignId": "c1", "name": "Hello again"})
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (1, updated["revision"]) == (1, 2)

    _, entry = call("campaigns.setStatus", {"campaignId": "c1", "status": "live"})
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (2, 3)
    assert entry["detail"] == '{"from":"draft","to":"live"}'

    copied, entry = call("campaigns.duplicate", {"campaignId": "c1", "id": "c1-copy"})
    assert (entry["targetId"], entry["revisionAfter"], copied["status"]) == ("c1-copy", 1, "draft")
    assert copied["name"] == "Hello again" and copied["message"] == updated["message"]
    call("campaigns.delete", {"campaignId": "c1-copy"})  # the copy has no audience: nothing else goes

    source = {"type": "profileIds", "profileIds": MEMBERS}
    _, entry = call("campaigns.addAudience", {"campaignId": "c1", "source": source})
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (3, 3)
    assert entry["detail"] == '{"added":3,"chunks":1,"count":3,"source":"profileIds"}'
    removal = {"type": "profileIds", "profileIds": ["m3"]}
    _, entry = call("campaigns.removeAudience", {"campaignId": "c1", "source": removal})
    assert entry["detail"] == '{"chunks":1,"removed":1,"source":"profileIds"}'

    sent, entry = call("campaigns.sendTestToMe", {"campaignId": "c1"})
    assert sent["testId"] in entry["detail"] and (entry["revisionBefore"], entry["revisionAfter"]) == (3, 3)

    token = ok(api.query("campaigns.previewDispatch", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    schedule = {
        "campaignId": "c1",
        "sendAt": format_ts(NOW + timedelta(days=1)),
        "expectedPreviewToken": token["previewToken"],
    }
    scheduled, entry = call("campaigns.scheduleDispatch", schedule)
    assert '"scheduleId":"sch_' in entry["detail"] and entry["revisionAfter"] == 3
    _, entry = call("campaigns.cancelScheduledDispatch", {"dispatchId": scheduled[0]["dispatchId"]})
    assert (entry["targetType"], entry["targetId"], entry["campaignId"]) == (
        "dispatch",
        scheduled[0]["dispatchId"],
        "c1",
    )

    token = ok(api.query("campaigns.previewDispatch", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    # A second publisher's approval (no editor may approve): audited, naming who it would not count
    # for, and changes no revision.
    approval = {"campaignId": "c1", "previewToken": token["previewToken"]}
    _, entry = call("campaigns.approveDispatch", approval, actor="publisher-2")
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (3, 3)
    assert json.loads(entry["detail"])["notBy"] == [ADMIN_ID]
    started, entry = call(
        "campaigns.dispatch", {"campaignId": "c1", "expectedPreviewToken": token["previewToken"]}
    )
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (3, 4)
    assert started["dispatchId"] in entry["detail"]

    graph.run(
        "MATCH (d:Dispatch {id: $id}) SET d.status = 'failed', d.lastError = 'x'", id=started["dispatchId"]
    )
    _, entry = call("campaigns.resumeDispatch", {"dispatchId": started["dispatchId"]})
    assert (entry["targetType"], entry["targetId"], entry["revisionAfter"]) == (
        "dispatch",
        started["dispatchId"],
        4,
    )

    _, entry = call("campaigns.setStatus", {"campaignId": "c1", "status": "paused"})
    assert (entry["revisionBefore"], entry["revisionAfter"]) == (4, 5)

    # An A/B test wave decided by hand: the decision is the entry.
    arms = [{"id": "A"}, {"id": "B", "message": {"title": "B"}, "notification": {"title": "B", "body": "B"}}]
    # ab3: the hash draws a member of each arm into its half test wave (a wave with an empty arm is
    # refused).
    call("campaigns.create", {**CAMPAIGN, "id": "ab3", "variants": arms})
    call("campaigns.addAudience", {"campaignId": "ab3", "source": source})
    call("campaigns.setStatus", {"campaignId": "ab3", "status": "live"})
    token = ok(api.query("campaigns.previewDispatch", {"campaignId": "ab3"}, as_=ADMIN_ID, admin=True))
    experiment = {"testShare": 0.5, "metric": "clicked", "decideAfterSeconds": 3600}
    tested, entry = call("campaigns.dispatch", {"campaignId": "ab3", "experiment": experiment,
                                                "expectedPreviewToken": token["previewToken"]})  # fmt: skip
    assert json.loads(entry["detail"])["experiment"] == experiment
    _, entry = call("campaigns.chooseVariant", {"dispatchId": tested["dispatchId"], "variantId": "B"})
    assert (entry["targetType"], entry["targetId"], json.loads(entry["detail"])["winner"]) == (
        "campaign", "ab3", "B"
    )  # fmt: skip
    call("campaigns.delete", {"campaignId": "ab3"})

    graph.run("CREATE (:EmailSuppression {address: 'gone@example.com', reason: 'hard_bounce'})")
    _, entry = call("suppressions.remove", {"address": "Gone@Example.com"})
    digest = hashlib.sha256(b"gone@example.com").hexdigest()
    assert (entry["targetType"], entry["targetId"]) == ("suppression", f"sha256:{digest}")
    assert "gone" not in str(entry).lower()  # the trail keeps no address in clear

    _, entry = call("profiles.delete", {"profileId": "m2"})
    assert (entry["targetType"], entry["targetId"]) == ("profile", "m2")

    _, entry = call("profiles.rotateWebhookSecret", {"profileId": "m1", "overlapSeconds": 60})
    assert (entry["targetType"], entry["targetId"]) == ("profile", "m1")
    assert "whsec_" not in str(entry)  # the trail says a secret was rotated, never which

    _, entry = call("campaigns.delete", {"campaignId": "c1"})
    assert (entry["revisionBefore"], entry.get("revisionAfter")) == (5, None)

    grant = {"tenantId": "default", "subject": "m1", "role": "author"}
    _, entry = call("access.grant", grant)
    assert (entry["targetType"], entry["targetId"], entry["tenantId"]) == ("grant", "default/m1", "default")
    assert json.loads(entry["detail"]) == grant
    _, entry = call("access.revoke", grant)
    assert (entry["targetType"], entry["targetId"]) == ("grant", "default/m1")

    key, entry = call("apiKeys.create", {"tenantId": "default", "name": "SIS sync", "role": "author"})
    assert (entry["targetType"], entry["targetId"]) == ("apiKey", key["id"])
    assert key["key"] not in str(entry)  # the trail never holds a key
    _, entry = call("apiKeys.revoke", {"id": key["id"]})
    assert (entry["targetType"], entry["targetId"]) == ("apiKey", key["id"])

    _, entry = call("tenants.create", {"tenantId": "acme", "name": "Acme"})
    assert (entry["targetType"], entry["targetId"]) == ("tenant", "acme")
    shown_to_acme = graph.run("MATCH (a:AuditEntry {tenantId: 'acme'}) RETURN a.procedure AS p")
    assert shown_to_acme == [{"p": "tenants.create"}]
    assert entry["detail"] == '{"fields":["name"]}'
    _, entry = call("tenants.update", {"tenantId": "acme", "primaryColor": "#123456"})
    assert (entry["targetType"], entry["detail"]) == ("tenant", '{"fields":["primaryColor"]}')
    layout = {"tenantId": "acme", "footerText": "Acme <Academy>", "senderName": None}
    _, entry = call("tenants.updateLayout", layout)
    assert (entry["targetId"], entry["detail"]) == ("acme", '{"fields":["footerText","senderName"]}')
    acme_admin = mint_token(api.settings, profile_id="acme-admin", tenant_id="acme", roles=["admin"])
    acme_trail = ok(api.http.get("/trpc/audit.list", headers={"authorization": f"Bearer {acme_admin}"}))
    assert {(r["procedure"], r["actor"]) for r in acme_trail["records"]} == {
        ("tenants.create", ADMIN_ID), ("tenants.update", ADMIN_ID), ("tenants.updateLayout", ADMIN_ID)
    }  # fmt: skip

    created_endpoint = {"url": "https://hooks.example/events", "events": ["*"], "description": "ops"}
    endpoint, entry = call("webhookEndpoints.create", created_endpoint)
    assert (entry["targetType"], entry["targetId"]) == ("webhookEndpoint", endpoint["id"])
    assert endpoint["secret"] not in str(entry) and "hooks.example" not in str(entry)  # no secret, no URL
    _, entry = call("webhookEndpoints.update", {"id": endpoint["id"], "url": "https://hooks.example/v2"})
    assert (entry["targetType"], json.loads(entry["detail"])) == ("webhookEndpoint", {"url": True})
    rotated, entry = call("webhookEndpoints.rotateSecret", {"id": endpoint["id"]})
    assert rotated["secret"] not in str(entry) and json.loads(entry["detail"]) == {"overlapSeconds": 86400}
    _, entry = call("webhookEndpoints.replay", {"id": endpoint["id"], "since": "2026-01-01T00:00:00Z"})
    assert (entry["targetType"], entry["targetId"]) == ("webhookEndpoint", endpoint["id"])
    _, entry = call("webhookEndpoints.delete", {"id": endpoint["id"]})
    assert json.loads(entry["detail"]) == {"deleted": True}

    # Every admin mutation the API offers was exercised above: a new one must be audited and tested here.
    assert call.seen == admin_mutation_paths() - READ_ONLY_MUTATIONS

    # Retired and reaped, and a new campaign takes the id: the trail survives, named by incarnation.
    assert graph.run("MATCH (c) WHERE c:Campaign OR c:DeletedCampaign RETURN count(c) AS n")[0]["n"] == 0
    call("campaigns.create", CAMPAIGN)
    trail = ok(api.query("audit.list", {"campaignId": "c1", "limit": 200}, as_=ADMIN_ID, admin=True))
    assert len(trail["records"]) == 14  # 13 for the first incarnation, 1 for the second
    assert {r["campaignCreatedAt"] for r in trail["records"][1:]} == {created["createdAt"]}
    assert trail["records"][0]["campaignCreatedAt"] != created["createdAt"]


def test_a_failed_mutation_leaves_no_entry(api: TrpcClient, graph: Graph, clock: StepClock) -> None:
    call = Audited(api, graph, clock)
    call("profiles.upsert", {"profiles": [{"profileId": "m1", "did": "did:web:m1.example"}]})
    call("campaigns.create", CAMPAIGN)
    call("campaigns.setStatus", {"campaignId": "c1", "status": "live"})
    call(
        "campaigns.addAudience", {"campaignId": "c1", "source": {"type": "profileIds", "profileIds": ["m1"]}}
    )

    stale = format_ts(NOW - timedelta(days=1))
    call.refused(
        "campaigns.update", {"campaignId": "c1", "name": "x", "expectedUpdatedAt": stale}, "CONFLICT"
    )
    call.refused("campaigns.update", {"campaignId": "nope", "name": "x"}, "NOT_FOUND")
    call.refused("campaigns.update", {"campaignId": "c1", "name": ""}, "BAD_REQUEST")
    call.refused(
        "campaigns.setStatus", {"campaignId": "c1", "status": "draft"}, "BAD_REQUEST"
    )  # after the lock
    call.refused("campaigns.create", CAMPAIGN, "CONFLICT")  # the unique constraint refuses the CREATE
    # The lock is the transaction's first write; the token check after it fails and rolls both back.
    call.refused("campaigns.dispatch", {"campaignId": "c1", "expectedPreviewToken": "stale"}, "CONFLICT")
    call.refused("campaigns.cancelScheduledDispatch", {"dispatchId": "dsp_nope"}, "NOT_FOUND")
    call.refused("campaigns.resumeDispatch", {"dispatchId": "dsp_nope"}, "NOT_FOUND")
    call.refused("campaigns.chooseVariant", {"dispatchId": "dsp_nope", "variantId": "A"}, "NOT_FOUND")
    call.refused("profiles.delete", {"profileId": "nobody"}, "NOT_FOUND")
    call.refused("profiles.rotateWebhookSecret", {"profileId": "nobody"}, "NOT_FOUND")  # after the lock
    call.refused("suppressions.remove", {"address": "kept@example.com"}, "NOT_FOUND")
    call.refused("tenants.create", {"tenantId": "default", "name": "Again"}, "CONFLICT")  # seeded at start
    call.refused(
        "tenants.update", {"tenantId": "default", "primaryColor": "blue"}, "BAD_REQUEST"
    )  # after the lock
    call.refused("tenants.update", {"tenantId": "nope", "name": "x"}, "NOT_FOUND")
    call.refused("tenants.updateLayout", {"tenantId": "nope", "footerText": "x"}, "NOT_FOUND")
    taken = {"profiles": [{"profileId": "m2", "did": "did:web:m1.example"}]}
    call.refused("profiles.upsert", taken, "BAD_REQUEST")  # constraint violation inside the transaction
    call.refused(
        "campaigns.setStatus", {"campaignId": "c1", "status": "paused"}, "FORBIDDEN", as_="m1", admin=False
    )
    call("campaigns.setStatus", {"campaignId": "c1", "status": "archived"})
    call.refused("campaigns.addAudience", {"campaignId": "c1", "source": {"type": "all"}}, "BAD_REQUEST")
    assert graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.status AS s")[0]["s"] == "archived"


def test_a_failure_after_the_audit_write_rolls_the_entry_back(graph: Graph) -> None:
    graph.run("CREATE (:Campaign {id: 'c1', revision: 1})")
    audit = AuditContext.begin(
        actor=ADMIN_ID, procedure="campaigns.update", request_id="r1", now=NOW, tenant_id="default"
    )

    def tx_fn(tx: Tx) -> None:
        record_audit(tx, audit, target_type="campaign", target_id="c1", revision_before=1, revision_after=2)
        tx.run("CREATE (:Campaign {id: 'c1'})").consume()  # the unique constraint fails after the entry

    with pytest.raises(ConstraintError):
        graph.write(tx_fn)
    assert entries(graph) == []
    graph.write(lambda tx: record_audit(tx, audit, target_type="campaign", target_id="c1"))
    assert [entry["id"] for entry in entries(graph)] == [audit.entry_id]


def test_an_audience_change_of_many_chunks_has_one_entry_counting_every_chunk(
    api: TrpcClient, graph: Graph, clock: StepClock
) -> None:
    call = Audited(api, graph, clock)
    call("campaigns.create", CAMPAIGN)
    graph.run(
        "UNWIND range(0, $n - 1) AS i CREATE (p:Profile {profileId: 'p' + i, isManaged: false,"
        " isServiceProfile: false, tenants: ['default']})-[:HAS_TAG]->(:Tag {slug: 'x' + i})",
        n=CHUNK + 5,
    )
    graph.run("MATCH (t:Tag) DETACH DELETE t")
    graph.run(  # keyed as profiles.upsert writes them: the tag page seeks (slug, profileId)
        "CREATE (t:Tag {slug: 'big'}) WITH t MATCH (p:Profile) "
        "CREATE (p)-[:HAS_TAG {slug: t.slug, profileId: p.profileId}]->(t)"
    )
    added, entry = call(
        "campaigns.addAudience", {"campaignId": "c1", "source": {"type": "tag", "slug": "big"}}
    )
    assert added["added"] == CHUNK + 5
    assert entry["detail"] == f'{{"added":{CHUNK + 5},"chunks":2,"count":{CHUNK + 5},"source":"tag:big"}}'
