"""The admin console at /admin in a real browser: Debian's Chromium, driven by Playwright.

The API (uvicorn, in a thread), the reference inbox (uvicorn, in a thread), the worker and the SMTP
catcher (OS processes, ``campaign-engine worker`` / ``smtp-catcher``) run against the session's real
Neo4j and one durable local queue file. The journey goes through the console only, the way an admin
would: sign in, create (with a validation error and an edit conflict on the way), audience by several
sources, email preview, send a test, review, confirm, watch the dispatch complete, read the stats.
Two other actors use the public API directly, as they would: a second admin who edits the campaign
behind the first one's back, and members whose apps record engagement.

Roles get their own journeys in tenant ``alpha``: a viewer is offered nothing that writes, an
author creates and reviews but cannot send, a tenant admin grants and revokes a role and creates a key
(shown once, copied, then seen in use and revoked), and a send the tenant's approval policy holds back
is approved from the Approvals list by a second publisher (the requester is not offered Approve, and an
approval of a stale preview is refused). Tenant settings: a platform admin creates a tenant and edits
another's colour, caps and approval policy (a bad origin and a half-filled cap refused on their fields,
nothing saved), a tenant admin reads its record without a save control, a viewer is not offered the
screen.

It fails on any console error, page error, CSP violation (a listener injected into every frame from
``admin_console_watch.js``) or request that leaves the server's origin. Screenshots of each screen go to
``tests/artifacts/admin-*.png``. The assets must be built (``make admin-assets``; ``make test`` does).
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, expect
from pydantic import SecretStr

from campaign_engine.api.admin_console import ASSETS_DIR, admin_console_router
from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import assigned_variant
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, free_port
from tests.support.browser import ARTIFACTS
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import WEBHOOK_SECRET, inbox_server
from tests.support.processes import REPO_ROOT, CliProcess
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e
# The machine is shared and slow at times: every wait of the journey gets the same generous bound.
expect.set_options(timeout=20_000)

WATCH_SCRIPT = Path(__file__).with_name("admin_console_watch.js")
UNSUBSCRIBE_SECRET = "admin-console-unsubscribe-secret-0123456789"
ORIGINS = {"default": "https://app.campaigns.test"}
MEMBERS = [f"m{i:03d}" for i in range(12)]
CAMPAIGN = "spring-launch"
DEADLINE = 60.0


wait_for = partial(wait_until, timeout=DEADLINE, every=0.1)


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[tuple[str, Settings, Path]]:
    """API + inbox in threads, worker + SMTP catcher as processes; yields (api url, settings, mailbox)."""
    mailbox = tmp_path / "mail"
    smtp_port = free_port()
    queue_path = tmp_path / "queue.sqlite3"
    with inbox_server(tmp_path) as inbox:
        settings = base_settings.model_copy(
            update={
                "campaign_local_queue_path": str(queue_path),
                "notifications_webhook_url": f"{inbox.url}/api/notifications/send",
                "notifications_webhook_secret": SecretStr(WEBHOOK_SECRET),
                "campaign_allow_private_webhooks": True,
                "campaign_local_development": True,
                "campaign_email_provider": "smtp",
                "smtp_host": "127.0.0.1",
                "smtp_port": smtp_port,
                "email_from": "news@campaigns.test",
                "campaign_unsubscribe_secret": SecretStr(UNSUBSCRIBE_SECRET),
                "campaign_app_origins": ORIGINS,
                "campaign_dispatch_page_size": 5,  # 12 recipients: three pages per channel
                "campaign_dispatch_delay_seconds": 0,
            }
        )
        keep = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_", "SMTP_", "EMAIL_", "DOMAIN_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        env.update(
            {
                "NEO4J_URI": settings.neo4j_uri,
                "NEO4J_USER": settings.neo4j_user,
                "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
                "CAMPAIGN_QUEUE_BACKEND": "local",
                "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
                "NOTIFICATIONS_WEBHOOK_URL": f"{inbox.url}/api/notifications/send",
                "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
                "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
                "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
                "CAMPAIGN_EMAIL_PROVIDER": "smtp",
                "SMTP_HOST": "127.0.0.1",
                "SMTP_PORT": str(smtp_port),
                "EMAIL_FROM": "news@campaigns.test",
                "DOMAIN_NAME": settings.domain_name,
                "CAMPAIGN_UNSUBSCRIBE_SECRET": UNSUBSCRIBE_SECRET,
                "CAMPAIGN_APP_ORIGINS": json.dumps(ORIGINS),
                "CAMPAIGN_DISPATCH_PAGE_SIZE": "5",
                "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
                "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "5",
                "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
                "CAMPAIGN_WORKER_THREADS": "2",
            }
        )
        children = [
            CliProcess(
                ["smtp-catcher", "--port", str(smtp_port), "--mailbox", str(mailbox)],
                env,
                tmp_path / "smtp.log",
            ),
            CliProcess(["worker"], env, tmp_path / "worker.log"),
        ]
        try:
            with serve_in_thread(create_app(settings, graph=graph)) as url:
                yield url, settings, mailbox
        finally:
            for child in children:
                child.stop()


def trpc(url: str, token: str, path: str, data: dict[str, Any] | None, *, mutation: bool = True) -> Any:
    """One call to the public API, as another client would make it (``None``: a procedure without input)."""
    headers = {"authorization": f"Bearer {token}"}
    if mutation:
        answer = httpx.post(f"{url}/trpc/{path}", json=data, headers=headers, timeout=60)
    else:
        params = {} if data is None else {"input": json.dumps(data)}
        answer = httpx.get(f"{url}/trpc/{path}", params=params, headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["data"]


class Watch:
    """Everything the page must never do: console errors, page errors, CSP violations, foreign requests."""

    def __init__(self, page: Page, origin: str) -> None:
        self.errors: list[str] = []
        self.foreign: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("request", self._request)
        self._origin = origin

    # Chromium logs every non-2xx fetch as a console error. The journey provokes some API errors on
    # purpose (a user token: 403, an invalid field: 400, an edit conflict: 409, an unknown profile to
    # explain: 404, a graph outage the test stages: 503, a token the server refuses: 401); only those are
    # allowed.
    expected_api_errors = (403, 400, 409, 404, 503, 401)

    def _console(self, message: ConsoleMessage) -> None:
        where = str(message.location.get("url", ""))
        status = re.fullmatch(
            r"Failed to load resource: the server responded with a status of (\d+) .*", message.text
        )
        if (
            status
            and where.startswith(f"{self._origin}/trpc/")
            and int(status[1]) in self.expected_api_errors
        ):
            return
        if message.type == "error" or "Content Security Policy" in message.text:
            self.errors.append(f"console.{message.type}: {message.text} at {where}")

    def _request(self, request: Any) -> None:
        url: str = request.url
        # blob: URLs are made by the page itself (a download handed over from memory): same origin.
        if not url.startswith((self._origin + "/", "data:", "about:", f"blob:{self._origin}/")):
            self.foreign.append(url)

    def assert_clean(self) -> None:
        assert self.errors == []
        assert self.foreign == []


AXE_SCRIPT = REPO_ROOT / "admin" / "node_modules" / "axe-core" / "axe.min.js"
# How the console writes a time in Paris in winter (Intl's short zone name), UTC on hover.
LOCAL_TIME = re.compile(r"\d{1,2}:\d{2}\s?[AP]M GMT\+1")


def new_context(browser: Browser, width: int = 1280, height: int = 900) -> Any:
    """A tab in Paris (so local times differ from UTC), with the watch and axe-core in every frame (as
    init scripts over CDP: the page's CSP does not apply to them, and the page never loads them)."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, timezone_id="Europe/Paris", locale="en-US"
    )
    context.add_init_script(path=str(WATCH_SCRIPT))
    context.add_init_script(path=str(AXE_SCRIPT))
    return context


def assert_accessible(page: Page, screen: str) -> None:
    """axe-core over the whole page as it stands: no critical violation (the email frame is its own
    document, sandboxed, and checked by nothing here)."""
    found = page.evaluate(
        """async () => {
            const result = await window.axe.run(document, { iframes: false, resultTypes: ["violations"] });
            return result.violations.filter((v) => v.impact === "critical")
                .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
        }"""
    )
    assert found == [], f"{screen}: {found}"


def api_failure(code: str, status: int, message: str) -> str:
    """A tRPC batch answer with one error, as the API words it (api/errors.py)."""
    wire = {"SERVICE_UNAVAILABLE": -32603, "FORBIDDEN": -32003, "UNAUTHORIZED": -32001}[code]
    return json.dumps(
        [{"error": {"message": message, "code": wire, "data": {"code": code, "httpStatus": status}}}]
    )


def refuse_two_notifications(route: Any) -> None:
    """The real listDispatches answer, with two of the notify channel's receipts made refusals and one
    recipient capped (the batch may carry other calls: only list answers are touched)."""
    answer = route.fetch()
    body = answer.json()
    for item in body:
        data = item.get("result", {}).get("data")
        for d in data if isinstance(data, list) else []:
            if d.get("channel") == "notify":
                d.update(acknowledged=d["acknowledged"] - 2, rejected=2, capped=1)
    route.fulfill(response=answer, json=body)


