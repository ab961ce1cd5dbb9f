"""The last admin procedures on a screen, in tenant ``alpha``: a publisher schedules a reviewed send an
hour ahead in the review, sees it in the progress with its time in Paris, cancels it, schedules again,
and the sweeper's step (``fire_due``, given a ``now`` past ``sendAt``) starts it: the progress shows it
completed. A worker's abandoned email claim (written as the claim transaction writes it, counted by the
sweeper's own step) makes the email dispatch's uncertain recipient listed under it. A tenant admin
deletes a campaign after a confirmation naming it, lists suppressed addresses (detailed only where
alpha's sends caused them) and looks one up, but may not lift one: a suppression covers every tenant,
so a platform admin removes it (at phone width), after a confirmation saying what removing means. Under
an approval policy, the review says in words that a change must hold a schedule for review and that a
large one waits for a second publisher, and schedules it once approved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.delivery.sweeper import sweep
from campaign_engine.domain.types import format_ts
from campaign_engine.feedback.events import AddressEvent, Feedback
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.e2e.admin_console.journey_schedules import (
    READERS,
    a_large_schedule_waits_for_approval,
    schedule_in_an_hour,
)
from tests.support.console import (
    AUTUMN,
    DEADLINE,
    LOCAL_TIME,
    TENANT,
    Watch,
    assert_accessible,
    assert_every_control_labelled,
    new_context,
    shot,
    signed_in,
    tenant_alpha,
    tenant_token,
    trpc,
)
from tests.support.delivery import local_queues

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]

WINTER: dict[str, Any] = {
    "id": "winter",
    "name": "Winter term",
    "channels": ["notify", "email"],
    "notification": {"title": "Winter term", "body": "What changes this winter"},
    "email": {
        "subject": "Winter term",
        "title": "Winter term",
        "body": "What changes this winter.",
        "ctaLabel": "Read it",
    },
}


def _seed(url: str, settings: Settings) -> tuple[str, str]:
    """Tenant alpha with three email readers, WINTER live with them as its audience, AUTUMN as a draft."""
    tenant_alpha(url, settings)
    platform = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    trpc(url, platform, "tenants.update", {"tenantId": TENANT, "appOrigin": "https://app.campaigns.test"})
    trpc(url, platform, "profiles.upsert", {"profiles": [
        {"profileId": pid, "tenants": [TENANT], "dob": "1990-01-01",
         "emails": [{"address": f"{pid}@example.com", "verified": True, "primary": True}]}
        for pid in [*READERS, "w4"]
    ]})  # fmt: skip
    publisher = tenant_token(settings, "pia", "publisher")
    for campaign in (WINTER, AUTUMN):
        trpc(url, publisher, "campaigns.create", campaign)
    trpc(url, publisher, "campaigns.addAudience", {"campaignId": "winter",
         "source": {"type": "profileIds", "profileIds": READERS}})  # fmt: skip
    trpc(url, publisher, "campaigns.setStatus", {"campaignId": "winter", "status": "live"})
    return publisher, platform


def _publisher_schedules_cancels_and_sends(
    browser: Browser, url: str, settings: Settings, graph: Graph, publisher: str
) -> None:
    context, page, watch = signed_in(browser, url, publisher)
    try:
        page.goto(f"{url}/admin#/c/winter")
        expect(page.get_by_role("heading", name="Winter term")).to_be_visible()
        page.locator("#review").get_by_role("button", name="Review dispatch").click()
        page.locator("#schedule summary").click()
        page.locator("#schedule").get_by_label("Each recipient's own local time").check()
        expect(page.locator("#schedule")).to_contain_text("in their own zone")
        page.locator("#schedule").get_by_label("My time (Europe/Paris)").check()
        page.get_by_role("button", name="Schedule", exact=True).click()  # no time typed: said, not sent
        expect(page.locator("#schedule")).to_contain_text("Choose the date and time to send at.")
        send_at = schedule_in_an_hour(page)
        articles = page.locator("#progress-list article")
        expect(articles).to_have_count(2)
        for channel in ("notify", "email"):
            article = page.locator(f"#progress-list article[data-channel='{channel}']")
            expect(article).to_have_attribute("data-status", "scheduled")
            expect(article.locator(".schedule-pending time")).to_have_text(LOCAL_TIME)
            expect(article.locator(".schedule-pending")).to_contain_text("held for review")
            expect(article.locator("progress")).to_have_count(0)  # nothing sent yet: no bar of nothing
        stored = trpc(url, publisher, "campaigns.listDispatches", {"campaignId": "winter"}, mutation=False)
        assert {d["sendAt"][:16] for d in stored} == {send_at.strftime("%Y-%m-%dT%H:%M")}
        assert_every_control_labelled(page)
        shot(page, "schedule-review", "#review")
        shot(page, "schedule-pending", "#progress")
        assert_accessible(page, "scheduled send")

        page.locator("#progress-list article[data-channel='email']").get_by_role(
            "button", name="Cancel the scheduled send"
        ).click()
        for channel in ("notify", "email"):  # every channel of the schedule
            article = page.locator(f"#progress-list article[data-channel='{channel}']")
            expect(article).to_have_attribute("data-status", "cancelled")
            expect(article.locator(".schedule-outcome")).to_contain_text("an admin cancelled it")

        send_at = schedule_in_an_hour(page)
        expect(page.locator("#progress-list article[data-status='scheduled']")).to_have_count(2)
        # The sweeper's step, an hour on: the schedule starts, and the worker sends it.
        queue = local_queues(Path(settings.campaign_local_queue_path)).dispatch
        fired = fire_due(graph, queue, now=send_at + timedelta(seconds=5),
                         settings=DispatchSettings.from_settings(settings))  # fmt: skip
        assert list(fired.values()) == ["sending"]
        page.reload()
        for channel in ("notify", "email"):
            article = page.locator(
                f"#progress-list article[data-channel='{channel}'][data-status='completed']"
            )
            expect(article).to_have_count(1, timeout=DEADLINE * 1000)
            expect(article.locator(".schedule-line")).to_contain_text("started")
        shot(page, "schedule-fired", "#progress")
        _an_uncertain_recipient_is_listed(page, url, settings, graph, publisher)
        watch.assert_clean()
    finally:
        context.close()


def _an_uncertain_recipient_is_listed(
    page: Page, url: str, settings: Settings, graph: Graph, publisher: str
) -> None:
    """A claim a stopped worker left (as test_email_uncertain.py writes it), older than the horizon."""
    listed = trpc(url, publisher, "campaigns.listDispatches", {"campaignId": "winter"}, mutation=False)
    [email] = [d for d in listed if d["channel"] == "email" and d["status"] == "completed"]
    claimed = datetime.now(UTC) - timedelta(hours=1)
    graph.run(
        "MATCH (c:Campaign {id: 'winter'}), (p:Profile {profileId: 'w4'})"
        " CREATE (p)-[:CAMPAIGN_STATE {emailClaimedAt: $at, emailClaimId: 'dead-worker',"
        " emailDispatchId: $dispatchId, emailOutcome: 'claimed'}]->(c)",
        at=format_ts(claimed),
        dispatchId=email["dispatchId"],
    )
    # The sweeper's own count (the stack's worker may count it first: once either way).
    queue = local_queues(Path(settings.campaign_local_queue_path)).dispatch
    sweep(graph, queue, now=datetime.now(UTC), stuck_after_seconds=10**6, uncertain_after_seconds=600)
    page.reload()
    article = page.locator("#progress-list article[data-channel='email']")
    expect(article.locator("[data-counter='uncertain']")).to_have_text("1")
    article.get_by_role("button", name="List the 1 uncertain recipients").click()
    row = article.locator(f"#uncertain-{email['dispatchId']} tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-profile", "w4")
    expect(row).to_contain_text("the worker sending it stopped")
    expect(article.locator(".uncertain")).to_contain_text("may or may not have accepted")
    expect(article.locator(".uncertain")).to_contain_text("that is all of them")
    expect(article.get_by_role("button", name="Show more")).to_be_hidden()
    shot(page, "uncertain-emails", "#progress")
    assert_accessible(page, "uncertain emails")


def _suppress(graph: Graph, settings: Settings) -> None:
    """w1 hard-bounced on alpha's own send (its provider message id), w2 on no send alpha can trace."""
    [w1_message] = graph.run(
        "MATCH (:Profile {profileId: 'w1'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'winter'})"
        " RETURN s.emailProviderMessageId AS id"
    )
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1),
                          clock=lambda: datetime.now(UTC))  # fmt: skip
    for key, address, ids in (("b-1", "w1@example.com", (w1_message["id"],)), ("b-2", "w2@example.com", ())):
        event = AddressEvent(address=address, action="hard_bounce", detail="550 mailbox unknown")
        store.apply(Feedback(key, "postmark", (event,), message_ids=ids))


