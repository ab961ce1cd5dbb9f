"""The schedule's steps of test_schedules_and_suppressions.py: the review's Schedule form (typed in the
admin's Paris time), and a large schedule under the tenant's approval policy, held for a second
publisher, scheduled once approved, then missed when the sweeper runs too late."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from playwright.sync_api import Browser, Page, expect

from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.console import TENANT, assert_accessible, shot, signed_in, tenant_token, trpc
from tests.support.delivery import local_queues

READERS = ["w1", "w2", "w3"]
SPRING: dict[str, Any] = {
    "id": "spring",
    "name": "Spring fair",
    "channels": ["notify"],
    "notification": {"title": "Spring fair", "body": "Come to the spring fair"},
}
PARIS = ZoneInfo("Europe/Paris")


def schedule_in_an_hour(page: Page, recipients: str = "3", *, confirm: bool = True) -> datetime:
    """Review, then Schedule for the next whole minute an hour from now in the admin's (Paris) time."""
    page.locator("#review").get_by_role("button", name="Review dispatch").click()
    expect(page.locator("#review-recipients")).to_have_text(recipients)
    expect(page.locator("#schedule")).not_to_have_attribute("open", "")  # the review drawn anew
    page.locator("#schedule summary").click()
    local = (datetime.now(PARIS) + timedelta(hours=1, minutes=1)).replace(second=0, microsecond=0)
    when = page.get_by_label("Send at")
    when.fill(local.strftime("%Y-%m-%dT%H:%M"))
    send_at = local.astimezone(UTC)
    # The UTC instant is echoed under the field as it is typed: what is sent is what was read.
    expect(page.locator("#schedule")).to_contain_text(send_at.strftime("%Y-%m-%d %H:%M:00 UTC"))
    if confirm:
        page.get_by_role("button", name="Schedule", exact=True).click()
        expect(page.locator("#schedule-done")).to_contain_text("Scheduled for")
    return send_at


def a_large_schedule_waits_for_approval(
    browser: Browser, url: str, settings: Settings, graph: Graph, platform: str
) -> None:
    """Under the tenant's approval policy: onChange must be review, and the schedule waits for a second
        publisher's approval of its preview (listed as a scheduled send), then goes through; when the sweeper
    runs too late for it, it is missed, and the progress says so with the reason."""
    publisher = tenant_token(settings, "pia", "publisher")
    trpc(url, publisher, "campaigns.create", SPRING)
    trpc(url, publisher, "campaigns.addAudience", {"campaignId": "spring",
         "source": {"type": "profileIds", "profileIds": READERS}})  # fmt: skip
    trpc(url, publisher, "campaigns.setStatus", {"campaignId": "spring", "status": "live"})
    trpc(url, platform, "tenants.update", {"tenantId": TENANT, "approval": {"minRecipients": 2}})
    context, page, watch = signed_in(browser, url, publisher)
    try:
        page.goto(f"{url}/admin#/c/spring")
        expect(page.get_by_role("heading", name="Spring fair")).to_be_visible()
        send_at = schedule_in_an_hour(page, confirm=False)
        page.get_by_label("If the campaign or its recipients change before then").select_option(
            "send_current"
        )
        page.get_by_role("button", name="Schedule", exact=True).click()
        expect(page.locator("#schedule-on-change-error")).to_have_text(
            "This tenant approves large sends, so a change before the send must hold it for review:"
            " choose “Hold it for review”."
        )
        page.get_by_label("If the campaign or its recipients change before then").select_option("review")
        page.get_by_role("button", name="Schedule", exact=True).click()
        waits = page.locator("#schedule-awaits")
        expect(waits).to_contain_text("Waiting for another publisher")
        expect(waits).to_contain_text("schedule it again here")
        expect(page.locator("#may-approve")).to_contain_text("pia")
        [held] = trpc(url, publisher, "campaigns.listAwaitingApproval", None, mutation=False)["records"]
        assert held["action"] == "schedule"
        second = tenant_token(settings, "pat", "publisher")
        trpc(
            url,
            second,
            "campaigns.approveDispatch",
            {"campaignId": "spring", "previewToken": held["previewToken"]},
        )
        page.get_by_role("button", name="Schedule", exact=True).click()  # the same review, approved now
        expect(page.locator("#schedule-done")).to_contain_text("Scheduled for")
        article = page.locator("#progress-list article[data-channel='notify']")
        expect(article).to_have_attribute("data-status", "scheduled")
        expect(article.locator(".schedule-pending")).to_contain_text("Approved by pat.")
        shot(page, "schedule-approved", "#review")
        page.set_viewport_size({"width": 390, "height": 844})  # the review and progress on a phone
        page.locator("#schedule").scroll_into_view_if_needed()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "schedule-phone", "viewport")
        assert_accessible(page, "schedule at phone width")
        # The machine was down past sendAt + maxLateSeconds (60 minutes): missed, and the page says why.
        queue = local_queues(Path(settings.campaign_local_queue_path)).dispatch
        late = send_at + timedelta(minutes=61)
        assert list(
            fire_due(graph, queue, now=late, settings=DispatchSettings.from_settings(settings)).values()
        ) == ["missed"]
        page.reload()
        outcome = page.locator("#progress-list article[data-status='missed'] .schedule-outcome")
        expect(outcome).to_contain_text("Missed: nothing was sent, because nothing could start it in time")
        expect(outcome).to_contain_text("the sweeper ran 3660 s after sendAt")
        shot(page, "schedule-missed-phone", "#progress")
        watch.assert_clean()
    finally:
        context.close()
