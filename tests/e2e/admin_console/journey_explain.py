"""The admin journey after the send: recipients explained in words, the lifecycle and the list, the
campaign page at phone width, and the reminder draft for those who did not see it."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.conftest import ADMIN_ID
from tests.e2e.admin_console.journey_compose import CAMPAIGN
from tests.support.console import (
    assert_accessible,
    assert_every_control_labelled,
    explain_in_console,
    shot,
    trpc,
)

ALREADY = re.compile(r"^Already received it on .*GMT\+1 \(your time\)\.$")


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


def explain_recipients(page: Page, url: str, admin_token: str) -> None:
    """Explain a recipient, in words: a member reached on both channels (both "already received it", at a
    local time), a profile outside the audience, a member whose age is unknown (joined after the send:
    notified now, never emailed), and an unknown profile (NOT_FOUND, in a sentence)."""
    trpc(url, admin_token, "profiles.upsert", {"profiles": [{"profileId": "m-noage", "emails": [
        {"address": "noage@example.com", "verified": True, "primary": True}]}]})  # fmt: skip
    trpc(url, admin_token, "campaigns.addAudience", {"campaignId": CAMPAIGN,
         "source": {"type": "profileIds", "profileIds": ["m-noage"]}})  # fmt: skip
    verdicts: dict[str, dict[str, str | re.Pattern[str]]] = {
        "m000": {"notify": ALREADY, "email": ALREADY},
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


def pause_resume_and_list(page: Page) -> None:
    """Lifecycle: pause and resume; then the list: status, channels, headline stats, filter by status."""
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#campaign-status")).to_have_text("paused")
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#campaign-status")).to_have_text("live")
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


def at_phone_width(page: Page, url: str) -> None:
    """Phone width: the campaign page fits without sideways scrolling; the same counters, sentences and
    field messages as on a desktop."""
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
    expect(raised.locator("dt")).to_have_text(["Refused by their inbox", "Held back by the frequency cap"])
    expect(raised.locator("dd")).to_have_text(["2", "1"])
    expect(page.locator("#progress-list article[data-channel='email'] .exceptions")).to_have_count(0)
    expect(page.locator("#progress-list article[data-channel='notify'] label")).to_have_text(
        "12 of 12 recipients reached or settled"
    )
    shot(page, "phone-progress", "#progress")
    page.unroute("**/trpc/*campaigns.listDispatches*")
    explain_in_console(page, "m001")
    expect(page.locator("#explain-result article")).to_have_count(2)
    expect(page.locator("#explain-result .explain-verdict")).to_have_text([ALREADY, ALREADY])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "phone-explain", "#explain")
    assert_accessible(page, "campaign page at phone width")
    page.get_by_role("button", name="Archive").click()
    expect(page.locator("#campaign-status")).to_have_text("archived")
    # A campaign id already taken: said on the id field, at phone width.
    page.goto(f"{url}/admin#/new")
    page.get_by_label("Campaign id").fill(CAMPAIGN)
    page.get_by_label("Name", exact=True).fill("Spring again")
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


def remind_the_unseen(page: Page, url: str, admin_token: str) -> None:
    """Follow-up: from the stats, a reminder draft over a live segment of the audience never shown it
    (m000-m002 were), opened for editing."""
    page.goto(f"{url}/admin#/c/{CAMPAIGN}")
    page.get_by_role("button", name="Remind those who did not see it").click()
    expect(page.get_by_role("heading", name="Spring launch 2026 (reminder)")).to_be_visible()
    assert page.evaluate("location.hash") == f"#/c/{CAMPAIGN}-reminder"
    expect(page.locator("#campaign-status")).to_have_text("draft")
    reminder = trpc(url, admin_token, "campaigns.get", {"campaignId": f"{CAMPAIGN}-reminder"},
                    mutation=False)  # fmt: skip
    unseen = {"engaged": {"campaignId": CAMPAIGN, "event": "shown"}, "not": True}
    assert without_nulls(reminder["segment"]) == {"all": [{"memberOf": CAMPAIGN}, unseen]}
    counted = trpc(url, admin_token, "campaigns.previewSegment", {"segment": reminder["segment"]})
    assert counted == {"matches": 9}


def without_nulls(value: Any) -> Any:
    """``value`` without its null fields, at any depth (answers spell every optional field)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
