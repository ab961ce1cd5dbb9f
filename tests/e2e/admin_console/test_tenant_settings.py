"""Tenant settings: a platform admin creates a tenant and edits another's caps and approval policy
(its colour on the email layout screen, the one editor of the logo and colours, which settings links
to; a bad origin and a half-filled cap refused on their fields, nothing saved), a tenant admin reads
its record without a save control, a viewer is not offered the screen."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.console import (
    TENANT,
    assert_accessible,
    assert_every_control_labelled,
    shot,
    signed_in,
    tenant_alpha,
    tenant_token,
    trpc,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


def test_tenant_settings_are_edited_by_platform_admins_and_read_by_tenant_admins(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    """Tenant records from the console: a platform admin creates a tenant, picks one,
    sets its primary colour and approval policy (read back through the API); a bad origin shows the
    server's own message on that field and saves nothing; a tenant admin reads the record with no save
    control; a viewer is not offered the screen."""
    url, settings, _ = stack
    tenant_alpha(url, settings)
    platform = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    table = {
        path.removeprefix("/trpc/"): op["x-access"]
        for path, methods in httpx.get(f"{url}/openapi.json").json()["paths"].items()
        for op in methods.values()
    }
    assert table["tenants.get"] == "admin" and table["tenants.update"] == "platform"

    # --- a viewer: no link to the screen, and the screen itself says what it needs
    context, page, watch = signed_in(browser, url, tenant_token(settings, "vic", "viewer"))
    try:
        expect(page.get_by_role("link", name="Tenant settings")).to_have_count(0)
        page.goto(f"{url}/admin#/tenant")
        expect(page.locator("main .role-note")).to_have_text("Tenant settings need the admin role.")
        expect(page.locator("#tenant-record")).to_have_count(0)
        watch.assert_clean()
    finally:
        context.close()

    # --- a platform admin: creates a tenant, picks alpha, sets colour and approval, then a bad origin
    context, page, watch = signed_in(browser, url, platform)
    try:
        page.get_by_role("link", name="Tenant settings").click()
        expect(page.get_by_role("heading", name="Tenant settings")).to_be_visible()
        creating = page.locator("#tenant-create")
        creating.get_by_label("New tenant id").fill("beta")
        creating.get_by_label("New tenant name").fill("Beta school")
        creating.get_by_role("button", name="Create tenant").click()
        expect(page.locator("#tenant-record[data-tenant='beta']")).to_be_visible()
        expect(page.get_by_label("Display name")).to_have_value("Beta school")
        assert (
            trpc(url, platform, "tenants.get", {"tenantId": "beta"}, mutation=False)["name"] == "Beta school"
        )

        page.get_by_label("Tenant", exact=True).select_option(TENANT)
        record = page.locator(f"#tenant-record[data-tenant='{TENANT}']")
        expect(record.get_by_label("Display name")).to_have_value("Alpha")
        expect(page.locator("#approval-sentence")).to_have_text(
            "No approval policy: a publisher sends alone, whatever the audience."
        )
        # The logo and colours are edited in one place, the email layout screen (with its preview):
        # here they are read-only, with a link there.
        expect(record.get_by_label("Primary colour")).not_to_be_editable()
        record.get_by_role("link", name=f"Email layout of {TENANT}").click()
        layout = page.locator("#layout-form")
        expect(page.locator("#layout-tenant")).to_contain_text("How Alpha's announcement emails look")
        layout.get_by_label("Primary colour").fill("#0b7285")
        page.get_by_role("button", name="Save layout").click()
        expect(page.locator("#layout-result")).to_have_text("Saved the layout of Alpha.")
        page.go_back()
        expect(record.get_by_label("Primary colour")).to_have_value("#0b7285")
        record.get_by_label("Approval from (recipients)").fill("50")
        expect(record.get_by_label("Track email clicks")).to_be_checked()  # on by default
        record.get_by_label("Track email clicks").uncheck()
        expect(page.locator("#approval-sentence")).to_have_text(
            "Sends reaching 50 recipients need a second publisher."
        )
        assert_every_control_labelled(page)
        record.get_by_role("button", name="Save tenant settings").click()
        expect(page.locator("#tenant-saved")).to_contain_text(f"Saved the settings of {TENANT}")
        stored = trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False)
        assert stored["primaryColor"] == "#0b7285" and stored["approval"] == {"minRecipients": 50}
        assert stored["clickTracking"] is False
        expect(record.get_by_label("Track email clicks")).not_to_be_checked()
        assert stored["appOrigin"] is None and stored["name"] == "Alpha"  # only what changed was sent
        expect(record.get_by_label("Primary colour")).to_have_value("#0b7285")
        shot(page, "tenant-settings", "#main")
        assert_accessible(page, "tenant-settings")

        # A bad origin: the rule in words on that field (the server's own words on hover), the rest of the
        # form as typed, nothing saved.
        bad = "http://evil.example"
        refused = httpx.post(f"{url}/trpc/tenants.update", json={"tenantId": TENANT, "appOrigin": bad},
                             headers={"authorization": f"Bearer {platform}"})  # fmt: skip
        assert refused.status_code == 400
        message = refused.json()["error"]["data"]["issues"][0]["message"]
        origin = record.get_by_label("App origin")
        origin.fill(bad)
        record.get_by_label("Email sender").fill("news@alpha.example")
        record.get_by_role("button", name="Save tenant settings").click()
        error = page.locator(f"#{origin.get_attribute('id')}-error")
        expect(error).to_have_text(
            "The app origin must be exactly https://host[:port], like https://app.school.example, with no"
            " path (http only for localhost)."
        )
        expect(error).to_have_attribute("title", f"The server said: {message}")
        expect(origin).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#tenant-result [role='alert']")).to_contain_text("Not saved")
        expect(page.locator("#tenant-saved")).to_be_empty()
        after = trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False)
        assert after == stored  # neither the origin nor the valid sender sent with it was written
        shot(page, "tenant-bad-origin", "#tenant-record")
        assert_accessible(page, "tenant-bad-origin")

        # A cap with no window: the server's "required" lands on the window field; completed, it saves.
        origin.fill("https://app.alpha.example")
        record.get_by_label("Notification cap: at most").fill("3")
        record.get_by_role("button", name="Save tenant settings").click()
        window = record.get_by_label("Notification cap window (seconds)")
        expect(window).to_have_attribute("aria-invalid", "true")
        expect(page.locator(f"#{window.get_attribute('id')}-error")).not_to_be_empty()
        expect(error).to_be_hidden()
        assert trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False) == stored
        window.fill("86400")
        record.get_by_role("button", name="Save tenant settings").click()
        expect(page.locator("#tenant-saved")).to_contain_text(f"Saved the settings of {TENANT}")
        capped = trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False)
        assert capped["frequencyCaps"] == {"notify": {"max": 3, "windowSeconds": 86400}}
        assert (
            capped["appOrigin"] == "https://app.alpha.example" and capped["emailFrom"] == "news@alpha.example"
        )
        assert capped["primaryColor"] == "#0b7285" and capped["approval"] == {"minRecipients": 50}

        # Emptying an optional field clears it (null); emptying a cap clears the caps ({}).
        record.get_by_label("Email sender").fill("")
        record.get_by_label("Notification cap: at most").fill("")
        record.get_by_label("Notification cap window (seconds)").fill("")
        record.get_by_role("button", name="Save tenant settings").click()
        expect(page.locator("#tenant-saved")).to_contain_text(f"Saved the settings of {TENANT}")
        cleared = trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False)
        assert cleared["emailFrom"] is None and cleared["frequencyCaps"] == {}
        assert cleared["appOrigin"] == "https://app.alpha.example" and cleared["primaryColor"] == "#0b7285"
        watch.assert_clean()
    finally:
        context.close()

    # --- a tenant admin: its own record, read-only, no save control, no picker, no create
    context, page, watch = signed_in(browser, url, tenant_token(settings, "ada", "admin"))
    try:
        page.get_by_role("link", name="Tenant settings").click()
        record = page.locator(f"#tenant-record[data-tenant='{TENANT}']")
        expect(record.get_by_label("Primary colour")).to_have_value("#0b7285")
        expect(record.get_by_role("link", name=f"Email layout of {TENANT}")).to_have_attribute(
            "href", f"#/layout/{TENANT}"
        )
        expect(record.get_by_label("Approval from (recipients)")).to_have_value("50")
        expect(page.locator("#approval-sentence")).to_have_text(
            "Sends reaching 50 recipients need a second publisher."
        )
        for label in ("Display name", "Primary colour", "App origin", "Approval from (recipients)"):
            expect(record.get_by_label(label)).not_to_be_editable()
        expect(page.get_by_role("button", name="Save tenant settings")).to_have_count(0)
        expect(page.get_by_role("button", name="Create tenant")).to_have_count(0)
        expect(page.get_by_label("Tenant", exact=True)).to_have_count(0)
        expect(record.locator(".role-note")).to_have_text(
            "Changing tenant settings needs a platform admin; this record is read-only."
        )
        shot(page, "tenant-read-only", "#main")
        assert_accessible(page, "tenant-read-only")
        watch.assert_clean()
    finally:
        context.close()
