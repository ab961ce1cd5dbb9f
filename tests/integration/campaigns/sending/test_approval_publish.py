"""A held change of a live card pins what members see, not the whole preview: a send of the campaign
still walking when the change is held moves the whole preview (it skips whom it reached), and the
request must stay approvable. Real dispatch through the local queue to the reference inbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.integration.campaigns.sending.test_approval import CLOCK, TENANT, Person, _trail
from tests.integration.campaigns.sending.test_approval_reach import (
    SEGMENTED,
    _parents,
    _tenant_under_policy,
    policy_stack,
)
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import delivery_settings, notified, run_worker

CARD = {**SEGMENTED, "channels": ["inApp", "notify"], "message": {"title": "Pick-up moved"}}


def _titles(api: TrpcClient, profile_id: str) -> list[str]:
    cards = ok(api.query("campaigns.getMyCampaigns", as_=profile_id))["campaigns"]
    return [str(c["message"]["title"]) for c in cards if c["campaignId"] == "grow"]


def _publish_requests(person: Person) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = ok(person.query("campaigns.listAwaitingApproval", None))["records"]
    return [r for r in listed if r["action"] == "publish"]


def _held(person: Person) -> dict[str, Any]:
    [held] = _publish_requests(person)
    return held


def _approve(person: Person, token: str) -> Any:
    return person.mutate("campaigns.approveDispatch", {"campaignId": "grow", "previewToken": token})


def test_a_card_change_held_while_a_send_walks_stays_approvable(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = delivery_settings(base_settings)
    with policy_stack(settings, graph, tmp_path) as (api, queues, hook):
        ana, pia = Person(api, "ana", "author"), Person(api, "pia", "publisher")
        pol = Person(api, "pol", "publisher")
        _parents(graph, hook, "m1", "m2", "m3")
        ok(ana.mutate("campaigns.create", CARD))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "grow", "status": "live"}))
        token = ok(pia.query("campaigns.previewDispatch", {"campaignId": "grow"}))["previewToken"]
        ok(_approve(pol, token))  # the go-live and the send of the same preview
        ok(pia.mutate("campaigns.dispatch", {"campaignId": "grow", "expectedPreviewToken": token}))

        # ana edits the card before the walk ran: the change waits for a second publisher.
        ok(ana.mutate("campaigns.update", {"campaignId": "grow", "message": {"title": "Pick-up at 4pm"}}))
        held = _held(pol)
        run_worker(settings, graph, queues)
        assert notified(graph, "grow") == ["m1", "m2", "m3"]
        moved = ok(pia.query("campaigns.previewDispatch", {"campaignId": "grow"}))
        assert (moved["previewToken"] != held["previewToken"], moved["inAppRecipientCount"]) == (True, 3)

        # ana, who changed the card, may not approve it; pol may.
        assert error_code(_approve(ana, held["previewToken"])) == "FORBIDDEN"
        assert _titles(api, "m1") == ["Pick-up moved"]
        approved = ok(_approve(pol, held["previewToken"]))
        assert (approved["approvedBy"], approved["recipients"]) == ("pol", 3)
        assert _titles(api, "m1") == ["Pick-up at 4pm"]
        assert _publish_requests(pol) == []
        approvals = [e["detail"] for e in _trail(graph) if e["procedure"] == "campaigns.approveDispatch"]
        granted = json.loads(approvals[-1])
        assert (granted["inApp"], granted["published"], "ana" in granted["notBy"]) == (3, True, True)

        # What members see is pinned still: a held change whose card reaches a new member since is stale.
        ok(ana.mutate("campaigns.update", {"campaignId": "grow", "message": {"title": "Pick-up at 5pm"}}))
        again = _held(pol)
        _parents(graph, hook, "m4")
        assert error_code(_approve(pol, again["previewToken"])) == "CONFLICT"
        assert _titles(api, "m1") == ["Pick-up at 4pm"]


def _family(graph: Graph, *, guardian: str, child: str) -> None:
    """An adult guardian and a minor of tenant alpha, linked with consent granted."""
    graph.run(
        "UNWIND [[$g, '1980-05-17', false], [$k, '2015-09-01', true]] AS row "
        "MERGE (p:Profile {profileId: row[0]}) "
        "SET p.tenants = [$tenant], p.dob = row[1], p.isManaged = row[2], p.announcementPushOptOut = false "
        "WITH collect(p) AS pair "
        "WITH pair[0] AS g, pair[1] AS k CREATE (g)-[:GUARDIAN_OF {consent: 'granted', source: 'api'}]->(k)",
        g=guardian, k=child, tenant=TENANT,
    )  # fmt: skip


def _seen_and_shown(api: TrpcClient, profile_id: str) -> tuple[list[str], int]:
    """The guardian's cards of ``fam``, and the status recordEvent answers a ``shown`` of it with."""
    cards = ok(api.query("campaigns.getMyCampaigns", as_=profile_id))["campaigns"]
    shown = api.mutate("campaigns.recordEvent", {"campaignId": "fam", "event": "shown"}, as_=profile_id)
    return [str(c["message"]["title"]) for c in cards if c["campaignId"] == "fam"], shown.status_code


def test_a_guardian_sees_and_records_on_a_childs_card_only_once_the_child_is_approved(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """A child added to a live campaign after its approval waits for the next one, and so does the
    child's guardian: no card, and no engagement recorded on the card they cannot see."""
    settings = delivery_settings(base_settings)
    with api_client(settings, graph, clock=CLOCK) as api:
        _tenant_under_policy(api, settings, min_recipients=2)
        ana, pia = Person(api, "ana", "author"), Person(api, "pia", "publisher")
        pol = Person(api, "pol", "publisher")
        _parents(graph, "", "a1", "a2")  # two adult members: the card reaches the policy's two
        _family(graph, guardian="g1", child="k1")
        _family(graph, guardian="g2", child="k2")
        family = {"id": "fam", "name": "Families", "channels": ["inApp"], "minors": "guardians",
                  "message": {"title": "Trip forms"}}  # fmt: skip
        ok(ana.mutate("campaigns.create", family))
        audience = {"campaignId": "fam", "source": {"type": "profileIds", "profileIds": ["a1", "a2", "k1"]}}
        ok(ana.mutate("campaigns.addAudience", audience))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "fam", "status": "live"}))
        ok(_approve_fam(pol, _held(pol)["previewToken"]))
        assert _seen_and_shown(api, "g1") == (["Trip forms"], 200)

        added = {"campaignId": "fam", "source": {"type": "profileIds", "profileIds": ["k2"]}}
        ok(ana.mutate("campaigns.addAudience", added))
        assert _seen_and_shown(api, "g2") == ([], 404)  # k2 came after the approval
        assert _seen_and_shown(api, "g1") == (["Trip forms"], 200)
        ok(_approve_fam(pia, _held(pia)["previewToken"]))
        assert _seen_and_shown(api, "g2") == (["Trip forms"], 200)


def _approve_fam(person: Person, token: str) -> Any:
    return person.mutate("campaigns.approveDispatch", {"campaignId": "fam", "previewToken": token})
