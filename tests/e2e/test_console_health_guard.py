"""The health guard in the admin console, in Debian's Chromium: a dispatch the guard
paused shows why on the progress screen, and its Resume button continues it.

The API serves the console in a thread; the worker runs in this process against the real Neo4j, the
Postmark stand-in and a durable local queue, page by page, so the test decides when the next page runs.
Bounces arrive as real Postmark webhook posts to the API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.console import assert_accessible, shot, signed_in
from tests.support.delivery import StepClock, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e
expect.set_options(timeout=20_000)

USER, PASSWORD = "postmark", "pm-webhook-password-0123456789"
BOUNCE = {
    "RecordType": "Bounce", "MessageStream": "broadcast", "Type": "HardBounce", "TypeCode": 1,
    "Name": "Hard bounce", "Description": "unknown user", "Details": "mailbox not found",
    "From": "news@campaigns.test", "BouncedAt": "2026-03-01T12:00:00Z", "Inactive": True,
}  # fmt: skip


def _bounce(url: str, messages: list[dict[str, Any]]) -> None:
    """Postmark reports a hard bounce for each message, one webhook post each."""
    for n, message in enumerate(messages):
        body = {**BOUNCE, "ID": 9000 + n, "MessageID": message["MessageID"], "Email": message["To"]}
        answer = httpx.post(f"{url}/webhooks/postmark", json=body, auth=(USER, PASSWORD), timeout=30)
        assert answer.status_code == 200, answer.text


def test_a_paused_dispatch_shows_its_reason_and_resumes_from_the_console(
    base_settings: Settings, graph: Graph, tmp_path: Path, browser: Browser
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    with PostmarkStandin() as postmark:
        settings = email_settings(
            base_settings, postmark.url, postmark.token,
            campaign_email_page_size=100, campaign_email_run_seconds=0.0,
            postmark_webhook_username=USER, postmark_webhook_password=SecretStr(PASSWORD),
        )  # fmt: skip
        make_email_campaign(graph)
        add_email_members(graph, "c1", [f"p{n:04d}" for n in range(300)])
        dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=1000).dispatch_ids["email"]
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            with serve_in_thread(create_app(settings, graph=graph, dispatch_queue=queues.dispatch)) as url:
                for _ in range(2):  # the first wave: 200 accepted
                    worker.handle(queues.dispatch, queues.dispatch.receive(max_messages=1))
                _bounce(url, postmark.accepted[:6])  # 3% of them
                worker.handle(queues.dispatch, queues.dispatch.receive(max_messages=1))
                assert get_dispatch(graph, dispatch_id).status == "paused"

                token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
                context, page, watch = signed_in(browser, url, token)
                try:
                    page.goto(f"{url}/admin#/c/c1")
                    article = page.locator("article[data-channel='email']")
                    expect(article).to_have_attribute("data-status", "paused")
                    expect(article.locator(".dispatch-status")).to_have_text("Paused by the health guard")
                    notice = article.locator(f"#paused-{dispatch_id}")
                    expect(notice).to_contain_text("Paused: nothing more is sent.")
                    expect(notice).to_contain_text("hard-bounce rate reached 3.0% over 200 recipients")
                    expect(notice).to_contain_text("above the limit of 2.0%")
                    expect(notice.locator("[data-pause-reason='hardBounce']")).to_have_text(
                        "hard_bounce_rate 0.03 > 0.02 (over 200)"
                    )
                    expect(article.locator("[data-counter='hardbounces']")).to_have_text("6")
                    shot(page, "dispatch-paused", "#progress")
                    assert_accessible(page, "dispatch-paused")

                    notice.get_by_role("button", name="Resume").click()
                    expect(article).to_have_attribute("data-status", "sending")
                    assert len(postmark.accepted) == 200  # resumed, but the next page has not run yet
                    drain(worker.handle, queues)
                    page.reload()
                    expect(article).to_have_attribute("data-status", "completed")
                    expect(article.locator("[data-counter='emailed']")).to_have_text("300")
                    watch.assert_clean()
                finally:
                    context.close()
        finally:
            worker.close()
    assert len({m["To"] for m in postmark.accepted}) == len(postmark.accepted) == 300
