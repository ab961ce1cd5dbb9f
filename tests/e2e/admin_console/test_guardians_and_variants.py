"""Guardian routing and A/B variants in the console, from the composer to the review and the stats."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import assigned_variant, in_test_wave
from tests.conftest import ADMIN_ID
from tests.support.console import (
    assert_accessible,
    assert_every_control_labelled,
    explain_in_console,
    read_mail,
    shot,
    signed_in,
    trpc,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


def test_minors_are_routed_to_their_guardians_from_the_composer_to_the_review(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    """Guardian routing in the console, briefly: the composer sends minors to their guardians with the
    guardians' own copy, the review counts the guardian, the guardian's email is that copy, and the
    explanation says it in sentences: received as the guardian, a revoked guardian left out."""
    url, settings, mailbox = stack
    admin_token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    trpc(url, admin_token, "profiles.upsert", {"profiles": [
        {"profileId": "fam-parent", "dob": "1980-01-01",
         "emails": [{"address": "fam-parent@example.com", "verified": True, "primary": True}]},
        {"profileId": "fam-aunt", "dob": "1982-01-01"},
        {"profileId": "fam-kid", "dob": "2016-01-01", "isManaged": True,
         "guardians": [{"profileId": "fam-parent", "consent": "granted"},
                       {"profileId": "fam-aunt", "consent": "revoked"}]},
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
        _guardian_copy_in_french_and_in_app_with_its_preview(page)
        assert_every_control_labelled(page)
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Class trip")).to_be_visible()
        stored = trpc(url, admin_token, "campaigns.get", {"campaignId": "class-trip"}, mutation=False)
        assert stored["minors"] == "guardians"
        assert stored["guardianCopy"]["email"]["subject"] == "Your child's class travels on Friday"
        assert stored["guardianCopy"]["message"]["title"] == "Class trip on Friday"
        french = stored["guardianCopy"]["translations"]["fr"]
        assert (french["email"]["subject"], french["message"]["title"]) == (FR_SUBJECT, "Sortie de classe")
        [button] = stored["guardianCopy"]["message"]["actions"]
        assert button == {**stored["message"]["actions"][0], "label": "See the trip plan"}
        assert french["message"]["actions"] == [{**button, "label": "Voir le programme"}]
        audience = page.locator("#audience")
        audience.get_by_label("Source type").select_option("profileIds")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("fam-kid")
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text("1")
        page.get_by_role("button", name="Go live").click()
        expect(page.locator("#campaign-status")).to_have_text("live")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-guardians")).to_have_text("1 (notify 1, email 1)")
        guardians = page.locator("#locale-counts tr[data-channel='email'][data-locale='en'] td.guardians")
        expect(guardians).to_have_text("1")  # the routed guardian's language, counted apart
        assert_accessible(page, "review with guardians")
        page.get_by_role("button", name="Confirm and send to 1").click()
        expect(page.locator("#review-result")).to_contain_text("started")
        wait_for("the guardian's email", lambda: any(
            str(read_mail(p)["To"]) == "fam-parent@example.com" for p in mailbox.glob("*.eml")))  # fmt: skip
        mail = next(
            m for m in map(read_mail, mailbox.glob("*.eml")) if str(m["To"]) == "fam-parent@example.com"
        )
        assert str(mail["Subject"]) == "Your child's class travels on Friday"
        # The guardian's in-app card: the campaign's button under the guardians' label.
        parent = mint_token(settings, profile_id="fam-parent")
        [card] = trpc(url, parent, "campaigns.getMyCampaigns", None, mutation=False)["campaigns"]
        assert [a["label"] for a in card["message"]["actions"]] == ["See the trip plan"]
        assert card["message"]["actions"][0]["action"] == button["action"]
        # Explained in sentences: the guardian received it as one; the child's routes, each guardian's.
        explain_in_console(page, "fam-parent")
        expect(page.locator("#explain-guardian")).to_contain_text(
            "fam-parent is the guardian of fam-kid, who the age policy routes to them."
        )
        email = page.locator("#explain .explain-channel[data-channel='email'] .explain-verdict")
        expect(email).to_contain_text(re.compile(r"^Received the email as the guardian of fam-kid on "))
        expect(page.locator("#explain-language")).to_contain_text("the email in en")
        expect(page.locator("#explain-language")).to_contain_text(
            "as a routed guardian, over the guardian copy"
        )
        explain_in_console(page, "fam-kid")
        expect(page.locator("#explain-guardian")).to_contain_text(
            "fam-kid's guardian fam-parent receives it in their place."
        )
        expect(page.locator("#explain-guardian")).to_contain_text(
            "fam-kid's guardian fam-aunt will not receive it: consent revoked."
        )
        assert_accessible(page, "explain with guardian routes")
        shot(page, "explain-guardian-route", "#explain")
        watch.assert_clean()
    finally:
        context.close()


FR_SUBJECT = "La classe part en sortie vendredi"


def _guardian_copy_in_french_and_in_app_with_its_preview(page: Page) -> None:
    """The guardians' in-app copy and a French translation of their copy, and the preview of what a
    guardian reads: a French guardian's email and card in the French guardian copy, their notification
    the campaign's own (the guardian copy has none), a Dutch one the base guardian copy."""
    page.get_by_label("Action 1 label", exact=True).fill("Details")
    page.get_by_label("Action 1 kind", exact=True).select_option("externalLink")
    page.get_by_label("Action 1 path or URL", exact=True).fill("https://example.com/trip")
    page.get_by_label("Guardians' in-app title", exact=True).fill("Class trip on Friday")
    # The campaign's button, labelled for guardians (and again in French): what it does stays the same.
    page.get_by_label("Guardians' in-app button 1 label", exact=True).fill("See the trip plan")
    page.get_by_label("Add a guardian translation").fill("fr")
    page.get_by_role("button", name="Add guardian language").click()
    page.get_by_label("Guardians' in-app title (fr)").fill("Sortie de classe")
    page.get_by_label("Guardians' in-app button 1 label (fr)").fill("Voir le programme")
    for label, value in [("subject", FR_SUBJECT), ("heading", "Sortie de classe"),
                         ("body", "La classe part vendredi."), ("button label", "Détails")]:  # fmt: skip
        page.get_by_label(f"Guardians' email {label} (fr)").fill(value)
    preview = page.locator("#guardian-preview")
    page.get_by_label("A guardian whose language is").select_option("fr")
    email = preview.locator("[data-channel='email']")
    expect(email).to_have_attribute("data-served", "fr")
    expect(email).to_contain_text(f"Subject: {FR_SUBJECT}")
    expect(preview.locator("[data-channel='message']")).to_contain_text("Sortie de classe")
    expect(preview.locator("[data-channel='message']")).to_contain_text("[Voir le programme]")
    notification = preview.locator("[data-channel='notification']")
    expect(notification).to_have_attribute("data-source", "campaign")
    expect(preview).to_contain_text("nothing fills in a child's name")
    assert_accessible(page, "guardian copy with its preview")
    shot(page, "guardian-copy-preview", "#guardian-copy")
    page.get_by_label("A guardian whose language is").select_option("en")
    expect(email).to_contain_text("Subject: Your child's class travels on Friday")


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
        expect(page.locator("#variant-chart rect.variant-bar")).to_have_count(2 * 9)  # two arms, nine steps
        explain_in_console(page, members[0])  # which arm, and why, in the explanation
        expect(page.locator("#explain-variant")).to_have_attribute("data-variant", str(arms[members[0]]))
        expect(page.locator("#explain-variant")).to_contain_text("the keyed hash of (campaign, profile)")
        assert_accessible(page, "stats per variant")
        shot(page, "stats-variants", "#stats")
        _a_test_wave_is_run_from_the_review(page, url, admin_token)
        watch.assert_clean()
    finally:
        context.close()