def shot(page: Page, name: str, section: str | None = None) -> None:
    """The whole page, what the viewport shows, or one section of the (long) campaign page."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = str(ARTIFACTS / f"admin-{name}.png")
    if section == "viewport":
        page.screenshot(path=path)
    elif section is None:
        page.screenshot(path=path, full_page=True)
    else:
        page.locator(section).screenshot(path=path)


def assert_every_control_labelled(page: Page) -> None:
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter((el) => !el.closest('[hidden]'))
            .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                            && !(el.tagName === 'BUTTON' && el.textContent.trim()))
            .map((el) => el.outerHTML.slice(0, 120))"""
    )
    assert unlabelled == []


def explain_in_console(page: Page, profile_id: str) -> None:
    """Search a profile on the campaign's "Explain a recipient" screen with the keyboard alone."""
    search = page.locator("#explain").get_by_label("Profile id")
    search.fill(profile_id)
    search.press("Enter")
    expect(page.locator("#explain-member")).to_contain_text(profile_id)


def assert_explanation_shown(
    page: Page, answer: dict[str, Any], verdicts: dict[str, str | re.Pattern[str]]
) -> None:
    """What the console shows is the API's answer, in words: each channel's sentence above its table,
    each rule named (its code only in data-rule) with what it found, each past fact at its local time."""
    result = page.locator("#explain-result")
    for channel in answer["channels"]:
        article = result.locator(f"article[data-channel='{channel['channel']}']")
        expect(article).to_have_attribute("data-would-receive", str(channel["wouldReceive"]).lower())
        expect(article.locator(".explain-verdict")).to_have_text(verdicts[channel["channel"]])
        rows = article.locator("tbody tr")
        expect(rows).to_have_count(len(channel["rules"]))
        for i, rule in enumerate(channel["rules"]):
            expect(rows.nth(i)).to_have_attribute("data-rule", rule["rule"])
            expect(rows.nth(i)).to_have_attribute("data-ok", str(rule["ok"]).lower())
            expect(rows.nth(i).locator("th")).not_to_contain_text("_")  # a name in words, not a code
            # A send that already happened is done, not refused.
            outcome = (
                "Allows it"
                if rule["ok"]
                else "Done already"
                if rule["rule"].startswith("already_")
                else "Stops it"
            )
            expect(rows.nth(i).locator("td").nth(0)).to_have_text(outcome)
    facts = {k: v for k, v in (answer.get("past") or {}).items() if v is not None}
    for key, value in facts.items():
        fact = result.locator(f"[data-fact='{key}']")
        if key.endswith("At"):  # local time shown, the UTC instant on hover and in datetime
            expect(fact.locator("time")).to_have_attribute(
                "datetime", re.compile("^" + re.escape(value[:19]))
            )
            expect(fact.locator("time")).to_have_attribute("title", value[:19].replace("T", " ") + " UTC")
            expect(fact).to_contain_text("(your time)")
        else:
            expect(fact).to_have_text(value)
    expect(result.locator("[data-fact]")).to_have_count(len(facts))


