"""Translations composed, previewed and reviewed in the console, and the tenant's email layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.console import (
    assert_accessible,
    assert_every_control_labelled,
    read_mail,
    shot,
    signed_in,
    trpc,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


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
        page.get_by_label("Action 1 label", exact=True).fill("Open in the app")
        page.get_by_label("Action 1 kind", exact=True).select_option("externalLink")
        page.get_by_label("Action 1 path or URL", exact=True).fill("https://example.com/spring")
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
        # The in-app button's label in Spanish; Arabic leaves it empty and keeps the base label.
        page.get_by_label("In-app button 1 label (es)").fill("Abrir en la app")
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
        buttons = {tag: stored["translations"][tag]["message"]["actions"] for tag in ("es", "ar")}
        assert [(a["label"], a["action"]["url"]) for a in buttons["es"]] == [
            ("Abrir en la app", "https://example.com/spring")
        ]
        assert [a["label"] for a in buttons["ar"]] == ["Open in the app"]

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
        reader = mint_token(settings, profile_id="l-mx")  # es-MX reads es: the card's button in Spanish
        [card] = trpc(url, reader, "campaigns.getMyCampaigns", None, mutation=False)["campaigns"]
        assert [a["label"] for a in card["message"]["actions"]] == ["Abrir en la app"]
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

        # --- duplicate (folded away): a new draft with the translations, no audience, named apart
        expect(page.get_by_label("Id of the copy")).to_be_hidden()
        page.locator("#duplicate summary").click()
        page.get_by_label("Id of the copy").fill("spring-langs-2")
        name = trpc(url, admin_token, "campaigns.get", {"campaignId": "spring-langs"}, mutation=False)["name"]
        expect(page.get_by_label("Name of the copy")).to_have_value(f"{name} (copy)")
        page.get_by_role("button", name="Duplicate").click()
        expect(page.locator("#campaign-status")).to_have_text("draft")
        expect(page.get_by_role("heading", name=f"{name} (copy)")).to_be_visible()
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