def _the_forecast_waits_for_the_decision(page: Page) -> None:
    """With the test wave chosen the review asks again: its forecast sends the rest after the decision
    (two hours), and the deadline's verdict counts that wait (an hour away is too late for some)."""
    plan = page.locator("#review-plan .plan[data-channel='notify']")
    expect(plan.locator("li[data-kind='test_wave']")).to_contain_text("7200 s after the start")
    starts, finishes = (plan.locator("time").nth(i).get_attribute("datetime") for i in (0, 1))
    assert starts and finishes
    waited = datetime.fromisoformat(finishes) - datetime.fromisoformat(starts)
    assert waited >= timedelta(hours=2), waited
    in_an_hour = page.evaluate(
        "() => { const d = new Date(Date.now() + 3600e3);"
        " d.setMinutes(d.getMinutes() - d.getTimezoneOffset()); return d.toISOString().slice(0, 16); }"
    )
    page.get_by_label("Deliver by (optional)").fill(in_an_hour)
    expect(page.locator("#deliver-by-late")).to_contain_text("Too late for some")
    page.get_by_label("Deliver by (optional)").fill("")
    expect(page.locator("#deliver-by-verdict")).to_be_empty()
    expect(plan.locator("li[data-kind='test_wave']")).to_have_count(1)
    expect(plan.locator("li[data-kind='deadline']")).to_have_count(0)