def test_admin_journey_in_chromium(
    stack: tuple[str, Settings, Path], browser: Browser, base_settings: Settings
) -> None:
    url, settings, mailbox = stack
    admin_token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    # Recipients and the admin (email-eligible, so the test reaches them both ways), via the public API.
    trpc(url, admin_token, "profiles.upsert", {"profiles": [
        {"profileId": pid, "dob": "1990-01-01", "emails": [{"address": f"{pid}@example.com", "verified": True,
         "primary": True}], "tags": ["beta"] if pid == "m011" else []}
        for pid in [ADMIN_ID, *MEMBERS]
    ]})  # fmt: skip

    context = new_context(browser)
    page = context.new_page()
    page.set_default_timeout(20_000)
    watch = Watch(page, url)
    try:
        # --- the shell and its headers
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

        # --- sign in with the keyboard alone: a user token is refused, an admin token lets us in
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

        # --- composer: the API's field error lands beside its field; the banner preview shows the cut
        page.get_by_role("link", name="New campaign").first.click()
        expect(page.get_by_role("heading", name="New campaign")).to_be_visible()
        assert_every_control_labelled(page)
        page.get_by_label("Campaign id").fill("Spring Launch!")
        page.get_by_label("Name").fill("Spring launch")
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
        expect(page.locator("main [role=alert]").first).to_have_text(
            "Not saved: fix the fields marked below."
        )
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

        # --- another admin saves meanwhile: our save is a CONFLICT, explained, with a reload choice
        current = trpc(url, admin_token, "campaigns.get", {"campaignId": CAMPAIGN}, mutation=False)
        edit = {
            "campaignId": CAMPAIGN,
            "expectedUpdatedAt": current["updatedAt"],
            "name": "Spring launch 2026",
        }
        trpc(url, admin_token, "campaigns.update", edit)
        page.get_by_label("Name").fill("Spring launch (mine)")
        page.get_by_role("button", name="Save changes").click()
        conflict = page.locator(".conflict")
        expect(conflict).to_contain_text("changed since you opened it")
        expect(conflict).to_contain_text("revision 2")
        # What they changed, in words; then the two ways out.
        expect(conflict.locator("#conflict-changes li")).to_have_text(["Name: now “Spring launch 2026”"])
        expect(conflict.get_by_role("button", name="Keep mine and save over theirs")).to_be_visible()
        shot(page, "conflict", "#definition")
        conflict.get_by_role("button", name="Reload their version").click()
        expect(page.get_by_label("Name")).to_have_value("Spring launch 2026")
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

        # --- the email, rendered by the server with the worker's renderer, in the sandboxed frame
        page.get_by_role("button", name="Render email preview").click()
        expect(page.locator("#email-subject")).to_have_text("Spring is here")
        frame = page.frame_locator("#email-frame")
        expect(frame.locator("h1")).to_have_text("Our spring launch")
        expect(frame.get_by_role("link", name="See what's new")).to_have_attribute(
            "href", re.compile(r"^https://app\.campaigns\.test/m/spring-launch\?")
        )
        shot(page, "email-preview", ".email-preview")

        # --- audience: preview, add and remove by several sources; a paged member list
        audience = page.locator("#audience")
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

        # --- go live, send a test to me
        page.get_by_role("button", name="Go live").click()
        expect(page.locator("#campaign-status")).to_have_text("live")
        page.get_by_role("button", name="Send test to me").click()
        expect(page.locator("#test-result")).to_contain_text("sent on: inApp, notify, email")
        wait_for("the test email", lambda: any("[Test] Spring is here" in p.read_text(errors="replace")
                                              for p in mailbox.glob("*.eml")))  # fmt: skip
        shot(page, "test", "#test")

        # --- review, then confirm with the preview token
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-recipients")).to_have_text("12")
        expect(page.locator("#review-notify")).to_have_text("12")
        expect(page.locator("#review-email")).to_have_text("12")
        expect(page.locator("#review-blocked")).to_have_count(0)
        shot(page, "review", "#review")
        page.get_by_role("button", name="Confirm and send to 12").click()
        expect(page.locator("#review-result")).to_contain_text("started")

        # --- live progress, polled without a reload, until both channels complete
        notify = page.locator("#progress-list article[data-channel='notify']")
        email = page.locator("#progress-list article[data-channel='email']")
        expect(notify).to_have_attribute("data-status", "completed", timeout=DEADLINE * 1000)
        expect(email).to_have_attribute("data-status", "completed", timeout=DEADLINE * 1000)
        # Per channel, in view: what moves on that channel (handed on, then reached) and nothing else,
        # since no exception counter moved; pages, passes and the other channel's zeros under Details.
        expect(notify.locator("#counters-notify dt")).to_have_text(["Sent to their inbox", "Received"])
        expect(notify.locator("#counters-notify [data-counter='acknowledged']")).to_have_text("12")
        expect(email.locator("#counters-email dt")).to_have_text(
            ["Handed to the email provider", "Accepted by the provider"]
        )
        expect(email.locator("#counters-email [data-counter='emailed']")).to_have_text("12")
        for article in (notify, email):
            expect(article.locator(".exceptions")).to_have_count(0)
            expect(article.locator(".counter-details")).not_to_have_attribute("open", "")
            expect(article.locator(".counter-details [data-counter='pages']")).to_be_hidden()
            expect(article.locator("label")).to_have_text("12 of 12 recipients reached or settled")
        expect(notify.locator(".counter-details [data-counter='pages']")).to_have_text(re.compile(r"^[34]$"))
        assert notify.locator("progress").evaluate("(p) => p.value === p.max && p.max === 12")
        expect(notify.locator("time").first).to_have_text(LOCAL_TIME)  # started at, in Paris time
        # Every number DispatchPublic carries is shown once, including counters added after this console,
        # except the other channel's counters while they are zero ("Emailed 0" on notifications).
        other_channel = {
            "notify": {"emailed", "uncertain", "throttled", "hardBounces", "complaints"},
            "email": {"acknowledged", "suppressed"},
        }
        for d in trpc(url, admin_token, "campaigns.listDispatches", {"campaignId": CAMPAIGN}, mutation=False):
            article = page.locator(f"#progress-list article[data-channel='{d['channel']}']")
            numbers = {k: v for k, v in d.items() if type(v) is int and k != "maxLateSeconds"}
            assert {"pages", "enqueued", "acknowledged", "emailed"} <= set(numbers)
            shown = {k: v for k, v in numbers.items() if v or k not in other_channel[d["channel"]]}
            for key, count in shown.items():
                expect(article.locator(f"[data-counter='{key.lower()}']")).to_have_text(str(count))
            expect(article.locator("[data-counter]")).to_have_count(len(shown))
        expect(notify.locator("[data-counter='emailed']")).to_have_count(0)
        expect(email.locator("[data-counter='acknowledged']")).to_have_count(0)
        notify.locator(".counter-details summary").click()
        expect(notify.locator(".counter-details [data-counter='pages']")).to_be_visible()
        # The live status is for screen readers: announced, drawn over nothing.
        status = page.locator("#status")
        expect(status).to_have_attribute("role", "status")
        expect(status).to_have_text("No dispatch is sending.")
        box = status.bounding_box()
        assert box is not None and box["width"] <= 1 and box["height"] <= 1
        shot(page, "progress", "#progress")
        assert_accessible(page, "campaign page with progress")

        # --- stats: members' apps record engagement through the API; the chart reads it back
        for pid, events in {
            "m000": ["shown", "clicked"],
            "m001": ["shown", "dismissed"],
            "m002": ["shown"],
        }.items():
            member_token = mint_token(settings, profile_id=pid)
            for event in events:
                trpc(url, member_token, "campaigns.recordEvent", {"campaignId": CAMPAIGN, "event": event})
        # A recipient follows the email's tracked button twice: both land on the CTA,
        # and the chart counts one recipient.
        wait_for("a member's email", lambda: len(list(mailbox.glob("*.eml"))) >= 13)
        sent = [read_mail(p) for p in mailbox.glob("*.eml")]
        member_mail = next(m for m in sent if "[Test]" not in str(m["Subject"]))
        text = member_mail.get_body(preferencelist=("plain",)).get_content()
        [click] = re.findall(r"https?://[^/\s]+(/c\?token=\S+)", text)
        for _ in range(2):
            hop = httpx.get(f"{url}{click}", follow_redirects=False)
            landed = httpx.get(f"{url}{hop.headers['location']}", follow_redirects=False)
            assert landed.headers["location"].startswith("https://app.campaigns.test/m/spring-launch?")
        ask = {"campaignId": CAMPAIGN}

        def clicked() -> int:
            return int(trpc(url, admin_token, "campaigns.getStats", ask, mutation=False)["emailClicked"])

        wait_for("the click recorded", lambda: clicked() == 1)
        page.get_by_role("button", name="Refresh stats").click()
        stats = page.locator("#stats")
        expect(stats.locator("[data-stat='email-clicks']")).to_have_text("1")
        expect(stats.locator("[data-stat='shown']")).to_have_text("3")
        for name, value in (("audience", "12"), ("notified", "12"), ("emailed", "12"), ("clicked", "1"),
                            ("dismissed", "1")):  # fmt: skip
            expect(stats.locator(f"[data-stat='{name}']")).to_have_text(value)
        expect(stats.locator("svg rect.bar-audience")).to_have_attribute("width", "200")
        shot(page, "stats", "#stats")

        # --- explain a recipient, in words: a member reached on both channels (both "already received
        # it", at a local time), a profile outside the audience, a member whose age is unknown (joined after
        # the send: notified now, never emailed), and an unknown profile (NOT_FOUND, in a sentence)
        trpc(url, admin_token, "profiles.upsert", {"profiles": [{"profileId": "m-noage", "emails": [
            {"address": "noage@example.com", "verified": True, "primary": True}]}]})  # fmt: skip
        trpc(url, admin_token, "campaigns.addAudience", {"campaignId": CAMPAIGN,
             "source": {"type": "profileIds", "profileIds": ["m-noage"]}})  # fmt: skip
        already = re.compile(r"^Already received it on .*GMT\+1 \(your time\)\.$")
        verdicts: dict[str, dict[str, str | re.Pattern[str]]] = {
            "m000": {"notify": already, "email": already},
            ADMIN_ID: {
                "notify": "Will not receive the notification: the profile is not in the audience.",
                "email": "Will not receive the email: the profile is not in the audience.",
            },
            "m-noage": {
                "notify": "Would receive the notification now.",
                "email": "Will not receive the email: the profile's age is unknown, and email goes only to"
                " known adults.",
            },
        }
        explained = {}
        for pid, sentences in verdicts.items():
            explained[pid] = trpc(url, admin_token, "campaigns.explainRecipient",
                                  {"campaignId": CAMPAIGN, "profileId": pid}, mutation=False)  # fmt: skip
            explain_in_console(page, pid)
            assert_explanation_shown(page, explained[pid], sentences)
            if pid == "m000":
                shot(page, "explain", "#explain")
                assert_accessible(page, "explain a recipient")
                opted = page.locator(
                    "#explain-result article[data-channel='notify'] tr[data-rule='opted_out'] td"
                )
                expect(opted.nth(1)).to_have_text("Has not opted out of announcement notifications")
        assert {c["blockedBy"] for c in explained["m000"]["channels"]} == {
            "already_notified",
            "already_claimed",
        }
        assert explained["m000"]["past"]["notifiedAt"] and explained["m000"]["past"]["emailedAt"]
        assert {c["blockedBy"] for c in explained[ADMIN_ID]["channels"]} == {"not_member"}
        assert [c["blockedBy"] for c in explained["m-noage"]["channels"]] == [None, "age_policy"]
        shot(page, "explain-age", "#explain")
        trpc(url, admin_token, "campaigns.removeAudience", {"campaignId": CAMPAIGN,
             "source": {"type": "profileIds", "profileIds": ["m-noage"]}})  # fmt: skip
        explain_in_console(page, ADMIN_ID)
        expect(page.locator("#explain-member")).to_have_text(f"{ADMIN_ID} is not a member of the audience.")
        search = page.locator("#explain").get_by_label("Profile id")
        search.fill("ghost-1")
        search.press("Enter")
        expect(page.locator("#explain-result [role=alert] .error-words")).to_have_text(
            "Profile 'ghost-1' not found."
        )
        assert_every_control_labelled(page)

        # --- lifecycle: pause, resume, archive
        page.get_by_role("button", name="Pause").click()
        expect(page.locator("#campaign-status")).to_have_text("paused")
        page.get_by_role("button", name="Resume").click()
        expect(page.locator("#campaign-status")).to_have_text("live")

        # --- the list: status, channels, headline stats, filter by status
        page.get_by_role("link", name="Campaigns", exact=True).click()
        row = page.locator("#campaigns tbody tr", has_text="Spring launch 2026")
        expect(row).to_contain_text("live")
        # The status badge sits in its row (its class once collided with the status bar's `live` class).
        assert row.locator(".badge").evaluate("(b) => getComputedStyle(b).position") == "static"
        expect(row).to_contain_text("inApp, notify, email")
        expect(row.locator("td").nth(3)).to_have_text("12")
        shot(page, "list")
        page.get_by_label("Filter by status").select_option("draft")
        expect(page.locator("#campaigns tbody")).to_have_text("No campaigns yet.")
        page.get_by_label("Filter by status").select_option("live")
        expect(page.locator("#campaigns tbody tr", has_text="Spring launch 2026")).to_have_count(1)

        # --- phone width: the campaign page fits without sideways scrolling; the same counters, sentences
        # and field messages as on a desktop
        page.set_viewport_size({"width": 390, "height": 844})
        # The journey's inbox refuses nothing, so the server's answer is altered in flight: two of the
        # notifications refused, one recipient capped. Exactly those exception counters come into view.
        page.route("**/trpc/*campaigns.listDispatches*", refuse_two_notifications)
        page.goto(f"{url}/admin#/c/{CAMPAIGN}")
        expect(page.get_by_role("heading", name="Spring launch 2026")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "phone", "viewport")
        expect(page.locator("#counters-notify dt")).to_have_text(["Sent to their inbox", "Received"])
        raised = page.locator("#progress-list article[data-channel='notify'] .exceptions")
        expect(raised.locator("dt")).to_have_text(
            ["Refused by their inbox", "Held back by the frequency cap"]
        )
        expect(raised.locator("dd")).to_have_text(["2", "1"])
        expect(page.locator("#progress-list article[data-channel='email'] .exceptions")).to_have_count(0)
        expect(page.locator("#progress-list article[data-channel='notify'] label")).to_have_text(
            "12 of 12 recipients reached or settled"
        )
        shot(page, "phone-progress", "#progress")
        page.unroute("**/trpc/*campaigns.listDispatches*")
        explain_in_console(page, "m001")
        expect(page.locator("#explain-result article")).to_have_count(2)
        expect(page.locator("#explain-result .explain-verdict")).to_have_text([already, already])
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "phone-explain", "#explain")
        assert_accessible(page, "campaign page at phone width")
        page.get_by_role("button", name="Archive").click()
        expect(page.locator("#campaign-status")).to_have_text("archived")
        # A campaign id already taken: said on the id field, at phone width.
        page.goto(f"{url}/admin#/new")
        page.get_by_label("Campaign id").fill(CAMPAIGN)
        page.get_by_label("Name").fill("Spring again")
        page.get_by_label("Title", exact=True).fill("Spring again")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Spring again")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("Once more.")
        page.get_by_role("button", name="Create campaign").click()
        taken = page.locator("[data-path='id']")
        expect(taken).to_have_attribute("aria-invalid", "true")
        expect(page.locator(f"#{taken.get_attribute('id')}-error")).to_have_text(
            f"A campaign with the id {CAMPAIGN} already exists: choose another id."
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "phone-composer-errors", "viewport")
        assert_accessible(page, "composer at phone width")

        # --- follow-up: from the stats, a reminder draft over a live segment of the
        # audience never shown it (m000-m002 were), opened for editing
        page.goto(f"{url}/admin#/c/{CAMPAIGN}")
        page.get_by_role("button", name="Remind those who did not see it").click()
        expect(page.get_by_role("heading", name="Spring launch 2026 (reminder)")).to_be_visible()
        assert page.evaluate("location.hash") == f"#/c/{CAMPAIGN}-reminder"
        expect(page.locator("#campaign-status")).to_have_text("draft")
        reminder = trpc(url, admin_token, "campaigns.get", {"campaignId": f"{CAMPAIGN}-reminder"},
                        mutation=False)  # fmt: skip
        unseen = {"engaged": {"campaignId": CAMPAIGN, "event": "shown"}, "not": True}
        assert _set(reminder["segment"]) == {"all": [{"memberOf": CAMPAIGN}, unseen]}
        counted = trpc(url, admin_token, "campaigns.previewSegment", {"segment": reminder["segment"]})
        assert counted == {"matches": 9}

        assert page.evaluate("window.__cspViolations") == []
        watch.assert_clean()
    finally:
        context.close()


