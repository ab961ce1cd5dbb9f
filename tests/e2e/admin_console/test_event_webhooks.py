"""Event webhooks in the console: a tenant admin subscribes a real loopback receiver (it verifies every
POST's Standard Webhooks signature with the secret the screen showed once), an event it subscribed to
shows as a delivery with its status and latency, Replay sends it again with the same webhook-id, and
after a rotation (done at phone width) the next event verifies with the new secret alone. A platform
admin acting in the tenant deletes it, after a confirmation. A viewer is not offered the screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.console import (
    AUTUMN,
    TENANT,
    Watch,
    assert_accessible,
    assert_every_control_labelled,
    new_context,
    shot,
    signed_in,
    tenant_alpha,
    tenant_token,
    trpc,
    wait_for,
)
from tests.support.delivery import ThreadServer
from tests.support.event_webhooks import EventReceiver

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]

LATENCY = re.compile(r"^\d+ ms$")


def _open_screen(page: Page) -> None:
    page.get_by_role("link", name="Event webhooks").click()
    expect(page.get_by_role("heading", name="Event webhooks")).to_be_visible()


def test_a_tenant_admin_subscribes_an_endpoint_sees_its_deliveries_replays_and_rotates(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    url, settings, _ = stack
    tenant_alpha(url, settings)
    admin = tenant_token(settings, "ada", "admin")
    receiver = EventReceiver()

    # --- a viewer: no link, and the screen says what it needs
    context, page, watch = signed_in(browser, url, tenant_token(settings, "vic", "viewer"))
    try:
        expect(page.get_by_role("link", name="Event webhooks")).to_have_count(0)
        page.goto(f"{url}/admin#/webhooks")
        expect(page.locator("main .role-note")).to_have_text("Event webhooks need the admin role.")
        expect(page.locator("#webhooks-table, #webhook-create")).to_have_count(0)
        watch.assert_clean()
    finally:
        context.close()

    with ThreadServer(receiver.app()) as server:
        hook = f"{server.url}/events"
        # --- desktop: subscribe, see the delivery, change the events, replay
        context, page, watch = signed_in(browser, url, admin)
        try:
            _open_screen(page)
            expect(page.locator("#webhooks-table tbody")).to_contain_text("No endpoints yet.")
            creating = page.locator("#webhook-create-form")
            creating.get_by_role("button", name="Create endpoint").click()  # nothing filled: said, not sent
            refused = page.locator("#webhook-create-result [role='alert']")
            expect(refused).to_contain_text("nothing was created")
            typed = creating.get_by_label("Endpoint URL")
            typed.fill("crm.school.example/hooks")  # the API refuses it: said in words on the field
            creating.get_by_label("campaign.created").check()
            creating.get_by_role("button", name="Create endpoint").click()
            expect(page.locator(f"#{typed.get_attribute('id')}-error")).to_have_text(
                "The endpoint URL must be a web address like https://crm.school.example/hooks."
            )
            assert trpc(url, admin, "webhookEndpoints.list", None, mutation=False)["records"] == []
            typed.fill(hook)
            creating.get_by_role("button", name="Create endpoint").click()
            secret = page.locator("#webhook-secret").input_value()
            expect(creating.get_by_label("campaign.created")).not_to_be_checked()  # the form is blank again
            assert secret.startswith("whsec_")
            receiver.secrets.append(secret)
            row = page.locator("#webhooks-table tr[data-endpoint]")
            expect(row).to_have_count(1)
            expect(row.locator("[data-field='events']")).to_have_text("campaign.created")
            expect(row.locator("[data-field='state']")).to_have_text("Enabled")
            listed = trpc(url, admin, "webhookEndpoints.list", None, mutation=False)["records"]
            assert [e["url"] for e in listed] == [hook] and "whsec_" not in str(listed)
            page.get_by_role("button", name="I have stored it, hide the secret").click()
            expect(page.locator("#webhook-secret")).to_have_count(0)  # never shown again

            trpc(url, admin, "campaigns.create", AUTUMN)  # an event the endpoint subscribed to
            wait_for("the receiver to get campaign.created", lambda: len(receiver.received) == 1)
            event_id = receiver.received[0]["id"]
            assert receiver.received[0]["event"]["type"] == "campaign.created"
            delivery = page.locator(f"#deliveries-table tr[data-event='{event_id}']")
            expect(delivery.locator("[data-field='status']")).to_have_text("Delivered")  # the screen re-reads
            expect(delivery.locator("[data-field='http']")).to_have_text("204")
            expect(delivery.locator("[data-field='latency']")).to_have_text(LATENCY)
            expect(delivery.locator("[data-field='attempts']")).to_have_text("1")

            editing = page.locator("#webhook-edit")
            editing.get_by_label("campaign.updated").check()
            editing.get_by_role("button", name="Save endpoint").click()
            saved = page.locator("#webhook-endpoint-result")
            expect(saved).to_contain_text("campaign.created, campaign.updated")
            stored = trpc(url, admin, "webhookEndpoints.list", None, mutation=False)["records"][0]
            assert stored["events"] == ["campaign.created", "campaign.updated"] and stored["enabled"]
            assert_every_control_labelled(page)
            shot(page, "webhooks-delivery")
            assert_accessible(page, "webhooks")

            delivery.get_by_role("button", name=f"Replay campaign.created {event_id}").click()
            expect(page.locator("#deliveries-result")).to_contain_text("Queued 1 event again")
            wait_for("the replayed event", lambda: len(receiver.received) == 2)
            assert receiver.received[1]["id"] == event_id  # the same webhook-id: a receiver may drop it
            expect(delivery.locator("[data-field='attempts']")).to_have_text("2")
            watch.assert_clean()
        finally:
            context.close()

        # --- phone width: rotate the secret; the next event verifies with the new one alone; delete
        context = new_context(browser, 390, 844)
        try:
            page = context.new_page()
            watch = Watch(page, url)
            page.goto(f"{url}/admin#token={admin}")
            page.goto(f"{url}/admin#/webhooks")
            expect(page.get_by_role("heading", name="Event webhooks")).to_be_visible()
            page.get_by_role("button", name=f"Manage {hook}").click()
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Rotate secret").click()
            rotated = page.locator("#webhook-secret").input_value()
            assert rotated.startswith("whsec_") and rotated != secret
            receiver.secrets[:] = [rotated]  # the receiver switched: the old secret verifies nothing here
            earlier = page.get_by_role("button", name=f"Replay campaign.created {event_id}")
            earlier.focus()  # someone on the rows while the screen re-reads them
            trpc(url, admin, "campaigns.update", {"campaignId": AUTUMN["id"], "name": "Autumn news, updated"})
            wait_for("the event after the rotation", lambda: len(receiver.received) == 3)
            after = receiver.received[2]
            assert after["event"]["type"] == "campaign.updated" and after["verifiedBy"] == [rotated]
            updated = page.locator(f"#deliveries-table tr[data-event='{after['id']}']")
            expect(updated.locator("[data-field='status']")).to_have_text("Delivered")
            expect(earlier).to_be_focused()  # the new row came in around it
            assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the table scrolls
            shot(page, "webhooks-phone", "viewport")
            shot(page, "webhooks-phone-deliveries", "#deliveries")
            assert_accessible(page, "webhooks-phone")
            watch.assert_clean()
        finally:
            context.close()

        # --- a platform admin acting in the tenant: sees its endpoint and deletes it, after confirming
        context, page, watch = signed_in(
            browser, url, mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
        )
        try:
            expect(page.locator(f"#acting-tenant option[value='{TENANT}']")).to_have_count(1)
            page.get_by_label("Tenant to act in").select_option(TENANT)
            expect(page.locator("#acting-tenant")).to_have_value(TENANT)
            _open_screen(page)
            expect(page.locator("#webhooks-table caption")).to_have_text(f"Endpoints of {TENANT}")
            page.get_by_role("button", name=f"Manage {hook}").click()
            page.once("dialog", lambda dialog: dialog.dismiss())
            page.get_by_role("button", name="Delete endpoint").click()  # not confirmed: kept
            assert len(trpc(url, admin, "webhookEndpoints.list", None, mutation=False)["records"]) == 1
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Delete endpoint").click()
            expect(page.locator("#webhooks-result")).to_contain_text(f"Deleted the endpoint {hook}")
            expect(page.locator("#webhooks-table tbody")).to_contain_text("No endpoints yet.")
            assert trpc(url, admin, "webhookEndpoints.list", None, mutation=False)["records"] == []
            watch.assert_clean()
        finally:
            context.close()