def _admin_deletes_and_reads_suppressions(browser: Browser, url: str, settings: Settings) -> None:
    admin = tenant_token(settings, "ada", "admin")
    context, page, watch = signed_in(browser, url, admin)
    try:
        page.get_by_role("link", name="Autumn news").click()
        expect(page.get_by_role("heading", name="Autumn news")).to_be_visible()
        page.get_by_role("button", name="Delete campaign…").click()
        confirm = page.locator("#delete-confirm")
        expect(confirm).to_contain_text("Delete “Autumn news” (autumn)?")
        expect(confirm).to_contain_text("dispatches")
        expect(confirm).to_contain_text("The audit trail keeps")
        expect(page.locator("#delete-yes")).to_be_focused()
        shot(page, "delete-confirm", ".campaign-head")
        assert_accessible(page, "delete confirmation")
        page.get_by_role("button", name="Keep it").click()  # not confirmed: kept
        expect(confirm).to_be_hidden()
        assert trpc(url, admin, "campaigns.get", {"campaignId": "autumn"}, mutation=False)["id"] == "autumn"
        page.get_by_role("button", name="Delete campaign…").click()
        page.get_by_role("button", name="Delete Autumn news").click()
        expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
        expect(page.locator("#campaigns tbody tr", has_text="Autumn news")).to_have_count(0)
        expect(page.locator("#campaigns tbody tr", has_text="Winter term")).to_have_count(1)

        page.get_by_role("link", name="Suppressions").click()
        expect(page.get_by_role("heading", name="Suppressions", exact=True)).to_be_visible()
        rows = page.locator("#suppressions tbody tr[data-address]")
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_have_attribute("data-address", "w1@example.com")
        expect(rows.nth(0).locator("[data-field='reason']")).to_have_text("Hard bounce")
        expect(rows.nth(0).locator("time")).to_have_text(LOCAL_TIME)
        expect(rows.nth(1).locator("[data-field='reason']")).to_contain_text("not by this tenant's sends")
        expect(page.locator("#suppressions-more")).to_be_hidden()  # one page holds them all
        expect(page.get_by_role("button", name="Remove", exact=True)).to_have_count(0)  # platform only
        expect(page.locator("main .role-note")).to_contain_text("needs a platform admin")
        page.get_by_label("Address", exact=True).fill("W1@Example.com")  # any spelling finds it
        page.get_by_role("button", name="Look up").click()
        expect(page.locator("#suppression-found [data-field='reason']")).to_have_text("Hard bounce")
        page.get_by_label("Address", exact=True).fill("w3@example.com")
        page.get_by_role("button", name="Look up").click()
        expect(page.locator("#suppression-found")).to_contain_text("w3@example.com is not suppressed")
        assert_every_control_labelled(page)
        shot(page, "suppressions")
        assert_accessible(page, "suppressions")
        watch.assert_clean()
    finally:
        context.close()