def _set(value: Any) -> Any:
    """``value`` without its null fields, at any depth (answers spell every optional field)."""
    if isinstance(value, dict):
        return {k: _set(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_set(v) for v in value]
    return value


def test_dev_sign_in_link_reads_then_clears_the_fragment(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    url, settings, _ = stack
    token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    context = browser.new_context()
    context.add_init_script(path=str(WATCH_SCRIPT))
    page = context.new_page()
    watch = Watch(page, url)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url))
    try:
        page.goto(f"{url}/admin#token={token}")
        expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
        assert page.evaluate("location.hash") == "#/"
        # about:blank, then this page: the entry with the token was replaced, so Back cannot reach it.
        assert page.evaluate("history.length") == 2
        assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") == token
        assert all(token not in u for u in sent)  # a fragment never reaches a server
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") is None
        watch.assert_clean()
    finally:
        context.close()


def test_a_sign_in_link_asks_before_replacing_a_held_session(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    url, settings, _ = stack
    mine = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    crafted = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=60)
    context = browser.new_context()
    page = context.new_page()
    asked: list[str] = []
    try:
        page.goto(f"{url}/admin#token={mine}")  # an empty tab takes its first link without asking
        expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()

        def decline(dialog: Dialog) -> None:
            asked.append(dialog.message)
            dialog.dismiss()

        page.once("dialog", decline)
        page.goto("about:blank")  # a link followed from elsewhere: a full load of the console
        page.goto(f"{url}/admin#token={crafted}")
        expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
        assert len(asked) == 1 and "replacing the current session" in asked[0]
        assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") == mine
        assert page.evaluate("location.hash") == "#/"  # declined, the token still leaves the address bar

        other = mint_token(settings, profile_id="m000", ttl_seconds=60)  # someone else's session
        page.once("dialog", lambda dialog: dialog.accept())
        page.evaluate(f"location.hash = '#token={other}'")  # pasted into the same tab: a fragment change
        page.wait_for_function("location.hash === '#/'")  # taken, and gone from the address bar
        # Taken: the console asked the server who it now is, as m000. That profile holds no role, so the
        # console then drops it; reading the storage in between would race that answer.
        expect(page.get_by_role("alert")).to_contain_text("m000 holds no role in tenant")
        assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") is None
        assert len(asked) == 1  # accepted by the second handler, not the recording one
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_an_ending_session_warns_then_renews_in_place_keeping_unsaved_edits(
    stack: tuple[str, Settings, Path], browser: Browser, width: int
) -> None:
    """A token that ends during the test. The console warns while minutes remain, and
    at the end asks for a new token over the page without leaving it: a token for someone else is
    refused, a pasted one for the same admin is taken, and later a fresh sign-in link opened in the same
    tab renews it again; a save the server refuses waits for a new token and then goes through by itself.
    The campaign typed before the end is never lost."""
    url, settings, _ = stack
    ttl = 20  # long enough to sign in and type, short enough to end while we watch
    first = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=ttl)
    context = new_context(browser, width=width, height=844 if width < 600 else 900)
    page = context.new_page()
    watch = Watch(page, url)
    name = f"renewal-{width}"
    try:
        page.goto(f"{url}/admin#token={first}")
        expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
        warning = page.locator("#session-warning")
        expect(warning).to_contain_text("Your session ends soon: at ")
        expect(warning).to_contain_text("in less than a minute")
        expect(warning.locator("time")).to_have_text(LOCAL_TIME)
        expect(warning.locator("time")).to_have_attribute("title", re.compile(r" UTC$"))
        # In the page's flow, above the header: it pushes the page down and covers nothing.
        assert warning.evaluate("(el) => getComputedStyle(el).position") == "static"
        shot(page, f"session-warning-{'phone' if width < 600 else 'desktop'}", "viewport")
        assert_accessible(page, "session warning")

        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill(name)
        page.get_by_label("Name").fill("Typed before the end")
        page.get_by_label("Title", exact=True).fill("Still here")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Still here")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("Nothing typed is lost.")

        dialog = page.locator("#session-renew")
        expect(dialog).to_be_visible(timeout=(ttl + 10) * 1000)
        expect(dialog.get_by_role("heading")).to_have_text("Your session has ended")
        expect(dialog).to_contain_text("Nothing is lost")
        assert page.evaluate("location.hash") == "#/new"  # the page stays; the sign-in screen never shows
        expect(page.get_by_label("Name")).to_have_value("Typed before the end")
        shot(page, f"session-renew-{'phone' if width < 600 else 'desktop'}", "viewport")
        assert_accessible(page, "session renewal dialog")

        box = dialog.get_by_label("New admin token")
        box.fill(mint_token(settings, profile_id="m000"))  # a valid token, but someone else's
        dialog.get_by_role("button", name="Continue with this token").click()
        expect(dialog.get_by_role("alert")).to_contain_text("That token signs in as m000")
        second = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=120)
        box.fill(second)
        dialog.get_by_role("button", name="Continue with this token").click()
        expect(dialog).to_be_hidden()
        assert page.evaluate("sessionStorage.getItem('campaign-engine.admin-token')") == second
        expect(warning).to_contain_text("in 1 minute")  # two minutes left: warned again, not asked
        warning.get_by_role("button", name="Renew now").click()  # early: the dialog may be put off
        expect(dialog.get_by_role("heading")).to_have_text("Renew your session")
        dialog.get_by_role("button", name="Not now").click()
        expect(dialog).to_be_hidden()
        expect(page.get_by_label("Name")).to_have_value("Typed before the end")
        expect(page.get_by_label("Campaign id")).to_have_value(name)

        # A fresh sign-in link opened in this tab renews as well, with the page left as it is.
        third = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=3600)
        page.evaluate(f"location.hash = '#token={third}'")
        page.wait_for_function("location.hash === '#/new'")
        page.wait_for_function(
            f"sessionStorage.getItem('campaign-engine.admin-token') === {json.dumps(third)}"
        )
        expect(warning).to_be_hidden()
        expect(page.get_by_label("Name")).to_have_value("Typed before the end")

        # The server refuses the token as the campaign is saved (revoked, or its clock ahead of ours): the
        # save waits for a new token and then goes through by itself, with nothing clicked again.
        refused = {"once": False}

        def refuse_once(route: Any) -> None:
            if refused["once"]:
                route.continue_()
                return
            refused["once"] = True
            route.fulfill(status=401, content_type="application/json",
                          body=api_failure("UNAUTHORIZED", 401, "the token expired"))  # fmt: skip

        page.route("**/trpc/campaigns.create?*", refuse_once)
        page.get_by_role("button", name="Create campaign").click()
        expect(dialog.get_by_role("heading")).to_have_text("Your session has ended")
        expect(dialog.get_by_role("button", name="Not now")).to_have_count(0)
        fourth = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=3600)
        dialog.get_by_label("New admin token").fill(fourth)
        dialog.get_by_role("button", name="Continue with this token").click()
        expect(page.get_by_role("heading", name="Typed before the end")).to_be_visible()
        saved = trpc(url, third, "campaigns.get", {"campaignId": name}, mutation=False)
        assert saved["name"] == "Typed before the end" and saved["notification"]["title"] == "Still here"
        watch.assert_clean()
    finally:
        context.close()


def test_missing_assets_answer_503_naming_the_make_target(tmp_path: Path) -> None:
    app = FastAPI()
    app.include_router(admin_console_router(tmp_path))  # an empty folder: nothing built
    with TestClient(app) as client:
        for path in ("/admin", "/admin/email-frame", "/admin/assets/app-ABCDEFGH.js"):
            answer = client.get(path)
            assert answer.status_code == 503, path
            assert "make admin-assets" in answer.text
    assert (ASSETS_DIR / "manifest.json").is_file(), "run `make admin-assets` before the browser tests"


