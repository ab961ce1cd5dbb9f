"""sendTestToMe (inApp part): private snapshot, replacement, stale acknowledgements, deletion."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns import definitions
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate, CampaignPublic
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def make(graph: Graph, campaign_id: str, **fields: object) -> None:
    data = {"id": campaign_id, "name": "Draft", "channels": ["inApp"], "message": {"title": "v1"}, **fields}
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=NOW)


def test_snapshot_is_private_replaced_and_acknowledged_only_when_current(
    base_settings: Settings, graph: Graph
) -> None:
    graph.run("CREATE (:Profile {profileId: $a}), (:Profile {profileId: 'u1'})", a=ADMIN_ID)
    make(graph, "c1")  # a draft with future dates: tests ignore status, dates and audience
    with api_client(base_settings, graph, clock=lambda: NOW) as api:
        first = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        assert first["channels"] == ["inApp"]
        mine = ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID, admin=True))["campaigns"]
        assert [(c["campaignId"], c["testId"], c["message"]["title"]) for c in mine] == [
            ("c1", first["testId"], "v1")
        ]
        assert ok(api.query("campaigns.getMyCampaigns", as_="u1"))["campaigns"] == []
        # An allowlisted admin calling with an ordinary token sees no tests either.
        assert ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID))["campaigns"] == []

        definitions.update_campaign(
            graph,
            patch=definitions.CampaignPatch.model_validate({"campaignId": "c1", "message": {"title": "v2"}}),
            now=NOW,
        )
        second = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        assert second["testId"] != first["testId"]
        mine = ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID, admin=True))["campaigns"]
        assert [(c["testId"], c["message"]["title"]) for c in mine] == [(second["testId"], "v2")]

        stale = ok(
            api.mutate(
                "campaigns.recordEvent",
                {"campaignId": "c1", "event": "dismissed", "testId": first["testId"]},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        assert stale == {"recorded": False, "state": None}
        assert len(ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID, admin=True))["campaigns"]) == 1
        current = ok(
            api.mutate(
                "campaigns.recordEvent",
                {"campaignId": "c1", "event": "dismissed", "testId": second["testId"]},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        assert current["recorded"] is True
        assert ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID, admin=True))["campaigns"] == []
    # Neither enrolment nor engagement state was written.
    assert graph.run("MATCH ()-[r:IN_CAMPAIGN_AUDIENCE|CAMPAIGN_STATE]->() RETURN count(r) AS n")[0]["n"] == 0


def test_deleting_the_campaign_deletes_pending_tests(base_settings: Settings, graph: Graph) -> None:
    graph.run("CREATE (:Profile {profileId: $a})", a=ADMIN_ID)
    make(graph, "c1")
    with api_client(base_settings, graph, clock=lambda: NOW) as api:
        ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        ok(api.mutate("campaigns.delete", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        make(graph, "c1")  # same id, new incarnation: the old snapshot must not come back
        assert ok(api.query("campaigns.getMyCampaigns", as_=ADMIN_ID, admin=True))["campaigns"] == []
    assert graph.run("MATCH ()-[t:CAMPAIGN_TEST]->() RETURN count(t) AS n")[0]["n"] == 0


def test_untestable_campaigns_and_non_admins_are_refused(base_settings: Settings, graph: Graph) -> None:
    graph.run("CREATE (:Profile {profileId: $a})", a=ADMIN_ID)
    make(graph, "notify-only", channels=["notify"], message=None, notification={"title": "n", "body": "b"})
    with api_client(base_settings, graph, clock=lambda: NOW) as api:
        response = api.mutate(
            "campaigns.sendTestToMe", {"campaignId": "notify-only"}, as_=ADMIN_ID, admin=True
        )
        assert error_code(response) == "BAD_REQUEST"
        make(graph, "c1")
        assert error_code(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_="u1")) == "FORBIDDEN"
        assert (
            error_code(api.mutate("campaigns.sendTestToMe", {"campaignId": "zz"}, as_=ADMIN_ID, admin=True))
            == "NOT_FOUND"
        )


def test_other_channels_slot_in_as_testers(base_settings: Settings, graph: Graph) -> None:
    sent: list[tuple[str, str, str]] = []

    def notify_tester(*, admin_id: str, campaign: CampaignPublic, test_id: str) -> None:
        sent.append((admin_id, campaign.id, test_id))

    graph.run("CREATE (:Profile {profileId: $a})", a=ADMIN_ID)
    make(graph, "both", channels=["inApp", "notify"], notification={"title": "n", "body": "b"})
    with api_client(
        base_settings, graph, clock=lambda: NOW, self_test_testers={"notify": notify_tester}
    ) as api:
        result = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "both"}, as_=ADMIN_ID, admin=True))
    assert result["channels"] == ["inApp", "notify"]
    assert sent == [(ADMIN_ID, "both", result["testId"])]


def test_a_channel_this_api_cannot_test_is_refused_by_name_before_anything_is_written(
    base_settings: Settings, graph: Graph
) -> None:
    graph.run("CREATE (:Profile {profileId: $a})", a=ADMIN_ID)
    email = {"subject": "s", "title": "t", "body": "b", "ctaLabel": "Open"}
    make(graph, "mail", channels=["inApp", "email"], email=email)
    make(
        graph,
        "all",
        channels=["inApp", "notify", "email"],
        email=email,
        notification={"title": "n", "body": "b"},
    )
    # No email provider and no webhook secret here: neither channel has a tester.
    with api_client(base_settings, graph, clock=lambda: NOW, self_test_testers={}) as api:
        mail = api.mutate("campaigns.sendTestToMe", {"campaignId": "mail"}, as_=ADMIN_ID, admin=True)
        both = api.mutate("campaigns.sendTestToMe", {"campaignId": "all"}, as_=ADMIN_ID, admin=True)
    assert error_code(mail) == "BAD_REQUEST"
    assert "CAMPAIGN_EMAIL_PROVIDER" in mail.json()["error"]["message"]
    assert error_code(both) == "BAD_REQUEST"
    assert {"NOTIFICATIONS_WEBHOOK_SECRET", "CAMPAIGN_EMAIL_PROVIDER"} <= set(
        both.json()["error"]["message"].replace("(", " ").replace(")", " ").split()
    )
    assert graph.run("MATCH ()-[t:CAMPAIGN_TEST]->() RETURN count(t) AS n")[0]["n"] == 0


def test_a_tenant_author_or_publisher_sees_their_own_test(base_settings: Settings, graph: Graph) -> None:
    """The role that lets someone send a test lets them see it: a signed author claim for the test
    campaign's tenant, or a publisher grant there; a viewer, a claim for another tenant and a
    revoked grant do not. The test is the sender's alone."""
    graph.run("UNWIND ['author', 'publisher', 'viewer'] AS id CREATE (:Profile {profileId: id})")
    graph.run("CREATE (:AccessGrant {tenantId: 'default', subject: 'publisher', role: 'publisher'})")
    make(graph, "c1")
    with api_client(base_settings, graph, clock=lambda: NOW) as api:

        def call(kind: str, path: str, data: object, sub: str, tenant: str, roles: list[str]) -> Any:
            token = mint_token(api.settings, profile_id=sub, tenant_id=tenant, roles=roles)
            headers = {"authorization": f"Bearer {token}"}
            if kind == "m":
                return api.http.post(f"/trpc/{path}", json=data, headers=headers)
            return api.http.get(f"/trpc/{path}", params={"input": json.dumps(data)}, headers=headers)

        def mine(sub: str, tenant: str = "default", roles: tuple[str, ...] = ()) -> list[tuple[str, str]]:
            found = ok(call("q", "campaigns.getMyCampaigns", None, sub, tenant, list(roles)))["campaigns"]
            return [(c["campaignId"], c["testId"]) for c in found]

        authored = ok(
            call("m", "campaigns.sendTestToMe", {"campaignId": "c1"}, "author", "default", ["author"])
        )
        published = ok(call("m", "campaigns.sendTestToMe", {"campaignId": "c1"}, "publisher", "default", []))
        assert mine("author", roles=("author",)) == [("c1", authored["testId"])]
        assert mine("publisher") == [("c1", published["testId"])]
        assert mine("viewer", roles=("viewer",)) == []
        assert mine("author", tenant="beta", roles=("author",)) == []  # the claim names another tenant
        assert mine("author") == []  # no role in the campaign's tenant any more
        graph.run("MATCH (g:AccessGrant {subject: 'publisher'}) DELETE g")
        assert mine("publisher") == []
