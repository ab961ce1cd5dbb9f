"""The admin journey's first steps, in the console only: the shell and its headers, signing in with
the keyboard, composing through field errors, saving through an edit conflict and a graph outage,
the email preview and the audience."""

from __future__ import annotations

import re
from functools import partial

import httpx
from playwright.sync_api import Page, expect

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from tests.support.console import (
    api_failure,
    assert_accessible,
    assert_every_control_labelled,
    shot,
    trpc,
)

MEMBERS = [f"m{i:03d}" for i in range(12)]
CAMPAIGN = "spring-launch"


def check_the_shell(page: Page, url: str) -> None:
    """The shell and its headers."""
    shell = page.goto(f"{url}/admin")
    assert shell is not None and shell.status == 200
    csp = shell.headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
    ):
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert shell.headers["cache-control"] == "no-cache"
    script_src = page.evaluate("document.querySelector('script').getAttribute('src')")
    asset = httpx.get(f"{url}{script_src}")
    assert asset.status_code == 200
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert re.search(r"/admin/assets/app-[A-Z0-9]{8,}\.js$", str(asset.url))


def sign_in_with_the_keyboard(page: Page, settings: Settings, admin_token: str) -> None:
    """Sign in with the keyboard alone: a user token is refused, an admin token lets us in."""
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "signin")
    assert_accessible(page, "sign-in")
    user_token = mint_token(settings, profile_id="m000")
    page.keyboard.type(user_token)  # the token box has focus on arrival
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("m000 holds no role in tenant")
    page.get_by_label("Admin bearer token").fill(admin_token)
    page.get_by_label("Admin bearer token").press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") == admin_token
    assert admin_token not in page.url
    expect(page.locator("#whoami-role")).to_have_text("platform admin")
    expect(page.locator("#whoami-tenant")).to_have_text("default")
    expect(page.locator("#session-warning")).to_be_hidden()  # an hour left: nothing to warn of yet
    assert_accessible(page, "campaign list (empty)")
    # A platform admin manages any tenant's roles and keys; its own (the default tenant) first.
    page.get_by_role("link", name="Access and keys").click()
    expect(page.locator("#grants-table caption")).to_have_text("Grants in default")
    expect(page.locator("#keys-table tbody")).to_have_text("No API keys yet.")
    page.get_by_label("Tenant", exact=True).fill("other")
    page.get_by_role("button", name="Show tenant").click()
    expect(page.locator("#keys-table caption")).to_have_text("API keys of other")
    assert_every_control_labelled(page)
    assert_accessible(page, "access and keys")


