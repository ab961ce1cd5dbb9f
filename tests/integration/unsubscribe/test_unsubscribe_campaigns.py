"""An opt-out counts for the campaign whose email carried the link (a version-4 link names it,
signed): getStats' ``unsubscribed``, the recipients export's ``unsubscribedAt``, explain's past, the
opt-out's audit entry and its event. Only in the campaign's own tenant: a person shared by two tenants
who leaves one never counts in the other's stats or names a campaign in its trail or events. Older links
keep working and count for none. Real app, real Neo4j."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.exports import recipient_rows
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.graph.audit import list_audit
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.unsubscribe.tokens import LinkCampaign, UnsubscribeTokens
from tests.conftest import ADMIN_ID
from tests.integration.unsubscribe.test_unsubscribe_per_tenant import (
    _subscribe_everywhere,
    _unsubscribed_events,
)
from tests.support.api import TrpcClient, api_client, ok

SECRET = "integration-unsubscribe-secret-0123456789abcdef"
UID = "5d0f3c1e-2b7d-4c55-9d0e-7f1d2a3b4c5d"
ONE_CLICK = {"content-type": "application/x-www-form-urlencoded"}
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW_STAMP = "2026-03-01T12:00:00.000000Z"
TENANTS = ("north", "river")


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    """Tenants north and river, each with a campaign ``fair`` that emailed the parent both hold."""
    settings = base_settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(SECRET)})
    with api_client(settings, graph, clock=lambda: NOW) as client:
        for tenant in TENANTS:
            ok(
                client.mutate(
                    "tenants.create", {"tenantId": tenant, "name": tenant}, as_=ADMIN_ID, admin=True
                )
            )
        graph.run(
            "CREATE (:Profile {profileId: 'parent', campaignUnsubscribeId: $uid, tenants: $tenants,"
            " announcementEmailOptOut: false, announcementPushOptOut: false})",
            uid=UID,
            tenants=list(TENANTS),
        )
        for tenant in TENANTS:
            data = {"id": "fair", "name": "Fair", "channels": ["inApp"], "message": {"title": "t"}}
            definitions.create_campaign(
                graph, data=CampaignCreate.model_validate(data), tenant_id=tenant, now=NOW
            )
        graph.run(
            "MATCH (p:Profile {profileId: 'parent'}), (c:Campaign {ref: 'fair'})"
            " MERGE (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)"
            " SET m.campaignId = c.id, m.profileId = p.profileId, m.source = 'profileIds', m.addedAt = $at"
            " MERGE (p)-[s:CAMPAIGN_STATE]->(c) SET s.emailedAt = $at",
            at="2026-03-01T11:00:00.000000Z",
        )
        yield client


def _campaign(graph: Graph, tenant: str) -> LinkCampaign:
    [row] = graph.run(
        "MATCH (c:Campaign {ref: 'fair', tenantId: $t}) RETURN c.id AS id, c.createdAt AS at", t=tenant
    )
    return LinkCampaign(row["id"], row["at"])


def _link(graph: Graph, tenant: str, campaign_of: str | None = None) -> str:
    campaign = _campaign(graph, campaign_of or tenant)
    return UnsubscribeTokens(SECRET).issue_for_campaign(UID, tenant, campaign)


def _counts(graph: Graph) -> dict[str, int]:
    policy = Policy(now=NOW, adult_age=18, domain="example.org")
    out = {}
    for tenant in TENANTS:
        stats = get_stats(graph, campaign_id=_campaign(graph, tenant).campaign_id, policy=policy)
        out[tenant] = stats.unsubscribed
        exported = list(
            recipient_rows(graph, campaign_id=_campaign(graph, tenant).campaign_id, policy=policy)
        )
        assert [row["unsubscribedAt"] is not None for row in exported] == [stats.unsubscribed == 1]
    return out


def _trail(graph: Graph, tenant: str) -> list[dict[str, Any]]:
    return [
        entry.model_dump(
            by_alias=True, include={"actor", "via", "procedure", "campaign_id", "target_id", "detail"}
        )
        for entry in list_audit(graph, tenant_id=tenant, actor="parent").records
    ]


def _one_click(api: TrpcClient, token: str, body: str = "List-Unsubscribe=One-Click") -> None:
    response = api.http.post(
        "/campaigns/unsubscribe", params={"token": token}, content=body, headers=ONE_CLICK
    )
    assert response.status_code == 200, response.text


def test_an_opt_out_counts_for_its_campaign_in_its_tenant_only(api: TrpcClient, graph: Graph) -> None:
    _one_click(api, _link(graph, "river"))
    assert _counts(graph) == {"north": 0, "river": 1}
    explained = {
        tenant: explain_recipient(
            graph,
            campaign_id=_campaign(graph, tenant).campaign_id,
            profile_id="parent",
            now=NOW,
            adult_age=18,
        ).past
        for tenant in TENANTS
    }
    assert explained["river"] is not None and explained["river"].unsubscribed_at == NOW_STAMP
    assert explained["north"] is not None and explained["north"].unsubscribed_at is None
    assert _trail(graph, "river") == [
        {
            "actor": "parent", "via": "unsubscribeLink", "procedure": "unsubscribe.oneClick",
            "targetId": "parent", "campaignId": "fair", "detail": {"channel": "email", "scope": "tenant"},
        }
    ]  # fmt: skip
    assert _trail(graph, "north") == []
    # Again, or through north's campaign's link later: river's count stays one, north's opt-out is new.
    _one_click(api, _link(graph, "river"))
    ok(api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": _link(graph, "north")}))
    assert _counts(graph) == {"north": 1, "river": 1}
    [north] = _trail(graph, "north")
    assert (north["procedure"], north["campaignId"]) == ("campaigns.unsubscribeFromAnnouncements", "fair")
    assert len(_trail(graph, "river")) == 1


def test_every_organisation_names_the_campaign_only_in_its_tenants_trail(
    api: TrpcClient, graph: Graph
) -> None:
    _subscribe_everywhere(graph, api.settings)
    done = api.http.post(
        "/campaigns/unsubscribe/browser", params={"token": _link(graph, "river")}, content="scope=all",
        headers=ONE_CLICK,
    )  # fmt: skip
    assert done.status_code == 200, done.text
    assert _counts(graph) == {"north": 0, "river": 1}
    [river] = _trail(graph, "river")
    [north] = _trail(graph, "north")
    assert (river["procedure"], river["campaignId"], river["detail"]["scope"]) == (
        "unsubscribe.page",
        "fair",
        "all",
    )
    assert (north["procedure"], north["campaignId"], north["detail"]["scope"]) == (
        "unsubscribe.page",
        None,
        "all",
    )
    assert _unsubscribed_events(graph) == [
        ("north", {"profileId": "parent", "channel": "email"}),
        ("river", {"profileId": "parent", "channel": "email", "campaignId": "fair"}),
    ]


def test_a_link_counts_only_for_a_campaign_of_its_own_tenant_and_incarnation(
    api: TrpcClient, graph: Graph
) -> None:
    # river's link naming north's campaign (no email carries one; the guard holds if one ever did).
    _one_click(api, _link(graph, "river", campaign_of="north"))
    assert _counts(graph) == {"north": 0, "river": 0}
    assert _trail(graph, "river")[0]["campaignId"] is None
    # A link of a deleted incarnation of north's campaign: the recreated one does not count it.
    gone = LinkCampaign(_campaign(graph, "north").campaign_id, "2026-01-01T00:00:00.000000Z")
    _one_click(api, UnsubscribeTokens(SECRET).issue_for_campaign(UID, "north", gone))
    assert _counts(graph) == {"north": 0, "river": 0}


def test_a_link_sent_before_it_named_campaigns_still_opts_out_and_counts_for_none(
    api: TrpcClient, graph: Graph
) -> None:
    page = api.http.get(
        "/campaigns/unsubscribe", params={"token": UnsubscribeTokens(SECRET).issue(UID, "river")}
    )
    assert page.status_code == 200  # still anonymous: no sign-in, as before
    _one_click(api, UnsubscribeTokens(SECRET).issue(UID, "river"))
    assert _counts(graph) == {"north": 0, "river": 0}
    [entry] = _trail(graph, "river")
    assert (entry["procedure"], entry["campaignId"]) == ("unsubscribe.oneClick", None)
    rows = graph.run(
        "MATCH (:Profile {profileId: 'parent'})-[:HAS_VIEW]->(v:TenantView) RETURN v.tenantId AS t"
    )
    assert [row["t"] for row in rows] == ["river"]
