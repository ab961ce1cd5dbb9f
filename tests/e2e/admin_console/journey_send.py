"""The admin journey's send: a test to the admin, the review and its confirmation, the live progress
per channel, and the stats as members' apps and a tracked email click record engagement."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Page, Route, expect

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from tests.e2e.admin_console.journey_compose import CAMPAIGN
from tests.support.console import (
    DEADLINE,
    LOCAL_TIME,
    assert_accessible,
    read_mail,
    shot,
    trpc,
    wait_for,
)


def go_live_and_send_a_test(page: Page, mailbox: Path) -> None:
    """Go live, send a test to me."""
    page.get_by_role("button", name="Go live").click()
    expect(page.locator("#campaign-status")).to_have_text("live")
    page.get_by_role("button", name="Send test to me").click()
    expect(page.locator("#test-result")).to_contain_text("sent on: inApp, notify, email")
    wait_for("the test email", lambda: any("[Test] Spring is here" in p.read_text(errors="replace")
                                          for p in mailbox.glob("*.eml")))  # fmt: skip
    shot(page, "test", "#test")


def review_and_confirm(page: Page) -> None:
    """Review, then confirm with the preview token."""
    page.get_by_role("button", name="Review dispatch").click()
    expect(page.locator("#review-recipients")).to_have_text("12")
    expect(page.locator("#review-notify")).to_have_text("12")
    expect(page.locator("#review-email")).to_have_text("12")
    expect(page.locator("#review-blocked")).to_have_count(0)
    # The forecast: per walked channel a finish time and the rate it assumes, and where that comes from.
    for channel in ("notify", "email"):
        plan = page.locator(f"#review-plan .plan[data-channel={channel}]")
        expect(plan.locator(".finishes time")).to_have_count(1)
        expect(plan.locator(".rate")).to_have_attribute("data-source", re.compile("^(measured|configured)$"))
    shot(page, "review", "#review")
    page.get_by_role("button", name="Confirm and send to 12").click()
    expect(page.locator("#review-result")).to_contain_text("started")


def watch_the_progress(page: Page, url: str, admin_token: str) -> None:
    """Live progress, polled without a reload, until both channels complete."""
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
        expect(article.locator(".live-estimate time")).to_have_count(2)  # the finish and the forecast's
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


def read_the_stats(page: Page, url: str, settings: Settings, admin_token: str, mailbox: Path) -> None:
    """Stats: members' apps record engagement through the API; the chart reads it back."""
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
    click_lands_on_the_app(page, landed.headers["location"], url)
    ask = {"campaignId": CAMPAIGN}

    def clicked() -> int:
        return int(trpc(url, admin_token, "campaigns.getStats", ask, mutation=False)["emailClicked"])

    wait_for("the click recorded", lambda: clicked() == 1)
    # A recipient unsubscribes with the mail client's one-click button (RFC 8058, anonymous): the link
    # names this campaign, so its stats count the opt-out.
    leaving = next(m for m in sent if str(m["To"]) == "m010@example.com")
    one_click = urlsplit(str(leaving["List-Unsubscribe"]).strip("<>"))
    left = httpx.post(f"{url}{one_click.path}?{one_click.query}", content="List-Unsubscribe=One-Click",
                      headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert left.status_code == 200, left.text
    assert trpc(url, admin_token, "campaigns.getStats", ask, mutation=False)["unsubscribed"] == 1
    page.get_by_role("button", name="Refresh stats").click()
    stats = page.locator("#stats")
    expect(stats.locator("[data-stat='email-clicks']")).to_have_text("1")
    expect(stats.locator("[data-stat='shown']")).to_have_text("3")
    for name, value in (("audience", "12"), ("notified", "12"), ("emailed", "12"), ("clicked", "1"),
                        ("dismissed", "1"), ("unsubscribed", "1")):  # fmt: skip
        expect(stats.locator(f"[data-stat='{name}']")).to_have_text(value)
    expect(stats.locator("svg rect.bar-audience")).to_have_attribute("width", "200")
    shot(page, "stats", "#stats")


def click_lands_on_the_app(page: Page, app_link: str, url: str) -> None:
    """Where the email's button lands, counted and redirected (above), in a recipient's browser: the app's
    page showing the in-app message. make dev's app origin is its API, which serves the stand-in app; here
    the app origin has its own name, answered by the API as make dev's would be (Chromium does not hand a
    redirect's next hop to a route, so the browser opens the link the redirects ended on)."""
    browser = page.context.browser
    assert browser is not None
    recipient = browser.new_context(viewport={"width": 390, "height": 844})

    def as_in_make_dev(route: Route) -> None:
        asked = urlsplit(route.request.url)
        answer = httpx.get(f"{url}{asked.path}?{asked.query}", timeout=30)
        framing = ("content-encoding", "content-length", "transfer-encoding")  # httpx decoded the body
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in framing}
        route.fulfill(status=answer.status_code, headers=headers, body=answer.content)

    try:
        recipient.route("https://app.campaigns.test/**", as_in_make_dev)
        tab = recipient.new_page()
        tab.goto(app_link)
        expect(tab.get_by_role("heading", level=1)).to_have_text("🌱 Spring is here")
        expect(tab.get_by_text("New features for everyone.")).to_be_visible()
        expect(tab.get_by_text("Read more")).to_be_visible()
        shot(tab, "app-standin-from-email", "viewport")
    finally:
        recipient.close()