def compose_through_field_errors(page: Page) -> None:
    """Composer: the API's field error lands beside its field; the banner preview shows the cut."""
    page.get_by_role("link", name="New campaign").first.click()
    expect(page.get_by_role("heading", name="New campaign")).to_be_visible()
    assert_every_control_labelled(page)
    page.get_by_label("Campaign id").fill("Spring Launch!")
    page.get_by_label("Name", exact=True).fill("Spring launch")
    page.get_by_label("Email", exact=True).check()
    page.get_by_label("Title", exact=True).fill("Spring is here")
    page.get_by_label("Body", exact=True).first.fill("New features for everyone.")
    page.get_by_label("Emoji").fill("🌱")
    page.get_by_label("Media type").select_option("youtube")
    page.get_by_label("Media URL (https)").fill("https://www.youtube.com/watch?v=abc")
    page.get_by_label("Action 1 label").fill("Read more")
    page.get_by_label("Action 1 path or URL").fill("/news/spring")
    page.get_by_label("Action 2 path or URL").fill("https://example.org/spring")  # and no label
    long_title = "Spring launch: " + "x" * 60
    page.get_by_label(re.compile(r"^Title \(banner")).fill(long_title)
    page.get_by_label(re.compile(r"^Body \(banner")).fill("Everything new this spring.")
    expect(page.locator("#preview-push .banner-title")).to_have_text(long_title[:64] + "…")
    expect(page.locator("#preview-inapp .card-title")).to_have_text("🌱 Spring is here")
    page.get_by_label("Subject").fill("Spring is here")
    page.get_by_label("Heading").fill("Our spring launch")
    page.locator("[data-path='email.body']").fill("Line one\nLine two")
    page.get_by_label("Hero image URL (https)").fill("http://cdn.example.org/spring.png")
    page.get_by_role("button", name="Create campaign").click()
    # Every field error beside its field, in a sentence naming the field and the rule (messages.ts).
    said = {
        "notification.title": "The notification title can have at most 65 characters.",
        "email.ctaLabel": "The button label is required.",
        "email.heroImageUrl": "Use an https:// address for the hero image URL.",
        "message.actions.1.label": "The label of action 2 is required.",
        "id": "The campaign id may use only lower-case letters, digits and dashes (not first or last),"
        " at most 64.",
    }
    for path, sentence in said.items():
        control = page.locator(f"[data-path='{path}']")
        expect(control).to_have_attribute("aria-invalid", "true")
        expect(page.locator(f"#{control.get_attribute('id')}-error")).to_have_text(sentence)
    expect(page.locator("main [role=alert]").first).to_have_text("Not saved: fix the fields marked below.")
    assert "String should" not in page.locator("main").inner_text()  # the validator's words stay out
    shot(page, "composer-errors")
    assert_accessible(page, "composer with errors")
    # The window is typed in the admin's time; its hint says the UTC instant that will be sent.
    starts = page.get_by_label(re.compile(r"^Starts at \(your time, Europe/Paris\)"))
    starts.fill("2027-03-21T09:00")
    echo = page.locator(f"#{starts.get_attribute('id')}-hint")
    expect(echo).to_contain_text("= 2027-03-21 08:00:00 UTC")
    starts.fill("")
    page.get_by_label("Campaign id").fill(CAMPAIGN)
    page.locator("[data-path='notification.title']").fill("Spring is here")
    page.get_by_label("Button label").fill("See what's new")
    page.get_by_label("Hero image URL (https)").fill("")
    page.get_by_label("Action 2 path or URL").fill("")
    page.get_by_role("button", name="Create campaign").click()
    expect(page.get_by_role("heading", name="Spring launch")).to_be_visible()
    expect(page.locator("#campaign-status")).to_have_text("draft")
    assert_every_control_labelled(page)


def save_through_a_conflict_and_an_outage(page: Page, url: str, admin_token: str) -> None:
    """Another admin saves meanwhile: our save is a CONFLICT, explained, with a reload choice."""
    current = trpc(url, admin_token, "campaigns.get", {"campaignId": CAMPAIGN}, mutation=False)
    edit = {
        "campaignId": CAMPAIGN,
        "expectedUpdatedAt": current["updatedAt"],
        "name": "Spring launch 2026",
    }
    trpc(url, admin_token, "campaigns.update", edit)
    page.get_by_label("Name", exact=True).fill("Spring launch (mine)")
    page.get_by_role("button", name="Save changes").click()
    conflict = page.locator(".conflict")
    expect(conflict).to_contain_text("changed since you opened it")
    expect(conflict).to_contain_text("revision 2")
    # What they changed, in words; then the two ways out.
    expect(conflict.locator("#conflict-changes li")).to_have_text(["Name: now “Spring launch 2026”"])
    expect(conflict.get_by_role("button", name="Keep mine and save over theirs")).to_be_visible()
    shot(page, "conflict", "#definition")
    conflict.get_by_role("button", name="Reload their version").click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("Spring launch 2026")
    page.get_by_label("Description (admins only)").fill("The spring announcement")
    # The graph is out for one save: the console says nothing was changed, and the retry saves.
    outage = partial(api_failure, "SERVICE_UNAVAILABLE", 503, "the graph database is unavailable")
    page.route("**/trpc/campaigns.update?*", lambda route: route.fulfill(status=503, body=outage(),
               content_type="application/json"))  # fmt: skip
    page.get_by_role("button", name="Save changes").click()
    refused = page.locator("#definition [data-code='SERVICE_UNAVAILABLE']")
    expect(refused.locator(".error-words")).to_have_text(
        "The service is unavailable for a moment, so nothing was changed. Try again in a minute; if it"
        " keeps happening, tell whoever runs it."
    )
    expect(refused).to_contain_text("The server said: the graph database is unavailable")
    page.unroute("**/trpc/campaigns.update?*")
    expect(page.get_by_label("Description (admins only)")).to_have_value("The spring announcement")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#definition")).to_contain_text("Saved (revision 3)")
    # Again, and this time keep mine: their description is replaced by ours, nothing else changes.
    current = trpc(url, admin_token, "campaigns.get", {"campaignId": CAMPAIGN}, mutation=False)
    theirs = {"campaignId": CAMPAIGN, "expectedUpdatedAt": current["updatedAt"], "description": "Theirs"}
    trpc(url, admin_token, "campaigns.update", theirs)
    page.get_by_label("Description (admins only)").fill("The spring announcement, mine")
    page.get_by_role("button", name="Save changes").click()
    expect(conflict.locator("#conflict-changes li")).to_have_text(["Description: now “Theirs”"])
    conflict.get_by_role("button", name="Keep mine and save over theirs").click()
    expect(page.locator("#definition")).to_contain_text("Saved (revision 5)")
    kept = trpc(url, admin_token, "campaigns.get", {"campaignId": CAMPAIGN}, mutation=False)
    assert kept["description"] == "The spring announcement, mine" and kept["name"] == "Spring launch 2026"


