"""An approval covers the reach it showed: a live segment that grows while the send walks pauses it
before the page that would cross the approved count, and only a new approval lets it go on. Real
dispatch through the local queue and the notify walk, to the reference inbox (``tests/support``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker
from tests.conftest import ADMIN_ID
from tests.integration.campaigns.sending.test_approval import CLOCK, TENANT, Person, _message, _trail
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import StepClock, delivery_settings, drain, inbox_server, local_queues, notified
from tests.support.email import EMAIL_COPY, email_settings, emailed
from tests.support.postmark_standin import PostmarkStandin

SEGMENTED = {
    "id": "grow",
    "name": "Grows",
    "channels": ["notify"],
    "notification": {"title": "Big news", "body": "Something happened"},
    "segment": {"tag": "parents"},
}


def _parents(graph: Graph, hook: str, *ids: str) -> None:
    """Members of the tenant tagged ``parents`` (as upsert_profiles.cypher writes a shared tag), whose
    receiver is the reference inbox under the deployment's webhook secret."""
    graph.run(
        "MERGE (t:Tag {slug: 'parents'}) WITH t UNWIND $ids AS id MERGE (p:Profile {profileId: id}) "
        "SET p.tenants = [$tenant], p.notificationsWebhook = $hook, p.announcementPushOptOut = false "
        "MERGE (p)-[:HAS_TAG {slug: t.slug, profileId: id}]->(t)",
        ids=list(ids), tenant=TENANT, hook=hook,
    )  # fmt: skip


def _mailed_parents(api: TrpcClient, *ids: str) -> None:
    """Members of the tenant tagged ``parents`` with a verified address each, upserted by a platform
    admin as a school's roster would be."""
    platform = {"authorization": f"Bearer {mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"}
    rows = [
        {"profileId": p, "tenants": [TENANT], "tags": ["parents"], "dob": "1990-01-01",
         "emails": [{"address": f"{p}@example.com", "verified": True, "primary": True}]}
        for p in ids
    ]  # fmt: skip
    ok(api.http.post("/trpc/profiles.upsert", json={"profiles": rows}, headers=platform))


def _tenant_under_policy(api: TrpcClient, settings: Settings, *, min_recipients: int, **fields: str) -> None:
    """Tenant alpha, created by a platform admin with an approval policy at ``min_recipients``."""
    platform = {"authorization": f"Bearer {mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"}
    ok(api.http.post("/trpc/tenants.create", json={"tenantId": TENANT, "name": "Alpha"}, headers=platform))
    policy = {"tenantId": TENANT, "approval": {"minRecipients": min_recipients}, **fields}
    ok(api.http.post("/trpc/tenants.update", json=policy, headers=platform))


@contextmanager
def policy_stack(
    settings: Settings, graph: Graph, tmp_path: Path
) -> Iterator[tuple[TrpcClient, Queues, str]]:
    """The API with the local queues, tenant alpha asking approval of sends to two or more, and the
    reference inbox's receiver URL (its members' ``notificationsWebhook``)."""
    queues = local_queues(tmp_path / "queue.sqlite3")
    with (
        inbox_server(tmp_path) as inbox,
        api_client(settings, graph, clock=CLOCK, dispatch_queue=queues.dispatch) as api,
    ):
        _tenant_under_policy(api, settings, min_recipients=2)
        yield api, queues, f"{inbox.url}/api/notifications/send"


def test_a_growing_segment_pauses_past_its_approval_until_a_new_one(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    with policy_stack(settings, graph, tmp_path) as (api, queues, hook):
        pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
        _parents(graph, hook, "m1", "m2", "m3")
        ok(pia.mutate("campaigns.create", SEGMENTED))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "grow", "status": "live"}))
        token = ok(pia.query("campaigns.previewDispatch", {"campaignId": "grow"}))["previewToken"]
        ok(pol.mutate("campaigns.approveDispatch", {"campaignId": "grow", "previewToken": token}))
        started = ok(pia.mutate("campaigns.dispatch", {"campaignId": "grow", "expectedPreviewToken": token}))
        _parents(graph, hook, "m4", "m5", "m6", "m7")  # the segment grows after the approval

        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
            # Pages of two: m1-m2 went out; m3-m4 would reach 4 of the 3 approved, so the walk paused.
            assert notified(graph, "grow") == ["m1", "m2"]
            ref = {"dispatchId": started["dispatchId"]}
            paused = ok(pia.query("campaigns.getDispatch", ref))
            assert paused["status"] == "paused"
            reason = paused["pauseReason"]
            assert (reason["reason"], reason["approved"], reason["reach"]) == ("approval_exceeded", 3, 4)

            # Without a new approval the resume is refused and becomes a request for it.
            refused = pia.mutate("campaigns.resumeDispatch", ref)
            assert error_code(refused) == "FORBIDDEN" and "another publisher than pia" in _message(refused)
            [request] = ok(pol.query("campaigns.listAwaitingApproval", None))["records"]
            assert (request["action"], request["recipients"], request["requestedBy"]) == ("resume", 5, "pia")
            ok(
                pol.mutate(
                    "campaigns.approveDispatch",
                    {"campaignId": "grow", "previewToken": request["previewToken"]},
                )
            )
            resumed = ok(pia.mutate("campaigns.resumeDispatch", ref))
            assert (resumed["status"], resumed["approvedBy"], resumed["pauseReason"]) == (
                "sending",
                "pol",
                None,
            )
            drain(worker.handle, queues)
        finally:
            worker.close()
        assert notified(graph, "grow") == [f"m{i}" for i in range(1, 8)]
        assert ok(pia.query("campaigns.getDispatch", ref))["status"] == "completed"

    trail = _trail(graph)
    pauses = [json.loads(e["detail"]) for e in trail if e["actor"] == "system:health-guard"]
    assert [(p["reason"], p["approved"], p["reach"]) for p in pauses] == [("approval_exceeded", 3, 4)]
    resumes = [
        (e["actor"], json.loads(e["detail"])) for e in trail if e["procedure"] == "campaigns.resumeDispatch"
    ]
    assert [(actor, d.get("approvedBy"), "refused" in d) for actor, d in resumes] == [
        ("pia", None, True),
        ("pia", "pol", False),
    ]


