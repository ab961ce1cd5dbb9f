"""The admin journey's live segments, on the reminder draft the journey just made: its rule in words, the
audience's static members apart from the rule's matches (Remove only on a member), a rule built in the
builder with its live count (equal to an independent count of the seeded profiles), a rule past a limit
refused naming it, the rule saved, explain's verdict per condition, a new campaign created with its
rule, a viewer's read-only rule, and the builder at phone width."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from playwright.sync_api import Browser, Locator, Page, expect

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from tests.e2e.admin_console.journey_compose import CAMPAIGN, MEMBERS
from tests.e2e.admin_console.journey_explain import without_nulls
from tests.support.console import (
    assert_accessible,
    assert_every_control_labelled,
    explain_in_console,
    shot,
    signed_in,
    trpc,
)

REMINDER = f"{CAMPAIGN}-reminder"
SHOWN = ["m000", "m001", "m002"]  # the members whose apps recorded "shown" (journey_send.read_the_stats)

# Profiles only this part tags "chess": what the built rule can match, each with its facts.
CHESS: list[dict[str, Any]] = [
    {"profileId": "chess-ana", "locale": "fr-FR", "dob": "2010-05-01"},
    {"profileId": "chess-ben", "locale": "en-GB", "dob": "1980-05-01"},
    {"profileId": "chess-cleo", "locale": "fr", "dob": "1970-05-01"},
    {"profileId": "chess-dan", "locale": "de", "dob": "2001-05-01"},
    {"profileId": "chess-eve", "locale": "en", "dob": None},
]
AGE = 30


def _age(dob: str | None, today: date) -> int | None:
    if dob is None:
        return None
    born = date.fromisoformat(dob)
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))


def _matching(today: date) -> list[dict[str, Any]]:
    """Chess players who speak French or are at least 30 today (UTC), found over the list above alone."""
    return [p for p in CHESS if p["locale"].split("-")[0] == "fr" or (_age(p["dob"], today) or 0) >= AGE]


def _condition(page: Page, n: int) -> Locator:
    return page.locator(f"#segment .segment-condition[data-n='{n}']")


def follow_up_rule_in_words(page: Page, url: str, admin_token: str) -> None:
    """The reminder draft's rule, made by the stats' follow-up: each condition in words, the live count
    the API gives, and its matches listed apart from a static member, who alone has Remove."""
    page.set_viewport_size({"width": 1280, "height": 900})  # the journey comes from phone width
    expect(page.get_by_role("heading", name="Spring launch 2026 (reminder)")).to_be_visible()
    words = page.locator("#segment-words")
    # The rule stores the campaign's id; its words name the tenant's campaign by its name.
    name = trpc(url, admin_token, "campaigns.get", {"campaignId": CAMPAIGN}, mutation=False)["name"]
    expect(words.locator("li[data-condition]")).to_have_text(
        [f"is in the audience of campaign “{name}”", f"was not shown campaign “{name}”"]
    )
    expect(_condition(page, 2).locator(".segment-condition-words")).to_have_text(
        f"Everyone who was not shown campaign “{name}”"
    )
    unseen = len(MEMBERS) - len(SHOWN)
    expect(page.locator("#segment-count [data-matches]")).to_have_text(str(unseen))
    rows = page.locator("#members tbody tr")
    expect(rows).to_have_count(unseen)
    expect(page.locator("#members tr[data-member='false']")).to_have_count(unseen)
    expect(page.locator("#members tr[data-member='false'] button")).to_have_count(0)
    expect(rows.first.locator("td").nth(2)).to_have_text("Matches the live segment")
    # A static member beside the matches: m000 saw the launch, so only membership brings them in.
    audience = page.locator("#audience")
    audience.get_by_label("Source type").select_option("profileIds")
    audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("m000")
    audience.get_by_role("button", name="Add to audience").click()
    expect(page.locator("#audience-added")).to_have_text("1")
    member = page.locator("#members tr[data-member='true']")
    expect(member).to_have_count(1)
    expect(member.locator("td").first).to_have_text("m000")
    expect(member.get_by_role("button", name="Remove m000")).to_be_visible()
    expect(page.locator("#members tr[data-member='false'] button")).to_have_count(0)
    assert_accessible(page, "audience with members and matches")
    shot(page, "segment-follow-up", "#audience")
    member.get_by_role("button", name="Remove m000").click()
    expect(page.locator("#members tr[data-member='true']")).to_have_count(0)
    listed = trpc(url, admin_token, "campaigns.getAudience", {"campaignId": REMINDER}, mutation=False)
    assert [r["member"] for r in listed["records"]] == [False] * unseen


def build_and_save_a_segment(page: Page, url: str, admin_token: str) -> None:
    """The author replaces the rule in the builder: chess players who speak French or are at least 30.
    The live count follows each change and equals an independent count; seven conditions are refused
    naming the limit; the saved rule is what was built, and explain words each condition's verdict."""
    profiles = [{k: v for k, v in p.items() if v is not None} | {"tags": ["chess"]} for p in CHESS]
    trpc(url, admin_token, "profiles.upsert", {"profiles": profiles})
    builder = page.locator("#segment")
    builder.get_by_role("button", name="Remove condition 2").click()
    first = _condition(page, 1)
    first.get_by_label("Condition 1", exact=True).select_option("tag")
    first.get_by_label("Condition 1: tag").fill("chess")
    expect(first.locator(".segment-condition-words")).to_have_text("Everyone who has tag chess")
    expect(page.locator("#segment-count [data-matches]")).to_have_text(str(len(CHESS)))
    builder.get_by_role("button", name="Add group").first.click()  # "any of these", one condition
    group = builder.locator("fieldset.segment-group fieldset.segment-group")
    expect(group.locator("legend")).to_have_text("Rule, group 2: any of these")
    # Focus stays where the keyboard was: on the new condition's value, then on the kind just changed.
    expect(_condition(page, 2).get_by_label("Condition 2: tag")).to_be_focused()
    _condition(page, 2).get_by_label("Condition 2", exact=True).select_option("locale")
    expect(_condition(page, 2).get_by_label("Condition 2", exact=True)).to_be_focused()
    _condition(page, 2).get_by_label(re.compile("^Condition 2: language tag")).fill("fr")
    expect(_condition(page, 2).locator(".segment-condition-words")).to_have_text("Everyone who speaks French")
    group.get_by_role("button", name="Add condition").click()
    _condition(page, 3).get_by_label("Condition 3", exact=True).select_option("ageAtLeast")
    _condition(page, 3).get_by_label("Condition 3: years").fill(str(AGE))
    expect(_condition(page, 3).locator(".segment-condition-words")).to_have_text(
        f"Everyone who is at least {AGE}"
    )
    today = datetime.now(UTC).date()
    matching = _matching(today)
    expected = len(matching)
    assert 0 < expected < len(CHESS)
    expect(page.locator("#segment-count [data-matches]")).to_have_text(str(expected))
    counted = trpc(url, admin_token, "campaigns.previewSegment", {"segment": {"all": [
        {"tag": "chess"}, {"any": [{"locale": "fr"}, {"ageAtLeast": AGE}]}]}})  # fmt: skip
    assert counted == {"matches": expected}
    assert_every_control_labelled(page)
    assert_accessible(page, "segment builder")
    shot(page, "segment-builder", "#segment")

    # Past a limit: seven conditions, refused in the API's words, naming the limit.
    for n in range(4, 8):
        builder.get_by_role("button", name="Add condition").first.click()
        _condition(page, n).get_by_label(f"Condition {n}: tag").fill(f"extra-{n}")
    expect(page.locator("#segment-count [role=alert]")).to_contain_text("limit 'conditions' is 6")
    expect(page.locator("#segment-count [role=alert]")).to_contain_text("at most 6 conditions (found 7)")
    shot(page, "segment-limit", "#segment")
    for n in range(7, 3, -1):
        builder.get_by_role("button", name=f"Remove condition {n}").click()
    expect(page.locator("#segment-count [data-matches]")).to_have_text(str(expected))

    builder.get_by_role("button", name="Save segment").click()
    expect(page.locator("#segment-result")).to_contain_text("Segment saved")
    saved = trpc(url, admin_token, "campaigns.get", {"campaignId": REMINDER}, mutation=False)["segment"]
    assert without_nulls(saved) == {
        "all": [{"tag": "chess"}, {"any": [{"locale": "fr"}, {"ageAtLeast": AGE}]}]
    }
    # The list follows the saved rule, under the campaign's age policy (it excludes minors: chess-ana).
    adults = [p["profileId"] for p in matching if (_age(p["dob"], today) or 0) >= 18]
    assert 0 < len(adults) < expected
    expect(page.locator("#members tbody tr[data-member='false'] td:first-child")).to_have_text(adults)

    # Explain: each condition's verdict in words, from the API's answer.
    explain_in_console(page, "chess-ana")
    expect(page.locator("#explain-member")).to_have_text(
        "chess-ana is a member, matched by the live segment."
    )
    verdicts = page.locator("#explain-segment")
    expect(verdicts).to_have_attribute("data-matched", "true")
    expect(verdicts.locator("p").first).to_have_text("chess-ana matches the live segment now.")
    rows = verdicts.locator("tbody tr")
    expect(rows.locator("th")).to_have_text(["Has tag chess", "Speaks French", f"Is at least {AGE}"])
    expect(rows.locator("td:nth-child(2)")).to_have_text(["Meets it", "Meets it", "Does not meet it"])
    expect(rows.nth(2).locator("td").nth(1)).to_have_text(f"Is not at least {AGE}")
    answer = trpc(url, admin_token, "campaigns.explainRecipient",
                  {"campaignId": REMINDER, "profileId": "chess-ana"}, mutation=False)  # fmt: skip
    assert [(c["path"], c["ok"]) for c in answer["segment"]["conditions"]] == [
        ("all.0", True), ("all.1.any.0", True), ("all.1.any.1", False)]  # fmt: skip
    assert_accessible(page, "explain with segment verdicts")
    shot(page, "explain-segment", "#explain")