def preview_the_email(page: Page) -> None:
    """The email, rendered by the server with the worker's renderer, in the sandboxed frame."""
    expect(page.get_by_label("Preview variant")).to_be_hidden()  # no variants: no empty select
    page.get_by_role("button", name="Render email preview").click()
    expect(page.locator("#email-subject")).to_have_text("Spring is here")
    frame = page.frame_locator("#email-frame")
    expect(frame.locator("h1")).to_have_text("Our spring launch")
    expect(frame.get_by_role("link", name="See what's new")).to_have_attribute(
        "href", re.compile(r"^https://app\.campaigns\.test/m/spring-launch\?")
    )
    shot(page, "email-preview", ".email-preview")


def build_the_audience(page: Page) -> None:
    """Audience: preview, add and remove by several sources; a paged member list."""
    audience = page.locator("#audience")
    audience.get_by_label("Source type").select_option("all")  # everyone: no value to type
    expect(audience.get_by_label(re.compile("^Profile ids, DIDs"))).to_be_hidden()
    audience.get_by_label("Source type").select_option("profileIds")
    audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("\n".join([*MEMBERS[:11], "ghost-1"]))
    audience.get_by_role("button", name="Preview count").click()
    expect(page.locator("#audience-count")).to_have_text("11")
    expect(page.locator("#audience-not-found")).to_have_text("ghost-1")
    expect(page.locator("#audience-added")).to_have_text("0")
    audience.get_by_role("button", name="Add to audience").click()
    expect(page.locator("#audience-added")).to_have_text("11")
    audience.get_by_label("Source type").select_option("tag")
    audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("beta")
    audience.get_by_role("button", name="Add to audience").click()
    expect(page.locator("#audience-added")).to_have_text("1")
    audience.get_by_label("Source type").select_option("profileIds")
    audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("m005")
    audience.get_by_role("button", name="Remove from audience").click()
    expect(page.locator("#audience-result")).to_have_text("Removed: 1")
    audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("m005")
    audience.get_by_role("button", name="Add to audience").click()
    expect(page.locator("#audience-added")).to_have_text("1")
    expect(page.locator("#members tbody tr")).to_have_count(10)
    audience.get_by_role("button", name="Next page").click()
    expect(page.locator("#members tbody tr")).to_have_count(2)
    expect(page.locator("#members tbody tr").first).to_contain_text("m010")
    shot(page, "audience", "#audience")
    audience.get_by_role("button", name="Previous page").click()
    expect(page.locator("#members tbody tr").first).to_contain_text("m000")
