"""Signing in with the organisation's OpenID provider, as make dev runs it (devidp/: node-oidc-provider):
a platform admin signs in, creates a tenant, acts in it from the header's picker and grants a publisher
there; the publisher signs in in a fresh browser at phone width and lands in that tenant; the session is
renewed silently (prompt=none) with nothing on the page moving; the audit entries name the OIDC subject
and the acting tenant; no code or token reaches the address bar, the provider's log or a request URL."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.e2e.admin_console.conftest import IDP_TOKEN_SECONDS, Idp
from tests.support.console import Watch, assert_accessible, new_context, shot, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]

TOKEN = "sessionStorage.getItem('campaign-engine.admin-token')"
NEW_TENANT = "oidc-school"
PUBLISHER = "p-olga"


def _claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def _sign_in(page: Page, url: str, idp: Idp, profile_id: str, *, screenshot: str | None = None) -> str:
    """From the console's sign-in screen through the provider's page and back; the token it holds."""
    page.goto(f"{url}/admin")
    page.get_by_role("button", name=f"Sign in with {idp.issuer.removeprefix('http://')}").click()
    expect(page.get_by_role("heading", name="Sign in to the campaigns console")).to_be_visible()
    if screenshot:
        shot(page, screenshot, "viewport")
    if profile_id == ADMIN_ID:
        page.get_by_role("button", name=f"Sign in as {ADMIN_ID} (platform admin)").click()
    else:  # offered once granted (the provider reads the grants on each sign-in), and typed here
        offered = f"Sign in as {profile_id} (publisher in {NEW_TENANT})"
        expect(page.locator("#dev-users")).to_contain_text(offered)
        page.get_by_label("Profile id").fill(profile_id)
        page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
    assert page.evaluate("location.hash") == "#/"  # the code left the address bar
    assert page.evaluate("sessionStorage.getItem('campaign-engine.oidc-pending')") is None
    token = str(page.evaluate(TOKEN))
    claims = _claims(token)
    assert (claims["sub"], claims["iss"]) == (profile_id, idp.issuer)
    return token


def _refused_before_the_grant(page: Page, url: str, idp: Idp) -> None:
    """A typed id that is neither a platform admin nor granted a role: the provider refuses it, says
    why on its page, and offers only the dev users (here the platform admin)."""
    page.goto(f"{url}/admin")
    page.get_by_role("button", name=f"Sign in with {idp.issuer.removeprefix('http://')}").click()
    expect(page.get_by_role("heading", name="Sign in to the campaigns console")).to_be_visible()
    expect(page.get_by_role("main")).to_contain_text("It signs in the dev users only")
    expect(page.locator("#dev-users button")).to_have_text([f"Sign in as {ADMIN_ID} (platform admin)"])
    page.get_by_label("Profile id").fill(PUBLISHER)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text(f"{PUBLISHER} is not a dev user")
    assert_accessible(page, "the provider refusing an id without a grant")
    shot(page, "oidc-provider-refuses", "viewport")


def test_people_sign_in_with_the_provider_and_act_in_the_tenant_picked(
    oidc_stack: tuple[str, Settings], idp: Idp, browser: Browser, graph: Graph
) -> None:
    url, _ = oidc_stack
    admin_context = new_context(browser)
    phone = new_context(browser, width=390, height=844)
    seen: list[str] = []
    try:
        page = admin_context.new_page()
        watch = Watch(page, url)
        page.on("request", lambda r: seen.append(r.url))
        admin_token = _sign_in(page, url, idp, ADMIN_ID, screenshot="oidc-provider-sign-in")
        expect(page.locator("#whoami-role")).to_have_text("platform admin")

        # The provider signs in the dev users only: before the grant, the publisher-to-be is refused.
        phone_page = phone.new_page()
        phone_page.on("request", lambda r: seen.append(r.url))
        _refused_before_the_grant(phone_page, url, idp)

        # A new tenant, then the header's picker acts in it on every screen.
        page.goto(f"{url}/admin#/tenant")
        page.get_by_label("New tenant id").fill(NEW_TENANT)
        page.get_by_label("New tenant name").fill("OIDC School")
        page.get_by_role("button", name="Create tenant").click()
        wait_for(
            "the tenant created",
            lambda: bool(
                graph.run("MATCH (t:Tenant {tenantId: $id}) RETURN t.tenantId AS id", id=NEW_TENANT)
            ),
        )
        page.goto(f"{url}/admin#/")
        page.get_by_label("Tenant to act in").select_option(NEW_TENANT)
        expect(page.get_by_label("Tenant to act in")).to_have_value(NEW_TENANT)
        page.goto(f"{url}/admin#/access")
        expect(page.get_by_label("Tenant to act in")).to_have_value(NEW_TENANT)
        page.get_by_label("Profile id").fill(PUBLISHER)
        page.get_by_label("Role", exact=True).select_option("publisher")
        page.get_by_role("button", name="Grant role").click()
        expect(page.locator("#grants")).to_contain_text(PUBLISHER)
        assert_accessible(page, "access, acting in a picked tenant")
        shot(page, "oidc-acting-tenant", "viewport")

        # The publisher: a fresh browser at phone width, the provider's page, then their own tenant.
        first = _sign_in(phone_page, url, idp, PUBLISHER)
        expect(phone_page.locator("#whoami-tenant")).to_have_text(NEW_TENANT)
        expect(phone_page.locator("#whoami-role")).to_have_text("publisher")
        assert_accessible(phone_page, "campaigns, a publisher signed in with the provider")
        shot(phone_page, "oidc-publisher-phone", "viewport")

        # Renewed without a word before it ends: a new token, the same page, no dialog.
        phone_page.goto(f"{url}/admin#/new")
        phone_page.get_by_label("Campaign id").fill("kept-while-renewed")
        wait_for("a silent renewal", lambda: phone_page.evaluate(TOKEN) != first)
        renewed = str(phone_page.evaluate(TOKEN))
        assert _claims(renewed)["exp"] > _claims(first)["exp"] and _claims(renewed)["sub"] == PUBLISHER
        assert _claims(first)["exp"] - _claims(first)["iat"] == IDP_TOKEN_SECONDS
        expect(phone_page.get_by_label("Campaign id")).to_have_value("kept-while-renewed")
        expect(phone_page.locator("#session-renew")).not_to_be_visible()
        expect(phone_page.locator("#session-warning")).to_be_hidden()
        assert watch.errors == []
    finally:
        admin_context.close()
        phone.close()

    # The audit entries name the provider's subject and the tenant acted in.
    rows = graph.run(
        "MATCH (a:AuditEntry) WHERE a.procedure IN ['tenants.create', 'access.grant'] "
        "RETURN a.procedure AS procedure, a.actor AS actor, a.tenantId AS tenant ORDER BY a.at"
    )
    assert {(r["procedure"], r["actor"], r["tenant"]) for r in rows} >= {
        ("access.grant", ADMIN_ID, NEW_TENANT)
    }
    # No code or token in a request URL (fragments never leave the browser) or in the provider's log.
    log = Path(idp.log).read_text()
    for token in (admin_token, first, renewed):
        assert token not in log and all(token not in u for u in seen)
    assert "code=" not in log and not [u for u in seen if "code=" in u or "access_token" in u]