def _platform_admin_removes_at_phone_width(browser: Browser, url: str, platform: str) -> None:
    context = new_context(browser, 390, 844)
    try:
        page = context.new_page()
        watch = Watch(page, url)
        page.goto(f"{url}/admin#token={platform}")
        page.goto(f"{url}/admin#/suppressions")
        row = page.locator("#suppressions tbody tr[data-address='w1@example.com']")
        expect(row).to_have_count(1)
        row.get_by_role("button", name="Remove the suppression of w1@example.com").click()
        ask = row.get_by_role("group", name="Confirm removing w1@example.com")
        expect(ask).to_contain_text("may receive email again")
        expect(ask).to_contain_text("if it hard-bounces again it is suppressed again")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the table scrolls
        shot(page, "suppressions-phone", "viewport")
        assert_accessible(page, "suppressions at phone width")
        ask.get_by_role("button", name="Remove w1@example.com").click()
        expect(page.locator("#suppressions tbody tr[data-address]")).to_have_count(1)
        expect(page.locator("#suppressions tbody tr[data-address='w2@example.com']")).to_have_count(1)
        answer = httpx.get(f"{url}/trpc/suppressions.get", params={"input": '{"address": "w1@example.com"}'},
                           headers={"authorization": f"Bearer {platform}"})  # fmt: skip
        assert answer.status_code == 404
        watch.assert_clean()
    finally:
        context.close()


def test_schedule_cancel_fire_uncertain_delete_and_suppressions(
    stack: tuple[str, Settings, Path], browser: Browser, graph: Graph
) -> None:
    url, settings, _ = stack
    publisher, platform = _seed(url, settings)
    _publisher_schedules_cancels_and_sends(browser, url, settings, graph, publisher)
    _suppress(graph, settings)
    _admin_deletes_and_reads_suppressions(browser, url, settings)
    _platform_admin_removes_at_phone_width(browser, url, platform)
    a_large_schedule_waits_for_approval(browser, url, settings, graph, platform)