# --- roles: what each role sees, tenant admins' grants and keys, two-person approval ------
TENANT = "alpha"
TENANT_MEMBERS = ["a1", "a2", "a3"]
AUTUMN = {
    "id": "autumn",
    "name": "Autumn news",
    "channels": ["inApp", "notify"],
    "message": {"title": "Autumn"},
    "notification": {"title": "Autumn news", "body": "What changes this autumn"},
}


def tenant_alpha(url: str, settings: Settings, *, min_recipients: int | None = None) -> None:
    """The tenant record (with an approval policy if asked) and its members, as a platform admin."""
    platform = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    trpc(url, platform, "tenants.create", {"tenantId": TENANT, "name": "Alpha"})
    if min_recipients is not None:
        trpc(
            url,
            platform,
            "tenants.update",
            {"tenantId": TENANT, "approval": {"minRecipients": min_recipients}},
        )
    members = [{"profileId": p, "tenants": [TENANT]} for p in TENANT_MEMBERS]
    trpc(url, platform, "profiles.upsert", {"profiles": members})


def tenant_token(settings: Settings, sub: str, role: str) -> str:
    return mint_token(settings, profile_id=sub, tenant_id=TENANT, roles=[role])


def signed_in(browser: Browser, url: str, token: str) -> tuple[Any, Page, Watch]:
    """A fresh tab signed in through the dev sign-in link; the header names the tenant and the role."""
    context = new_context(browser)
    page = context.new_page()
    watch = Watch(page, url)
    page.goto(f"{url}/admin#token={token}")
    expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
    return context, page, watch


def test_each_role_sees_only_what_it_may_do(stack: tuple[str, Settings, Path], browser: Browser) -> None:
    url, settings, _ = stack
    tenant_alpha(url, settings)
    author = tenant_token(settings, "ana", "author")
    trpc(url, author, "campaigns.create", AUTUMN)
    trpc(url, author, "campaigns.addAudience", {"campaignId": "autumn",
         "source": {"type": "profileIds", "profileIds": TENANT_MEMBERS}})  # fmt: skip

    # The console reads the role each procedure needs from the server's own table.
    table = {
        path.removeprefix("/trpc/"): op["x-access"]
        for path, methods in httpx.get(f"{url}/openapi.json").json()["paths"].items()
        for op in methods.values()
    }
    assert table["campaigns.create"] == "author" and table["campaigns.dispatch"] == "publisher"

    # --- a viewer: reads everything of the tenant, is offered nothing that writes
    context, page, watch = signed_in(browser, url, tenant_token(settings, "vic", "viewer"))
    try:
        expect(page.locator("#whoami-tenant")).to_have_text(TENANT)
        expect(page.locator("#whoami-role")).to_have_text("viewer")
        expect(page.get_by_role("link", name="New campaign")).to_have_count(0)
        expect(page.get_by_role("link", name="Access and keys")).to_have_count(0)
        expect(page.locator("#campaigns tbody tr", has_text="Autumn news")).to_have_count(1)
        page.get_by_role("link", name="Autumn news").click()
        expect(page.get_by_role("heading", name="Autumn news")).to_be_visible()
        expect(page.locator("#members tbody tr")).to_have_count(3)
        for name in ("Go live", "Archive", "Save changes", "Preview count", "Add to audience",
                     "Remove from audience", "Send test to me", "Review dispatch"):  # fmt: skip
            expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
        expect(page.get_by_label("Name")).to_be_disabled()
        expect(page.locator("#review .role-note")).to_have_text(
            "Reviewing a send needs the author role; you are a viewer."
        )
        expect(page.locator(".campaign-head .role-note")).to_contain_text("needs the publisher role")
        shot(page, "role-viewer", "viewport")
        assert_accessible(page, "role-viewer")
        page.goto(f"{url}/admin#/new")
        expect(page.get_by_role("heading", name="New campaign")).to_be_visible()
        expect(page.locator("main .role-note")).to_have_text(
            "Creating a campaign needs the author role; you are a viewer."
        )
        expect(page.get_by_role("button", name="Create campaign")).to_have_count(0)
        watch.assert_clean()
    finally:
        context.close()

    # --- an author: creates and edits, reviews a send, may not send it nor change its status
    context, page, watch = signed_in(browser, url, author)
    try:
        expect(page.locator("#whoami-role")).to_have_text("author")
        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill("winter")
        page.get_by_label("Name").fill("Winter news")
        page.get_by_label("Notification (inbox/push)").uncheck()
        page.get_by_label("Title", exact=True).fill("Winter is coming")
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Winter news")).to_be_visible()
        expect(page.get_by_role("button", name="Save changes")).to_be_enabled()
        expect(page.get_by_role("button", name="Go live")).to_have_count(0)
        audience = page.locator("#audience")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("a1\na2")
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text("2")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-audience")).to_have_text("2")
        expect(page.get_by_role("button", name=re.compile("^Confirm and send"))).to_have_count(0)
        expect(page.locator("#review .role-note")).to_have_text(
            "Sending needs the publisher role; you are an author."
        )
        shot(page, "role-author", "#review")
        assert_accessible(page, "role-author")
        watch.assert_clean()
    finally:
        context.close()
    created = trpc(url, author, "campaigns.get", {"campaignId": "winter"}, mutation=False)
    assert created["status"] == "draft" and created["tenantId"] == TENANT

    # --- a tenant admin: grants a role, revokes it; creates a key, sees it once, sees its use, revokes it
    context, page, watch = signed_in(browser, url, tenant_token(settings, "ada", "admin"))
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    try:
        expect(page.locator("#whoami-role")).to_have_text("admin")
        page.get_by_role("link", name="Access and keys").click()
        expect(page.get_by_role("heading", name="Access and keys")).to_be_visible()
        # The screen lists grants and keys as it opens; a grant clicked before that first list answers
        # can be drawn over by it (an admin sees the lists before using them; a loaded machine may not).
        expect(page.locator("#grants-table")).to_contain_text("No grants yet.")
        expect(page.locator("#keys-table")).to_contain_text("No API keys yet.")
        grants = page.locator("#grants")
        grants.get_by_label("Profile id").fill("pat")
        grants.get_by_label("Role", exact=True).select_option("publisher")
        grants.get_by_role("button", name="Grant role").click()
        expect(page.locator("#grants-table tr[data-subject='pat'][data-role='publisher']")).to_contain_text(
            "ada"
        )
        listed = trpc(url, author, "access.me", None, mutation=False)
        assert listed["role"] == "author"
        pat = mint_token(settings, profile_id="pat", tenant_id=TENANT)  # no role claim: the grant is its role
        assert trpc(url, pat, "access.me", None, mutation=False)["role"] == "publisher"
        assert_every_control_labelled(page)

        keys = page.locator("#keys")
        keys.get_by_label("Key name").fill("SIS sync")
        keys.get_by_label("Key role").select_option("viewer")
        keys.get_by_role("button", name="Create key").click()
        once = page.locator("#new-key")
        expect(once).to_have_value(re.compile(r"^cek_"))
        key = once.input_value()
        expect(page.locator(".key-once")).to_contain_text("only time it is shown")
        keys.get_by_role("button", name="Copy key").click()
        expect(keys).to_contain_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == key
        shot(page, "key-once", "#keys")
        assert_accessible(page, "key-once")
        row = page.locator("#keys-table tr", has_text="SIS sync")
        expect(row.locator("[data-field='lastUsedAt']")).to_have_text("never")
        # The key works, as an integration would use it; the list then shows its last use.
        assert [c["id"] for c in trpc(url, key, "campaigns.list", {}, mutation=False)["records"]] == [
            "autumn",
            "winter",
        ]
        keys.get_by_role("button", name="I have stored it, hide the key").click()
        expect(once).to_have_count(0)

        # pat has a campaign open as a publisher when the role is revoked: Go live is refused in words
        # naming the role it needs and the one pat now holds.
        pat_context, pat_page, pat_watch = signed_in(browser, url, pat)
        pat_page.goto(f"{url}/admin#/c/autumn")
        go_live = pat_page.get_by_role("button", name="Go live")
        expect(go_live).to_be_visible()

        page.once("dialog", lambda dialog: dialog.accept())
        grants.get_by_role("button", name="Revoke publisher from pat").click()
        expect(page.locator("#grants-table tr[data-subject='pat']")).to_have_count(0)
        assert trpc(url, pat, "access.me", None, mutation=False)["role"] is None
        go_live.click()
        refusal = pat_page.locator(".campaign-head [data-code='FORBIDDEN'] .error-words")
        expect(refusal).to_have_text(
            "Not allowed: changing the campaign's status needs the publisher role; you hold no role here."
            " Nothing was changed."
        )
        expect(pat_page.locator("#whoami-role")).to_have_text("publisher")  # the header redraws on navigation
        shot(pat_page, "forbidden", ".campaign-head")
        pat_watch.assert_clean()
        pat_context.close()

        page.reload()  # a fresh load shows last use; the key itself is nowhere on the page any more
        row = page.locator("#keys-table tr", has_text="SIS sync")
        expect(row.locator("[data-field='lastUsedAt']")).not_to_have_text("never")
        assert key not in page.content()
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Revoke key SIS sync").click()
        expect(row).to_have_attribute("data-state", "revoked")
        expect(row.locator("[data-field='state']")).to_contain_text("revoked")
        refused = httpx.get(f"{url}/trpc/campaigns.list", headers={"authorization": f"Bearer {key}"})
        assert refused.status_code == 401
        shot(page, "access", "viewport")
        assert_accessible(page, "access")
        watch.assert_clean()
    finally:
        context.close()


