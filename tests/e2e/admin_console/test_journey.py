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

from pathlib import Path

import pytest
from playwright.sync_api import Browser

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID
from tests.e2e.admin_console.journey_compose import (
    MEMBERS,
    build_the_audience,
    check_the_shell,
    compose_through_field_errors,
    preview_the_email,
    save_through_a_conflict_and_an_outage,
    sign_in_with_the_keyboard,
)
from tests.e2e.admin_console.journey_explain import (
    at_phone_width,
    explain_recipients,
    pause_resume_and_list,
    remind_the_unseen,
)
from tests.e2e.admin_console.journey_segments import (
    build_and_save_a_segment,
    builder_at_phone_width,
    create_with_a_segment,
    follow_up_rule_in_words,
    viewer_reads_the_rule,
)
from tests.e2e.admin_console.journey_send import (
    go_live_and_send_a_test,
    read_the_stats,
    review_and_confirm,
    watch_the_progress,
)
from tests.support.console import (
    Watch,
    new_context,
    trpc,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


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
        check_the_shell(page, url)
        sign_in_with_the_keyboard(page, settings, admin_token)
        compose_through_field_errors(page)
        save_through_a_conflict_and_an_outage(page, url, admin_token)
        preview_the_email(page)
        build_the_audience(page)
        go_live_and_send_a_test(page, mailbox)
        review_and_confirm(page)
        watch_the_progress(page, url, admin_token)
        read_the_stats(page, url, settings, admin_token, mailbox)
        explain_recipients(page, url, admin_token)
        pause_resume_and_list(page)
        at_phone_width(page, url)
        remind_the_unseen(page, url, admin_token)
        follow_up_rule_in_words(page, url, admin_token)
        build_and_save_a_segment(page, url, admin_token)
        create_with_a_segment(page, url, admin_token)
        builder_at_phone_width(page, url)
        viewer_reads_the_rule(browser, url, settings)
        assert page.evaluate("window.__cspViolations") == []
        watch.assert_clean()
    finally:
        context.close()