WAVE = [f"wave{i:02d}" for i in range(24)]
WAVE_VARIANTS = [{"id": "A"}, {"id": "B", "message": {"title": "Challenger"}}]


def _a_test_wave_is_run_from_the_review(page: Page, url: str, token: str) -> None:
    """The review's A/B test wave: a share too small for the stack's two per variant refused in words,
    a larger one counted per variant as the keyed draw counts it, the send confirmed with it (the
    dispatch says it is testing), and the admin's decision shown once made."""
    trpc(url, token, "profiles.upsert", {"profiles": [{"profileId": p, "dob": "1990-01-01"} for p in WAVE]})
    trpc(url, token, "campaigns.create", {
        "id": "wave-console", "name": "Wave", "channels": ["inApp", "notify"],
        "message": {"title": "Control"}, "notification": {"title": "News", "body": "Read it"},
        "variants": WAVE_VARIANTS,
    })  # fmt: skip
    trpc(url, token, "campaigns.addAudience",
         {"campaignId": "wave-console", "source": {"type": "profileIds", "profileIds": WAVE}})  # fmt: skip
    trpc(url, token, "campaigns.setStatus", {"campaignId": "wave-console", "status": "live"})

    def wave(share: float) -> Counter[str]:
        return Counter(
            str(assigned_variant(WAVE_VARIANTS, campaign_id="wave-console", profile_id=p))
            for p in WAVE
            if in_test_wave("wave-console", p, share)
        )

    assert min(wave(0.05)["A"], wave(0.05)["B"]) < 2 <= min(wave(0.5)["A"], wave(0.5)["B"])
    page.goto(f"{url}/admin#/c/wave-console")
    expect(page.get_by_role("heading", name="Wave", exact=True)).to_be_visible()
    page.get_by_role("button", name="Review dispatch").click()
    expect(page.locator("#review-recipients")).to_have_text(str(len(WAVE)))
    page.get_by_label(re.compile("^Test the 2 variants")).check()
    expect(page.get_by_label("The variant wins on").locator("option")).to_have_text(
        ["In-app clicks", "In-app views"]  # no email channel: nothing to measure email clicks on
    )
    page.get_by_label("Test wave (% of the recipients)").fill("5")
    expect(page.locator("#experiment-refused")).to_have_attribute("data-refusal", "too_few_per_variant")
    expect(page.locator("#experiment-refused")).to_contain_text("too small to tell the variants apart")
    page.get_by_label("Test wave (% of the recipients)").fill("50")
    for arm in ("A", "B"):
        row = page.locator(f"#experiment-wave tr[data-variant='{arm}'] td")
        expect(row).to_have_text(str(wave(0.5)[arm]))
    page.get_by_label("Decide after (hours)").fill("2")
    _the_forecast_waits_for_the_decision(page)
    assert_every_control_labelled(page)
    assert_accessible(page, "review with a test wave")
    shot(page, "review-test-wave", "#review")
    page.get_by_role("button", name=f"Confirm and send to {len(WAVE)}").click()
    expect(page.locator("#review-result")).to_contain_text("started")
    expect(page.locator("[id^='testing-']")).to_contain_text(
        re.compile(r"50(\.0)?% of the recipients get their variant first")
    )
    stored = trpc(url, token, "campaigns.listDispatches", {"campaignId": "wave-console"}, mutation=False)
    [sent] = stored
    assert sent["experiment"] == {"testShare": 0.5, "metric": "clicked", "decideAfterSeconds": 7200}
    page.locator("[id^='testing-']").get_by_role("button", name="Choose B now").click()
    expect(page.locator("[id^='decision-']")).to_contain_text("Variant B won on in-app clicks")
    # Decided: a second test would serve some readers another variant, so the review refuses one.
    page.get_by_role("button", name="Review dispatch").click()
    expect(page.get_by_label(re.compile("^Test the 2 variants"))).not_to_be_checked()  # the new review
    page.get_by_label(re.compile("^Test the 2 variants")).check()
    expect(page.locator("#experiment-refused")).to_have_attribute("data-refusal", "decided")
    expect(page.locator("#experiment-refused")).to_contain_text("already decided an A/B test")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert_accessible(page, "test wave decided at phone width")
    shot(page, "phone-test-wave-decided", "#progress")
    page.set_viewport_size({"width": 1280, "height": 900})
