"""Signing in to the console and keeping the session: a dev sign-in link read then cleared from the
address bar, a link that asks before replacing a held session, and a session that warns before it ends
and is renewed in place, keeping what was typed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Dialog, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.support.console import (
    LOCAL_TIME,
    WATCH_SCRIPT,
    Watch,
    api_failure,
    assert_accessible,
    new_context,
    shot,
    trpc,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


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
        page.get_by_label("Name", exact=True).fill("Typed before the end")
        page.get_by_label("Title", exact=True).fill("Still here")
        page.get_by_label(re.compile(r"^Title \(banner")).fill("Still here")
        page.get_by_label(re.compile(r"^Body \(banner")).fill("Nothing typed is lost.")

        dialog = page.locator("#session-renew")
        expect(dialog).to_be_visible(timeout=(ttl + 10) * 1000)
        expect(dialog.get_by_role("heading")).to_have_text("Your session has ended")
        expect(dialog).to_contain_text("Nothing is lost")
        assert page.evaluate("location.hash") == "#/new"  # the page stays; the sign-in screen never shows
        expect(page.get_by_label("Name", exact=True)).to_have_value("Typed before the end")
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
        expect(page.get_by_label("Name", exact=True)).to_have_value("Typed before the end")
        expect(page.get_by_label("Campaign id")).to_have_value(name)

        # A fresh sign-in link opened in this tab renews as well, with the page left as it is.
        third = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, ttl_seconds=3600)
        page.evaluate(f"location.hash = '#token={third}'")
        page.wait_for_function("location.hash === '#/new'")
        page.wait_for_function(
            f"sessionStorage.getItem('campaign-engine.admin-token') === {json.dumps(third)}"
        )
        expect(warning).to_be_hidden()
        expect(page.get_by_label("Name", exact=True)).to_have_value("Typed before the end")

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