def test_a_send_too_small_for_approval_stops_below_the_threshold(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """Without an approval the policy's threshold is the cap: one recipient previewed, a segment grown
    to five, and nothing past the threshold less one goes out on one person's say."""
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=1)
    queues = local_queues(tmp_path / "queue.sqlite3")
    with (
        inbox_server(tmp_path) as inbox,
        api_client(settings, graph, clock=CLOCK, dispatch_queue=queues.dispatch) as api,
    ):
        _tenant_under_policy(api, settings, min_recipients=3)
        hook = f"{inbox.url}/api/notifications/send"
        pia = Person(api, "pia", "publisher")
        _parents(graph, hook, "m1")
        ok(pia.mutate("campaigns.create", SEGMENTED))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "grow", "status": "live"}))
        token = ok(pia.query("campaigns.previewDispatch", {"campaignId": "grow"}))["previewToken"]
        started = ok(pia.mutate("campaigns.dispatch", {"campaignId": "grow", "expectedPreviewToken": token}))
        _parents(graph, hook, "m2", "m3", "m4", "m5")
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        assert notified(graph, "grow") == ["m1", "m2"]
        reason = ok(pia.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))["pauseReason"]
        assert (reason["reason"], reason["approved"], reason["reach"]) == ("approval_exceeded", 2, 3)


def test_an_email_walk_pauses_before_the_claim_that_would_cross_its_approval(
    base_settings: Settings, graph: Graph, tmp_path: Path, postmark: PostmarkStandin
) -> None:
    """The email walk claims ahead of its sends; the cap holds there too. The claim that would cross
    it rolls back, so the people past the approval are not even claimed."""
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_email_page_size=2)
    queues = local_queues(tmp_path / "queue.sqlite3")
    with api_client(settings, graph, clock=CLOCK, dispatch_queue=queues.dispatch) as api:
        _tenant_under_policy(api, settings, min_recipients=2, appOrigin="https://app.campaigns.test")
        pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
        _mailed_parents(api, "m1", "m2", "m3")
        ok(pia.mutate("campaigns.create", {**SEGMENTED, "channels": ["email"], "email": EMAIL_COPY}))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "grow", "status": "live"}))
        token = ok(pia.query("campaigns.previewDispatch", {"campaignId": "grow"}))["previewToken"]
        ok(pol.mutate("campaigns.approveDispatch", {"campaignId": "grow", "previewToken": token}))
        started = ok(pia.mutate("campaigns.dispatch", {"campaignId": "grow", "expectedPreviewToken": token}))
        _mailed_parents(api, "m4", "m5", "m6", "m7")  # the segment grows after the approval

        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        # Pages of two: m1-m2 went out; m3-m4 would reach 4 of the 3 approved, so nothing of it was claimed.
        assert emailed(graph, "grow") == ["m1", "m2"]
        assert sorted(str(m["To"]) for m in postmark.accepted) == ["m1@example.com", "m2@example.com"]
        claims = graph.run("MATCH ()-[s:CAMPAIGN_STATE]->(:Campaign {id: 'grow'}) "
                           "WHERE s.emailClaimedAt IS NOT NULL RETURN count(s) AS n")  # fmt: skip
        assert claims[0]["n"] == 2
        paused = ok(pia.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))
        reason = paused["pauseReason"]
        assert (paused["status"], reason["reason"], reason["approved"], reason["reach"]) == (
            "paused", "approval_exceeded", 3, 4,
        )  # fmt: skip


def test_a_live_segments_card_takes_no_engagement_until_approved(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """A live segment's match sees no card while its go-live awaits a second publisher, and cannot
    record engagement on it either; once approved, both."""
    settings = delivery_settings(base_settings)
    with api_client(settings, graph, clock=CLOCK) as api:
        _tenant_under_policy(api, settings, min_recipients=2)
        pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
        _parents(graph, "", "m1", "m2", "m3")
        in_app = {**SEGMENTED, "channels": ["inApp"], "message": {"title": "Pick-up moved"}}
        ok(pia.mutate("campaigns.create", in_app))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "grow", "status": "live"}))

        def seen_and_shown() -> tuple[list[str], int]:
            cards = ok(api.query("campaigns.getMyCampaigns", as_="m1"))["campaigns"]
            shown = api.mutate("campaigns.recordEvent", {"campaignId": "grow", "event": "shown"}, as_="m1")
            return [c["campaignId"] for c in cards], shown.status_code

        assert seen_and_shown() == ([], 404)
        [held] = ok(pol.query("campaigns.listAwaitingApproval", None))["records"]
        approval = {"campaignId": "grow", "previewToken": held["previewToken"]}
        ok(pol.mutate("campaigns.approveDispatch", approval))
        assert seen_and_shown() == (["grow"], 200)