def create_with_a_segment(page: Page, url: str, admin_token: str) -> None:
    """A new campaign carries its rule from the start: built beside the composer, counted, created with
    the campaign, and read back in words on its page."""
    page.goto(f"{url}/admin#/new")
    page.get_by_label("Campaign id").fill("chess-club")
    page.get_by_label("Name", exact=True).fill("Chess club")
    page.get_by_label("Title", exact=True).fill("Chess club")
    page.get_by_label(re.compile(r"^Title \(banner")).fill("Chess club")
    page.get_by_label(re.compile(r"^Body \(banner")).fill("Thursdays at four")
    live = page.locator(".new-segment")
    expect(live.locator("#segment-count")).to_contain_text("Add a condition")
    live.get_by_role("button", name="Add condition").click()
    live.get_by_label("Condition 1: tag").fill("chess")
    expect(live.locator("#segment-count [data-matches]")).to_have_text(str(len(CHESS)))
    page.get_by_role("button", name="Create campaign").click()
    expect(page.get_by_role("heading", name="Chess club")).to_be_visible()
    expect(page.locator("#segment-words")).to_have_text("Also everyone who has tag chess, when it is sent.")
    stored = trpc(url, admin_token, "campaigns.get", {"campaignId": "chess-club"}, mutation=False)
    assert without_nulls(stored["segment"]) == {"tag": "chess"}


