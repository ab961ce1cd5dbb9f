"""What the admin console's browser tests share: the public API as another client calls it, a tab with
the watch (console errors, page errors, CSP violations, foreign requests) and axe-core in every frame,
the tenant ``alpha`` with its roles, screenshots to ``tests/artifacts/admin-*.png``.

The watch's listener, ``tests/e2e/admin_console_watch.js``, is injected into every frame as an init
script. Every wait gets the same generous bound: the machine is shared and slow at times."""

from __future__ import annotations

import email
import email.policy
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.browser import ARTIFACTS
from tests.support.concurrency import wait_for as wait_until
from tests.support.processes import REPO_ROOT

__all__ = [
    "AUTUMN",
    "DEADLINE",
    "LOCAL_TIME",
    "TENANT",
    "TENANT_MEMBERS",
    "WATCH_SCRIPT",
    "Watch",
    "api_failure",
    "assert_accessible",
    "assert_every_control_labelled",
    "explain_in_console",
    "new_context",
    "read_mail",
    "shot",
    "signed_in",
    "tenant_alpha",
    "tenant_token",
    "trpc",
    "wait_for",
]

expect.set_options(timeout=20_000)

WATCH_SCRIPT = REPO_ROOT / "tests" / "e2e" / "admin_console_watch.js"
DEADLINE = 60.0


wait_for = partial(wait_until, timeout=DEADLINE, every=0.1)


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
    expected_api_errors: tuple[int, ...] = (403, 400, 409, 404, 503, 401)

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


# --- roles: what each role sees, tenant admins' grants and keys, two-person approval ------
TENANT = "alpha"
TENANT_MEMBERS = ["a1", "a2", "a3"]
AUTUMN: dict[str, Any] = {
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


def author_writes_autumn(browser: Browser, url: str, ana: str) -> None:
    """An author composes AUTUMN and adds its audience (TENANT_MEMBERS) in the console: no Go live."""
    context, page, watch = signed_in(browser, url, ana)
    try:
        page.get_by_role("link", name="New campaign").first.click()
        message, notification = AUTUMN["message"], AUTUMN["notification"]
        page.get_by_label("Campaign id").fill(str(AUTUMN["id"]))
        page.get_by_label("Name", exact=True).fill(str(AUTUMN["name"]))
        page.get_by_label("Title", exact=True).fill(message["title"])
        page.locator("[data-path='notification.title']").fill(notification["title"])
        page.locator("[data-path='notification.body']").fill(notification["body"])
        page.get_by_label("Send priority").select_option("critical")  # a publisher's choice, not hers
        page.get_by_role("button", name="Create campaign").click()
        expect(page.locator("main [role=alert]").first).to_contain_text("publisher")
        page.get_by_label("Send priority").select_option("normal")
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name=str(AUTUMN["name"]))).to_be_visible()
        audience = page.locator("#audience")
        audience.get_by_label("Source type").select_option("profileIds")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("\n".join(TENANT_MEMBERS))
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text(str(len(TENANT_MEMBERS)))
        expect(page.get_by_role("button", name="Go live")).to_have_count(0)  # a publisher's
        watch.assert_clean()
    finally:
        context.close()


def read_mail(path: Path) -> Any:
    return email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
