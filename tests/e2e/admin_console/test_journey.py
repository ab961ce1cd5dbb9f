"""The admin console at /admin in a real browser: Debian's Chromium, driven by Playwright.

The API (uvicorn, in a thread), the reference inbox (uvicorn, in a thread), the worker and the SMTP
catcher (OS processes, ``campaign-engine worker`` / ``smtp-catcher``) run against the session's real
Neo4j and one durable local queue file. The journey goes through the console only, the way an admin
would: sign in, create (with a validation error and an edit conflict on the way), audience by several
sources, email preview, send a test, review, confirm, watch the dispatch complete, read the stats.
Two other actors use the public API directly, as they would: a second admin who edits the campaign
behind the first one's back, and members whose apps record engagement.

It fails on any console error, page error, CSP violation (a listener injected into every frame from
``admin_console_watch.js``) or request that leaves the server's origin. Screenshots of each screen go to
``tests/artifacts/admin-*.png``. The assets must be built (``make admin-assets``; ``make test`` does).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.console import (
    DEADLINE,
    LOCAL_TIME,
    Watch,
    api_failure,
    assert_accessible,
    assert_every_control_labelled,
    explain_in_console,
    new_context,
    read_mail,
    shot,
    trpc,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]

MEMBERS = [f"m{i:03d}" for i in range(12)]
CAMPAIGN = "spring-launch"


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