def viewer_reads_the_rule(browser: Browser, url: str, settings: Settings) -> None:
    """A viewer reads the saved rule in words: no builder, no save, no count."""
    token = mint_token(settings, profile_id="vera", tenant_id="default", roles=["viewer"])
    context, page, watch = signed_in(browser, url, token)
    try:
        page.goto(f"{url}/admin#/c/{REMINDER}")
        expect(page.locator("#segment-words li[data-condition]")).to_have_text(
            ["has tag chess", "speaks French", f"is at least {AGE}"]
        )
        expect(page.locator("#segment .segment-builder")).to_have_count(0)
        expect(page.locator("#save-segment")).to_have_count(0)
        expect(page.locator("#segment .role-note")).to_be_visible()
        watch.assert_clean()
    finally:
        context.close()


def builder_at_phone_width(page: Page, url: str) -> None:
    """The builder and the audience fit a phone's width with their words and count."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{url}/admin#/c/{REMINDER}")
    # The reminder's own page first: the campaign page left before has a counted segment too, and two
    # full runs saw the count found there, then the section detached when the reminder's page replaced it.
    expect(page.get_by_role("heading", name=re.compile(r"\(reminder\)$"))).to_be_visible()
    expect(page.locator("#segment-count [data-matches]")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator("#segment").scroll_into_view_if_needed()
    shot(page, "phone-segment", "#segment")
    assert_accessible(page, "segment builder at phone width")
