"""The review's deadline in the admin console, in Debian's Chromium: "Deliver by" in each recipient's
own time says before sending who would be late and why (quiet hours until 13:00 against 12:01), the
send is refused in words, "Send anyway if some get it late" sends it (audited), and the progress says
it is behind: expected to finish after its deadline. A later deadline is met.

The API serves the console in a thread against the real Neo4j; no worker runs (the send's first page
waits in the local queue), so the progress is the confirmation's own forecast.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.console import assert_accessible, shot, signed_in
from tests.support.delivery import StepClock, add_members, local_queues, make_campaign
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e
expect.set_options(timeout=20_000)


def test_deliver_by_says_who_would_be_late_refuses_then_sends_accepting_it(
    base_settings: Settings, graph: Graph, tmp_path: Path, browser: Browser
) -> None:
    # At NOW (12:00 UTC) everyone is in quiet hours until 13:00 (the campaign's zone: nobody has one).
    make_campaign(graph, "c1", quietHours={"start": "11:00", "end": "13:00"}, timeZone="UTC")
    add_members(graph, "c1", [f"p{i:03d}" for i in range(150)])
    queues = local_queues(tmp_path / "q.sqlite3")
    app = create_app(base_settings, graph=graph, dispatch_queue=queues.dispatch, clock=StepClock())
    with serve_in_thread(app) as url:
        token = mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
        context, page, watch = signed_in(browser, url, token)
        watch.expected_api_errors = (*watch.expected_api_errors, 412)  # the refusal, provoked on purpose
        try:
            page.goto(f"{url}/admin#/c/c1")
            page.get_by_role("button", name="Review dispatch").click()
            page.locator("#deliver-by-theirs").check()
            page.locator("#deliver-by-at").fill("2026-03-01T13:10")
            expect(page.locator("#deliver-by-met")).to_contain_text(
                "Meets it: every recipient gets it by 13:10"
            )
            page.locator("#deliver-by-at").fill("2026-03-01T12:01")
            late = page.locator("#deliver-by-late")
            expect(late).to_contain_text(
                "150 recipients would get it after 12:01 on 2026-03-01 in their time (150 in UTC): "
                "quiet hours end at 13:00 for 150 of them"
            )
            shot(page, "review-deadline-late", "#review")
            assert_accessible(page, "review-deadline-late")

            page.locator("#confirm-send").click()
            expect(page.locator("#deliver-by-refused")).to_contain_text("Not sent: it would be late.")
            assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0

            page.get_by_label("Send anyway if some get it late").check()
            page.locator("#confirm-send").click()
            expect(page.get_by_text("Dispatch dsp_")).to_be_visible()
            behind = page.locator("article[data-channel='notify'] .deadline-behind")
            expect(behind).to_contain_text("Behind: expected to finish")
            expect(behind).to_contain_text("min after its deadline (12:01 on 2026-03-01 in their time)")
            shot(page, "progress-deadline-behind", "#progress")
            assert watch.errors == [] and watch.foreign == [], watch.errors
        finally:
            context.close()
    [entry] = graph.run("MATCH (a:AuditEntry {procedure: 'campaigns.dispatch'}) RETURN a.detail AS d")
    assert {k: json.loads(entry["d"])[k] for k in ("acceptLate", "late")} == {"acceptLate": True, "late": 150}
