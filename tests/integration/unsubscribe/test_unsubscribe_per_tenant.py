"""Opting out is per organisation (docs/people.md): a link from tenant B's email opts the person out
of B's announcement email only, on B's view of them; the page names B in its language and offers "from
every organisation" (``scope=all``), the person's deployment-wide opt-out. Events go to the tenants the
opt-out stops. Real app, real Neo4j."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok

SECRET = "integration-unsubscribe-secret-0123456789abcdef"
UID = "2b0f3c1e-2b7d-4c55-9d0e-7f1d2a3b4c5d"
ONE_CLICK = {"content-type": "application/x-www-form-urlencoded"}
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    settings = base_settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(SECRET)})
    with api_client(settings, graph, clock=lambda: NOW) as client:
        for tenant, name in (("north", "Northside Academy"), ("river", "Riverside School")):
            ok(api_mutate(client, "tenants.create", {"tenantId": tenant, "name": name}))
        graph.run(
            "CREATE (:Profile {profileId: 'parent', campaignUnsubscribeId: $uid, tenants: ['north', 'river'],"
            " announcementEmailOptOut: false, announcementPushOptOut: false})",
            uid=UID,
        )
        yield client


def api_mutate(client: TrpcClient, path: str, data: dict[str, Any]) -> Any:
    return client.mutate(path, data, as_=ADMIN_ID, admin=True)


def _opt_outs(graph: Graph) -> dict[str, Any]:
    rows = graph.run(
        "MATCH (p:Profile {profileId: 'parent'}) OPTIONAL MATCH (p)-[:HAS_VIEW]->(v:TenantView)"
        " WITH p, v ORDER BY v.tenantId"
        " RETURN p.announcementEmailOptOut AS shared,"
        " collect(CASE WHEN v IS NOT NULL"
        " THEN [v.tenantId, v.announcementEmailOptOut, v.profileId] END) AS views"
    )
    return {"shared": rows[0]["shared"], "views": {v[0]: (v[1], v[2]) for v in rows[0]["views"]}}


def _link(tenant: str | None) -> str:
    return UnsubscribeTokens(SECRET).issue(UID, tenant)


def _subscribe_everywhere(graph: Graph, settings: Settings) -> None:
    from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint

    for tenant in ("north", "river"):
        create_endpoint(
            graph, settings.secret_box(), tenant_id=tenant, url="https://hooks.invalid/events",
            events=["*"], description=None, now=NOW, audit=None,
        )  # fmt: skip
    subscribers_for(graph).invalidate()


def _unsubscribed_events(graph: Graph) -> list[tuple[str, dict[str, Any]]]:
    rows = graph.run(
        "MATCH (b:WebhookBatch) UNWIND range(0, size(b.types) - 1) AS i WITH b, i"
        " WHERE b.types[i] = 'recipient.unsubscribed' RETURN b.tenantId AS tenant, b.bodies[i] AS body"
        " ORDER BY tenant"
    )
    return [(row["tenant"], json.loads(row["body"])["data"]) for row in rows]


def test_one_click_of_a_tenants_link_opts_out_of_that_tenant_only(api: TrpcClient, graph: Graph) -> None:
    _subscribe_everywhere(graph, api.settings)
    first = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": _link("river")},
        content="List-Unsubscribe=One-Click",
        headers=ONE_CLICK,
    )
    assert first.status_code == 200, first.text
    assert "Riverside School" in first.text
    assert _opt_outs(graph) == {"shared": False, "views": {"river": (True, "parent")}}
    again = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": _link("river")},
        content="List-Unsubscribe=One-Click",
        headers=ONE_CLICK,
    )
    assert again.status_code == 200
    # One event, to the tenant the opt-out stops, the first time only.
    assert _unsubscribed_events(graph) == [("river", {"profileId": "parent", "channel": "email"})]


def test_the_page_names_the_tenant_in_its_language_and_offers_every_organisation(
    api: TrpcClient, graph: Graph
) -> None:
    token = _link("river")
    for lang, words in (
        ("en", "Stop announcement emails from <bdi>Riverside School</bdi>?"),
        ("es", "¿Dejar de recibir correos de anuncios de <bdi>Riverside School</bdi>?"),
        ("fr", "Ne plus recevoir les e-mails d'annonces de <bdi>Riverside School</bdi>"),
        ("ar", "من <bdi>Riverside School</bdi>؟"),
    ):
        headers = {"accept-language": lang}
        page = api.http.get("/campaigns/unsubscribe", params={"token": token}, headers=headers)
        assert page.status_code == 200
        assert words in page.text.replace("&#39;", "'"), lang
        assert 'name="scope" value="tenant" checked' in page.text
        assert 'name="scope" value="all"' in page.text
    assert _opt_outs(graph) == {"shared": False, "views": {}}  # a GET changes nothing

    done = api.http.post("/campaigns/unsubscribe/browser", params={"token": token})
    assert "You will no longer receive announcement emails from <bdi>Riverside School</bdi>." in done.text
    assert _opt_outs(graph) == {"shared": False, "views": {"river": (True, "parent")}}


def test_a_tenants_name_is_escaped_on_the_page(api: TrpcClient, graph: Graph) -> None:
    ok(api_mutate(api, "tenants.update", {"tenantId": "river", "name": "<b>River</b> & Co"}))
    page = api.http.get("/campaigns/unsubscribe", params={"token": _link("river")})
    assert "<bdi>&lt;b&gt;River&lt;/b&gt; &amp; Co</bdi>" in page.text and "<b>River" not in page.text


def test_scope_all_is_the_deployment_wide_opt_out(api: TrpcClient, graph: Graph) -> None:
    _subscribe_everywhere(graph, api.settings)
    done = api.http.post(
        "/campaigns/unsubscribe/browser",
        params={"token": _link("river")},
        content="scope=all",
        headers=ONE_CLICK,
    )
    assert done.status_code == 200
    assert "You will no longer receive announcement emails from any organisation." in done.text
    assert _opt_outs(graph) == {"shared": True, "views": {}}
    assert sorted(t for t, _ in _unsubscribed_events(graph)) == ["north", "river"]


def test_scope_all_in_the_one_click_post_and_trpc(api: TrpcClient, graph: Graph) -> None:
    refused = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": _link("river")},
        content="List-Unsubscribe=One-Click&scope=everything",
        headers=ONE_CLICK,
    )
    assert refused.status_code == 400 and _opt_outs(graph) == {"shared": False, "views": {}}
    ok(api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": _link("north")}))
    assert _opt_outs(graph) == {"shared": False, "views": {"north": (True, "parent")}}
    post = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": _link("river")},
        content="List-Unsubscribe=One-Click&scope=all",
        headers=ONE_CLICK,
    )
    assert post.status_code == 200 and _opt_outs(graph)["shared"] is True


def test_a_link_sent_before_per_tenant_opt_outs_stays_deployment_wide(api: TrpcClient, graph: Graph) -> None:
    page = api.http.get("/campaigns/unsubscribe", params={"token": _link(None)})
    assert "Stop announcement emails?" in page.text and 'name="scope"' not in page.text
    response = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": _link(None)},
        content="List-Unsubscribe=One-Click",
        headers=ONE_CLICK,
    )
    assert response.status_code == 200
    assert _opt_outs(graph) == {"shared": True, "views": {}}