def test_a_second_publisher_approves_a_waiting_send(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    url, settings, _ = stack
    tenant_alpha(url, settings, min_recipients=2)
    pia, pol = tenant_token(settings, "pia", "publisher"), tenant_token(settings, "pol", "publisher")
    # pia writes the campaign and asks for the send: she may send it but not approve it.
    trpc(url, pia, "campaigns.create", AUTUMN)
    trpc(url, pia, "campaigns.addAudience", {"campaignId": "autumn",
         "source": {"type": "profileIds", "profileIds": TENANT_MEMBERS}})  # fmt: skip
    trpc(url, pia, "campaigns.setStatus", {"campaignId": "autumn", "status": "live"})

    first, page, watch = signed_in(browser, url, pia)
    second, other, other_watch = signed_in(browser, url, pol)
    try:
        page.goto(f"{url}/admin#/c/autumn")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-recipients")).to_have_text("3")
        page.get_by_role("button", name="Confirm and send to 3").click()
        awaits = page.locator("#dispatch-awaits")
        expect(awaits).to_contain_text("Waiting for another publisher.")
        expect(awaits.locator("#may-approve")).to_have_text("Who may approve: another publisher than pia.")
        expect(awaits).to_contain_text("The server said: a send to 3 recipients needs approval")
        shot(page, "approval-awaits", "#review")
        assert_accessible(page, "approval-awaits")

        # pia opens the list from there: her own request is not hers to approve, and it says who may.
        awaits.get_by_role("link", name="Open approvals").click()
        item = page.locator("#approvals article[data-campaign='autumn']")
        expect(item.locator("[data-field='requestedBy']")).to_have_text("pia")
        expect(item.locator("[data-field='recipients']")).to_have_text("3")
        expect(item.locator("[data-field='waiting']")).to_have_text(
            "Waiting for another publisher: another publisher than pia may approve this."
        )
        expect(item.get_by_role("button", name="Approve send to 3")).to_have_count(0)

        # pia edits after asking: the request is stale, and pol's approval of it is refused (CONFLICT).
        current = trpc(url, pia, "campaigns.get", {"campaignId": "autumn"}, mutation=False)
        edit = {"campaignId": "autumn", "expectedUpdatedAt": current["updatedAt"], "name": "Autumn news!"}
        trpc(url, pia, "campaigns.update", edit)
        other.get_by_role("link", name="Approvals").click()
        stale = other.locator("#approvals article[data-campaign='autumn'][data-changed-since='true']")
        expect(stale).to_contain_text("Edited since this was requested")
        stale.get_by_role("button", name="Approve send to 3").click()
        expect(stale.locator(".approval-refused")).to_contain_text(
            "Not approved: the campaign changed since this preview."
        )

        # pia reviews the edited campaign and asks again; pol, a second publisher, approves from the list.
        page.goto(f"{url}/admin#/c/autumn")
        page.get_by_role("button", name="Review dispatch").click()
        page.get_by_role("button", name="Confirm and send to 3").click()
        expect(page.locator("#dispatch-awaits")).to_contain_text("Waiting for another publisher")
        other.reload()
        theirs = other.locator("#approvals article[data-campaign='autumn'][data-changed-since='false']")
        expect(theirs).to_contain_text("Autumn news!")
        shot(other, "approvals", "#main")
        assert_accessible(other, "approvals")
        theirs.get_by_role("button", name="Approve send to 3").click()
        expect(theirs).to_contain_text("Approved by pol for 3 recipients")
        # The list, for pia too, now says who approved and who may send.
        page.goto(f"{url}/admin#/approvals")
        approved = page.locator(
            "#approvals article[data-campaign='autumn'][data-changed-since='false'] [data-field='approvedBy']"
        )
        expect(approved).to_contain_text("Approved by pol")
        expect(approved).to_contain_text("Now pia may send it")

        # pia confirms again (nothing changed since: the approved preview) and the send goes out.
        page.goto(f"{url}/admin#/c/autumn")
        page.get_by_role("button", name="Review dispatch").click()
        page.get_by_role("button", name="Confirm and send to 3").click()
        expect(page.locator("#review-result")).to_contain_text("started")
        dispatches = trpc(url, pia, "campaigns.listDispatches", {"campaignId": "autumn"}, mutation=False)
        assert dispatches and all(d.get("approvedBy") == "pol" for d in dispatches)
        other.reload()  # the send closed every request of the campaign, the stale one too
        expect(other.locator("#approvals")).to_have_text("Nothing awaits approval.")
        watch.assert_clean()
        other_watch.assert_clean()
    finally:
        first.close()
        second.close()


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
        record.get_by_label("Primary colour").fill("#0b7285")
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
        record.get_by_label("Text colour").fill("#222")
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
        assert after == stored  # neither the origin nor the valid text colour sent with it was written
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
        assert capped["appOrigin"] == "https://app.alpha.example" and capped["textColor"] == "#222"
        assert capped["primaryColor"] == "#0b7285" and capped["approval"] == {"minRecipients": 50}

        # Emptying an optional field clears it (null); emptying a cap clears the caps ({}).
        record.get_by_label("Text colour").fill("")
        record.get_by_label("Notification cap: at most").fill("")
        record.get_by_label("Notification cap window (seconds)").fill("")
        record.get_by_role("button", name="Save tenant settings").click()
        expect(page.locator("#tenant-saved")).to_contain_text(f"Saved the settings of {TENANT}")
        cleared = trpc(url, platform, "tenants.get", {"tenantId": TENANT}, mutation=False)
        assert cleared["textColor"] is None and cleared["frequencyCaps"] == {}
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


def test_every_procedure_the_console_calls_is_in_the_servers_access_table(
    base_settings: Settings, graph: Graph
) -> None:
    """The console offers a control only when /openapi.json's ``x-access`` lets the caller use it, and
    hides what the table does not name: a procedure renamed or dropped on the server would vanish from
    the console silently. Every path in admin/src/api.ts is there, with the kind the console calls."""
    source = (REPO_ROOT / "admin" / "src" / "api.ts").read_text(encoding="utf-8")
    kinds = dict(
        re.findall(r'^  "(\w+\.\w+)": "(query|mutation)",$', source.split("const PROCEDURE_KINDS")[1], re.M)
    )
    assert {"access.me", "access.grant", "apiKeys.create", "campaigns.approveDispatch"} <= set(kinds)
    document = create_app(base_settings, graph=graph).openapi()
    operations = {
        path.removeprefix("/trpc/"): (method, op) for path, methods in document["paths"].items()
        for method, op in methods.items()
    }  # fmt: skip
    levels = {"public", "user", "viewer", "author", "publisher", "admin", "platform"}
    for path, kind in kinds.items():
        assert path in operations, f"the console calls {path}, which the server does not offer"
        method, op = operations[path]
        assert method == ("get" if kind == "query" else "post"), path
        assert op["x-access"] in levels, path


IMPORT_CSV = (
    "\ufeffprofileId,email,locale,tags,homeroom\r\n"
    "a1,a1@example.com,es-MX,grade-7;band,7B\r\n"
    "b1,not-an-address,,,\r\n"
    "b2,b2@example.com,en,,\r\n"
)


def test_profiles_are_imported_from_csv_and_exports_download_in_the_console(
    stack: tuple[str, Settings, Path], browser: Browser, tmp_path: Path
) -> None:
    """Imports and exports in the console: a CSV upload answers its report (dry run first), a campaign's
    recipients and the audit trail download as files, all with the tab's own token."""
    url, settings, _ = stack
    tenant_alpha(url, settings)
    ana = tenant_token(settings, "ana", "author")
    trpc(url, ana, "campaigns.create", AUTUMN)
    trpc(url, ana, "campaigns.addAudience", {"campaignId": "autumn",
         "source": {"type": "profileIds", "profileIds": TENANT_MEMBERS}})  # fmt: skip
    csv_file = tmp_path / "students.csv"
    csv_file.write_text(IMPORT_CSV, encoding="utf-8", newline="")
    context, page, watch = signed_in(browser, url, ana)
    try:
        page.get_by_role("link", name="Import and export").click()
        expect(page.get_by_role("heading", name="Import and export", exact=True)).to_be_visible()
        page.get_by_label("CSV file").set_input_files(str(csv_file))
        page.get_by_label("Dry run").check()
        page.get_by_role("button", name="Import").click()
        summary = page.locator("#import-summary")
        expect(summary).to_contain_text("3 rows read: would create 1, would update 1, rejected 1.")
        expect(summary).to_contain_text("Nothing was written (dry run).")
        profile = trpc(url, ana, "profiles.get", {"profileId": "a1"}, mutation=False)
        assert profile["locale"] is None  # the dry run wrote nothing

        page.get_by_label("Dry run").uncheck()
        page.get_by_role("button", name="Import").click()
        expect(summary).to_contain_text("3 rows read: created 1, updated 1, rejected 1.")
        expect(page.locator("#import-unknown")).to_have_text("Ignored columns: homeroom.")
        rejected = page.locator("#import-rejections tbody tr")
        expect(rejected).to_have_count(1)
        expect(rejected.locator("td").nth(0)).to_have_text("3")
        expect(rejected.locator("td").nth(1)).to_have_text("email")
        assert trpc(url, ana, "profiles.get", {"profileId": "a1"}, mutation=False)["locale"] == "es-MX"
        shot(page, "import-report")
        assert_accessible(page, "import")

        with page.expect_download() as audit:
            page.get_by_role("button", name="Download the audit trail (CSV)").click()
        assert audit.value.suggested_filename == f"audit-{TENANT}.csv"
        audit_rows = Path(audit.value.path()).read_text(encoding="utf-8").splitlines()
        assert audit_rows[0].startswith("at,actor,tenantId,procedure")
        assert any(",imports.profiles," in row for row in audit_rows[1:])

        page.goto(f"{url}/admin#/c/autumn")
        with page.expect_download() as recipients:
            page.get_by_role("button", name="Download recipients (CSV)").click()
        assert recipients.value.suggested_filename == "autumn-recipients.csv"
        lines = Path(recipients.value.path()).read_text(encoding="utf-8").splitlines()
        assert [line.split(",")[0] for line in lines] == ["profileId", *TENANT_MEMBERS]
        expect(page.locator("#recipients-download-result")).to_have_text("Saved autumn-recipients.csv.")
        watch.assert_clean()
    finally:
        context.close()


def read_mail(path: Path) -> Any:
    return email.message_from_bytes(path.read_bytes(), policy=email.policy.default)


LOCALES = {
    "l-en": "en-GB",
    "l-mx": "es-MX",
    "l-es": "es",
    "l-ar": "ar",
    "l-fr": "fr",
    "l-zz": "zz",
    "l-none": None,
}
SPANISH = {
    "subject": "Noticias de primavera",
    "title": "Llegó la primavera",
    "body": "Novedades",
    "ctaLabel": "Leer",
}
ARABIC = {
    "subject": "أخبار الربيع",
    "title": "وصل الربيع",
    "body": "ميزات جديدة للجميع",
    "ctaLabel": "اقرأ المزيد",
}


def test_translations_are_edited_previewed_reviewed_and_the_layout_with_its_preview(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    """Translations in the console: a campaign with es and ar translations beside its base content (the
    Arabic fields right to left), the Arabic email previewed right to left, the review's counts per
    language, the missing-translation block sent anyway only after the explicit fallback confirmation,
    a duplicate with its translations, and the tenant's email layout edited with its rendered preview."""
    url, settings, mailbox = stack
    admin_token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    trpc(url, admin_token, "profiles.upsert", {"profiles": [
        {"profileId": pid, "dob": "1990-01-01", "emails": [{"address": f"{pid}@example.com", "verified": True,
         "primary": True}], **({"locale": tag} if tag else {})}
        for pid, tag in LOCALES.items()
    ]})  # fmt: skip
    context, page, watch = signed_in(browser, url, admin_token)
    try:
        # --- the composer: base content, then es and ar beside it
        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill("spring-langs")
        page.get_by_label("Name", exact=True).fill("Spring in every language")
        page.get_by_label("Email", exact=True).check()
        page.get_by_label("Title", exact=True).fill("Spring is here")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Spring news")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("New this spring")
        page.get_by_label("Subject", exact=True).fill("Spring news")
        page.get_by_label("Heading", exact=True).fill("Spring is here")
        page.locator("[data-path='email.body']").fill("New features for everyone.")
        page.get_by_label("Button label", exact=True).fill("Read more")
        expect(page.get_by_label("Base content language")).to_have_value("en")
        picker = page.get_by_label("Add a translation")
        picker.fill("en")
        page.get_by_role("button", name="Add language").click()
        expect(page.locator("#add-language-error")).to_have_text("en is the base content's language.")
        for tag, copy in (("es", SPANISH), ("ar", ARABIC)):
            picker.fill(tag)
            page.get_by_role("button", name="Add language").click()
            for key, value in copy.items():
                page.locator(f"[data-path='translations.{tag}.email.{key}']").fill(value)
            page.locator(f"[data-path='translations.{tag}.notification.title']").fill(copy["subject"])
            page.locator(f"[data-path='translations.{tag}.notification.body']").fill(copy["body"])
            page.locator(f"[data-path='translations.{tag}.message.title']").fill(copy["title"])
        # Right-to-left text fields for Arabic, left-to-right for Spanish.
        expect(page.locator("[data-path='translations.ar.email.body']")).to_have_attribute("dir", "rtl")
        expect(page.locator("[data-path='translations.ar.email.body']")).to_have_attribute("lang", "ar")
        expect(page.locator("[data-path='translations.es.email.body']")).not_to_have_attribute("dir", "rtl")
        picker.fill("fr")
        page.get_by_role("button", name="Add language").click()
        page.get_by_role("button", name="Remove language fr").click()  # added by mistake, removed again
        expect(page.locator("fieldset.translation")).to_have_count(2)
        assert_every_control_labelled(page)
        assert_accessible(page, "composer with translations")
        shot(page, "translations-editor", "#translations-editor")
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Spring in every language")).to_be_visible()
        stored = trpc(url, admin_token, "campaigns.get", {"campaignId": "spring-langs"}, mutation=False)
        assert stored["locale"] == "en" and set(stored["translations"]) == {"es", "ar"}
        assert stored["translations"]["ar"]["email"]["subject"] == ARABIC["subject"]

        # --- each language previewed: the Arabic email is right to left in the preview document
        page.get_by_label("Preview language").select_option("ar")
        page.get_by_role("button", name="Render email preview").click()
        expect(page.locator("#email-subject")).to_have_text(ARABIC["subject"])
        expect(page.locator("#email-locale")).to_have_text("ar")
        frame = page.frame_locator("#email-frame")
        expect(frame.locator("html")).to_have_attribute("dir", "rtl")
        expect(frame.locator("html")).to_have_attribute("lang", "ar")
        expect(frame.locator("h1")).to_have_text(ARABIC["title"])
        shot(page, "email-preview-rtl", ".email-preview")
        page.get_by_label("Preview language").select_option("es")
        page.get_by_role("button", name="Render email preview").click()
        expect(page.locator("#email-subject")).to_have_text("Noticias de primavera")
        expect(frame.locator("html")).to_have_attribute("dir", "ltr")

        # --- audience, live, and the review by language
        audience = page.locator("#audience")
        audience.get_by_label("Source type").select_option("profileIds")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("\n".join(LOCALES))
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text(str(len(LOCALES)))
        page.get_by_role("button", name="Go live").click()
        expect(page.locator("#campaign-status")).to_have_text("live")
        page.get_by_role("button", name="Review dispatch").click()
        review = trpc(
            url, admin_token, "campaigns.previewDispatch", {"campaignId": "spring-langs"}, mutation=False
        )
        assert review["blockedReason"] == "missing_translation"
        assert review["localeCounts"]["email"] == {"en": 4, "es": 2, "ar": 1}  # en-GB, fr, zz, none: the base
        rows = page.locator("#locale-counts tbody tr")
        expect(rows).to_have_count(sum(len(c) for c in review["localeCounts"].values()))
        for channel, counts in review["localeCounts"].items():
            for tag, n in counts.items():
                row = page.locator(
                    f"#locale-counts tr[data-channel='{channel}'][data-locale='{tag}'] td"
                ).nth(1)
                expect(row).to_have_text(str(n))
        for tag, n in review["untranslated"].items():
            expect(page.locator(f"#review-untranslated [data-locale='{tag}']")).to_contain_text(
                f"{tag} ({n})"
            )
        expect(page.locator("#review-blocked")).to_have_text(
            "Blocked: Too many recipients read a language this campaign has no translation for: add it, or"
            " accept that they get the base content."
        )
        confirm = page.get_by_role("button", name=f"Confirm and send to {review['recipientCount']}")
        expect(confirm).to_be_disabled()
        fallback = page.get_by_label(re.compile(r"^Send the base content to the \d+ recipients"))
        fallback.check()
        expect(confirm).to_be_enabled()
        assert_accessible(page, "review by language")
        shot(page, "review-languages", "#review")
        confirm.click()
        expect(page.locator("#review-result")).to_contain_text("started")
        wait_for("every email in its language", lambda: len(list(mailbox.glob("*.eml"))) >= len(LOCALES))
        by_to = {str(m["To"]): m for m in map(read_mail, mailbox.glob("*.eml"))}
        html = by_to["l-ar@example.com"].get_body(preferencelist=("html",))
        assert html is not None and '<html lang="ar" dir="rtl">' in html.get_content()
        assert str(by_to["l-ar@example.com"]["Subject"]) == ARABIC["subject"]
        assert str(by_to["l-mx@example.com"]["Subject"]) == SPANISH["subject"]
        assert str(by_to["l-fr@example.com"]["Subject"]) == "Spring news"  # no French: the base

        # --- duplicate: a new draft with the translations, no audience
        page.get_by_label("Id of the copy").fill("spring-langs-2")
        page.get_by_role("button", name="Duplicate").click()
        expect(page.locator("#campaign-status")).to_have_text("draft")
        expect(page.locator("code", has_text="spring-langs-2")).to_be_visible()
        expect(page.locator("[data-path='translations.ar.email.subject']")).to_have_value(ARABIC["subject"])
        expect(page.locator("#members tbody")).to_have_text("No members yet.")  # never the audience

        # --- the tenant's email layout, previewed before it is saved
        page.get_by_role("link", name="Email layout").click()
        expect(page.get_by_role("heading", name="Email layout")).to_be_visible()
        page.get_by_label("Footer text").fill('Northside <Schools> & "friends"')
        page.get_by_label("Postal address").fill("1 School Lane, Springfield")
        page.get_by_label("Sender name").fill("Northside News")
        page.get_by_label("Primary colour").fill("#7a1f5c")
        page.get_by_role("button", name="Preview layout").click()
        expect(page.locator("#layout-sender")).to_have_text("Northside News <news@campaigns.test>")
        layout_frame = page.frame_locator("#layout-frame")
        expect(layout_frame.locator("body")).to_contain_text(
            'Northside <Schools> & "friends"'
        )  # escaped, shown as text
        expect(layout_frame.locator("body")).to_contain_text("1 School Lane, Springfield")
        before = trpc(url, admin_token, "tenants.get", {"tenantId": "default"}, mutation=False)
        assert before.get("footerText") is None  # the preview saved nothing
        page.get_by_label("Sender name").fill("x\u0007")  # a control character: refused on its field
        page.get_by_role("button", name="Save layout").click()
        expect(page.locator("#layout-form [aria-invalid='true']")).to_have_attribute("name", "senderName")
        expect(page.locator("#layout-form .field-error:visible")).to_have_text(
            "The sender name must be plain text on one line, without line breaks or control characters."
        )
        page.get_by_label("Sender name").fill("Northside News")
        assert_every_control_labelled(page)
        assert_accessible(page, "email layout")
        page.get_by_role("button", name="Save layout").click()
        expect(page.locator("#layout-result")).to_have_text("Saved the layout of default.")
        shot(page, "email-layout")
        after = trpc(url, admin_token, "tenants.get", {"tenantId": "default"}, mutation=False)
        assert (after["footerText"], after["footerAddress"], after["senderName"], after["primaryColor"]) == (
            'Northside <Schools> & "friends"',
            "1 School Lane, Springfield",
            "Northside News",
            "#7a1f5c",
        )
        watch.assert_clean()
    finally:
        context.close()


def test_minors_are_routed_to_their_guardians_from_the_composer_to_the_review(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    """Guardian routing in the console, briefly: the composer sends minors to their guardians with the
    guardians' own copy, the review counts the guardian, and the guardian's email is that copy."""
    url, settings, mailbox = stack
    admin_token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    trpc(url, admin_token, "profiles.upsert", {"profiles": [
        {"profileId": "fam-parent", "dob": "1980-01-01",
         "emails": [{"address": "fam-parent@example.com", "verified": True, "primary": True}]},
        {"profileId": "fam-kid", "dob": "2016-01-01", "isManaged": True,
         "guardians": [{"profileId": "fam-parent", "consent": "granted"}]},
    ]})  # fmt: skip
    context, page, watch = signed_in(browser, url, admin_token)
    try:
        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill("class-trip")
        page.get_by_label("Name", exact=True).fill("Class trip")
        page.get_by_label("Email", exact=True).check()
        page.get_by_label("Title", exact=True).fill("Trip on Friday")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Trip on Friday")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("Bring a packed lunch")
        page.get_by_label("Subject", exact=True).fill("Trip on Friday")
        page.get_by_label("Heading", exact=True).fill("Trip on Friday")
        page.locator("[data-path='email.body']").fill("Bring a packed lunch.")
        page.get_by_label("Button label", exact=True).fill("Details")
        expect(page.locator("#guardian-copy")).to_have_count(0)  # only while minors go to guardians
        page.get_by_label("Members the age policy excludes").select_option("guardians")
        page.get_by_label("Guardians' email subject").fill("Your child's class travels on Friday")
        page.get_by_label("Guardians' email heading").fill("Class trip")
        page.get_by_label("Guardians' email body").fill("The class travels on Friday.")
        page.get_by_label("Guardians' email button label").fill("Details")
        assert_every_control_labelled(page)
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Class trip")).to_be_visible()
        stored = trpc(url, admin_token, "campaigns.get", {"campaignId": "class-trip"}, mutation=False)
        assert stored["minors"] == "guardians"
        assert stored["guardianCopy"]["email"]["subject"] == "Your child's class travels on Friday"
        audience = page.locator("#audience")
        audience.get_by_label("Source type").select_option("profileIds")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("fam-kid")
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text("1")
        page.get_by_role("button", name="Go live").click()
        expect(page.locator("#campaign-status")).to_have_text("live")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-guardians")).to_have_text("1 (notify 1, email 1)")
        assert_accessible(page, "review with guardians")
        page.get_by_role("button", name="Confirm and send to 1").click()
        expect(page.locator("#review-result")).to_contain_text("started")
        wait_for("the guardian's email", lambda: any(
            str(read_mail(p)["To"]) == "fam-parent@example.com" for p in mailbox.glob("*.eml")))  # fmt: skip
        mail = next(
            m for m in map(read_mail, mailbox.glob("*.eml")) if str(m["To"]) == "fam-parent@example.com"
        )
        assert str(mail["Subject"]) == "Your child's class travels on Friday"
        watch.assert_clean()
    finally:
        context.close()


def test_ab_variants_are_composed_and_their_stats_charted_side_by_side(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    """A/B variants in the console: two arms added (a third added and removed again), the challenger's weight
    and in-app title typed, stored as typed and read back; each member's app shows their own arm, and the
    stats chart each arm's distinct profiles side by side, as an independent count of the arms says."""
    url, settings, _ = stack
    admin_token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    members = [f"ab{i:02d}" for i in range(8)]
    trpc(
        url,
        admin_token,
        "profiles.upsert",
        {"profiles": [{"profileId": p, "dob": "1990-01-01"} for p in members]},
    )
    context, page, watch = signed_in(browser, url, admin_token)
    try:
        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill("ab-console")
        page.get_by_label("Name", exact=True).fill("Two titles")
        page.get_by_label("Title", exact=True).fill("Control title")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Spring news")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("New this spring")
        page.get_by_role("button", name="Add variant").click()  # an A/B test starts with two arms
        expect(page.locator("fieldset.variant")).to_have_count(2)
        page.get_by_role("button", name="Add variant").click()
        page.locator("fieldset.variant").nth(2).get_by_role("button", name="Remove variant").click()
        expect(page.locator("fieldset.variant")).to_have_count(2)
        page.locator("[data-path='variants.1.weight']").fill("3")
        page.locator("[data-path='variants.1.message.title']").fill("Challenger title")
        assert_every_control_labelled(page)
        assert_accessible(page, "composer with variants")
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Two titles")).to_be_visible()
        stored = trpc(url, admin_token, "campaigns.get", {"campaignId": "ab-console"}, mutation=False)
        assert [(v["id"], v["weight"]) for v in stored["variants"]] == [("A", 1), ("B", 3)]
        assert stored["variants"][1]["message"]["title"] == "Challenger title"
        assert stored["variants"][0]["message"] is None  # the control keeps the campaign's own copy
        expect(page.locator("[data-path='variants.1.message.title']")).to_have_value("Challenger title")

        source = {"type": "profileIds", "profileIds": members}
        trpc(url, admin_token, "campaigns.addAudience", {"campaignId": "ab-console", "source": source})
        trpc(url, admin_token, "campaigns.setStatus", {"campaignId": "ab-console", "status": "live"})
        arms = {
            p: assigned_variant(stored["variants"], campaign_id="ab-console", profile_id=p) for p in members
        }
        for pid in members:
            token = mint_token(settings, profile_id=pid)
            [card] = trpc(url, token, "campaigns.getMyCampaigns", None, mutation=False)["campaigns"]
            title = "Challenger title" if arms[pid] == "B" else "Control title"
            assert (card["variantId"], card["message"]["title"]) == (arms[pid], title), pid
            trpc(url, token, "campaigns.recordEvent", {"campaignId": "ab-console", "event": "shown"})
        clicked = members[:3]
        for pid in clicked:
            trpc(url, mint_token(settings, profile_id=pid), "campaigns.recordEvent",
                 {"campaignId": "ab-console", "event": "clicked"})  # fmt: skip
        page.get_by_role("button", name="Refresh stats").click()
        table = page.locator("#variant-stats")
        for arm in ("A", "B"):
            readers = sum(a == arm for a in arms.values())
            expect(table.locator(f"td[data-variant='{arm}'][data-stat='recipients']")).to_have_text(
                str(readers)
            )
            expect(table.locator(f"td[data-variant='{arm}'][data-stat='shown']")).to_have_text(
                re.compile(rf"^{readers} \(")
            )
            taken = sum(arms[p] == arm for p in clicked)
            expect(table.locator(f"td[data-variant='{arm}'][data-stat='clicked']")).to_have_text(
                re.compile(rf"^{taken} \(")
            )
        expect(page.locator("#variant-chart rect.variant-bar")).to_have_count(2 * 8)  # two arms, eight steps
        explain_in_console(page, members[0])  # which arm, and why, in the explanation
        expect(page.locator("#explain-variant")).to_have_attribute("data-variant", str(arms[members[0]]))
        expect(page.locator("#explain-variant")).to_contain_text("the keyed hash of (campaign, profile)")
        assert_accessible(page, "stats per variant")
        shot(page, "stats-variants", "#stats")
        watch.assert_clean()
    finally:
        context.close()
