"""Tenant records reaching what every process sends, over the real API and a real Neo4j: an edit reaches
the rendered email within the TTL without a restart, caps come from the records, and the sender and
branding reach the provider's message."""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.config import Settings
from campaign_engine.delivery.email.compose import compose_email, email_content_for
from campaign_engine.domain.campaign import campaign_from_node
from campaign_engine.domain.tenant import TenantCreate, TenantPatch
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import TenantDirectory, tenants_of
from campaign_engine.graph.tenants import create_tenant, update_tenant
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import build_email_self_tester
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok
from tests.support.delivery import NOW, StepClock
from tests.support.email import UNSUBSCRIBE_SECRET, add_email_members, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin
from tests.support.tenant_records import (
    EMAIL_CAMPAIGN,
    mutate,
    seeded,
)


def test_an_edit_reaches_every_process_rendered_email_within_the_ttl(
    base_settings: Settings, graph: Graph
) -> None:
    settings = seeded(base_settings)
    with api_client(settings, graph) as api:
        token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, tenant_id="acme")
        headers = {"authorization": f"Bearer {token}"}
        assert (
            ok(api.http.post("/trpc/campaigns.create", json=EMAIL_CAMPAIGN, headers=headers))["tenantId"]
            == "acme"
        )
        # Another process: its own directory, its own clock for the TTL.
        elapsed = [0.0]
        other = TenantDirectory(graph, default_tenant="default", ttl_seconds=5, monotonic=lambda: elapsed[0])
        campaign = campaign_from_node(graph.run("MATCH (c:Campaign {id: 'news'}) RETURN c {.*} AS c")[0]["c"])

        def rendered_elsewhere() -> tuple[str, str]:
            content = email_content_for(
                campaign, origins=other.app_origins(), tenants=other.branding(), default_tenant="default"
            )
            return content.cta_url, content.template.html

        def preview() -> dict[str, Any]:  # in acme, the campaign's tenant
            params = {"input": json.dumps({"campaignId": "news"})}
            return dict(ok(api.http.get("/trpc/campaigns.previewEmail", params=params, headers=headers)))

        cta, html = rendered_elsewhere()
        assert cta.startswith("https://acme.example/m/news?") and "Acme Academy" in html
        assert "https://acme.example/m/news?" in preview()["html"]

        ok(
            mutate(
                api,
                "tenants.update",
                {
                    "tenantId": "acme",
                    "name": "Acme Renamed",
                    "appOrigin": "https://news.acme.example",
                    "primaryColor": "#abcdef",
                    "emailFrom": "Acme <news@acme.example>",
                },
            )
        )
        # The process that made the edit renders it at once.
        shown = preview()["html"]
        assert "https://news.acme.example/m/news?" in shown and "Acme Renamed" in shown and "#abcdef" in shown
        # Another process keeps its cached records until the TTL, then renders the edit: no restart.
        elapsed[0] = 4.9
        assert rendered_elsewhere()[0].startswith("https://acme.example/")
        elapsed[0] = 5.0
        cta, html = rendered_elsewhere()
        assert cta.startswith("https://news.acme.example/m/news?") and "Acme Renamed" in html
        # The tenant's sender rides on each message to the provider.
        content = email_content_for(
            campaign, origins=other.app_origins(), tenants=other.branding(), default_tenant="default"
        )
        tokens = UnsubscribeTokens.from_settings(
            settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(UNSUBSCRIBE_SECRET)})
        )
        message = compose_email(
            content, key="p1", to="p1@example.com", unsubscribe_id="u1", tokens=tokens, domain_name="c.test"
        )
        assert message.sender == "Acme <news@acme.example>"


def test_a_tenant_created_after_the_load_is_read_at_once_and_a_missing_one_once_a_second(
    graph: Graph,
) -> None:
    """The TTL covers edits; a tenant the cache lacks is read again at its first lookup (its campaign
    can only be sent once its record exists), and a tenant without a record at most once a second."""
    elapsed = [0.0]
    directory = TenantDirectory(
        graph, default_tenant="default", ttl_seconds=3600, monotonic=lambda: elapsed[0]
    )
    assert "fresh" not in directory.records()

    def create(tenant_id: str) -> None:
        data = TenantCreate.model_validate({"tenantId": tenant_id, "name": tenant_id.title(), "emailFrom":
                                            f"{tenant_id} <news@{tenant_id}.example>"})  # fmt: skip
        create_tenant(graph, data=data, now=NOW, audit=None)

    create("fresh")
    assert directory.names()["fresh"] == "Fresh"  # within the TTL of the load that lacked it
    assert directory.email_from("fresh") == "fresh <news@fresh.example>"
    assert directory.names().get("ghost") is None  # looked for now, and not found
    create("ghost")
    elapsed[0] = 0.9
    assert directory.names().get("ghost") is None and directory.email_from("ghost") is None  # not yet
    elapsed[0] = 1.0
    assert directory.names().get("ghost") == "Ghost"


def test_caps_come_from_the_records_with_the_default_tenants_as_star(
    base_settings: Settings, graph: Graph
) -> None:
    directory = TenantDirectory(graph, default_tenant="default", ttl_seconds=0)
    with api_client(seeded(base_settings), graph) as api:
        caps = directory.frequency_caps()
        assert set(caps) == {"*", "default", "acme"}
        assert caps["*"]["email"].max == 3 and caps["acme"]["notify"].max == 1
        ok(mutate(api, "tenants.update", {"tenantId": "default", "frequencyCaps": {}}))
        assert set(directory.frequency_caps()) == {"acme"}  # no default caps: no "*"


def test_the_tenants_sender_and_branding_reach_the_providers_message(
    base_settings: Settings, graph: Graph
) -> None:
    with PostmarkStandin() as postmark:
        settings = email_settings(base_settings, postmark.url, postmark.token)
        tester = build_email_self_tester(settings, graph, clock=StepClock())
        assert tester is not None
        make_email_campaign(graph, status="draft")  # the default tenant, seeded from the settings
        add_email_members(graph, "c1", [ADMIN_ID], member=False)

        def sent() -> dict[str, Any]:
            send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
            return postmark.accepted[-1]

        first = sent()
        assert first["From"] == "news@campaigns.test" and "/c?token=" in first["HtmlBody"]  # a tracked CTA
        patch = TenantPatch.model_validate(
            {"tenantId": "default", "name": "Tee School", "emailFrom": "Tee School <tee@campaigns.test>"}
        )
        update_tenant(graph, patch=patch, now=NOW, audit=None)
        tenants_of(graph, settings).invalidate()  # what tenants.update does after its commit
        second = sent()
        assert second["From"] == "Tee School <tee@campaigns.test>" and "Tee School" in second["HtmlBody"]
        tester._provider.close()
