"""Roles in tenant ``alpha``: a viewer is offered nothing that writes, an author creates and reviews but
cannot send, a tenant admin grants and revokes a role and creates a key (shown once, copied, then seen
in use and revoked), and a send the tenant's approval policy holds back is approved from the Approvals
list by a second publisher (the requester is not offered Approve, and an approval of a stale preview is
refused); the in-app card shows only once a second publisher approved its go-live, seeing the
differences, and an edit of the live card stays invisible until approved. Every procedure the console
calls is in the server's access table."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.console import (
    AUTUMN,
    TENANT,
    TENANT_MEMBERS,
    assert_accessible,
    assert_every_control_labelled,
    author_writes_autumn,
    shot,
    signed_in,
    tenant_alpha,
    tenant_token,
    trpc,
)
from tests.support.processes import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


def test_each_role_sees_only_what_it_may_do(stack: tuple[str, Settings, Path], browser: Browser) -> None:
    url, settings, _ = stack
    tenant_alpha(url, settings)
    author = tenant_token(settings, "ana", "author")
    trpc(url, author, "campaigns.create", AUTUMN)
    trpc(url, author, "campaigns.addAudience", {"campaignId": "autumn",
         "source": {"type": "profileIds", "profileIds": TENANT_MEMBERS}})  # fmt: skip

    # The console reads the role each procedure needs from the server's own table.
    table = {
        path.removeprefix("/trpc/"): op["x-access"]
        for path, methods in httpx.get(f"{url}/openapi.json").json()["paths"].items()
        for op in methods.values()
    }
    assert table["campaigns.create"] == "author" and table["campaigns.dispatch"] == "publisher"

    # --- a viewer: reads everything of the tenant, is offered nothing that writes
    context, page, watch = signed_in(browser, url, tenant_token(settings, "vic", "viewer"))
    try:
        expect(page.locator("#whoami-tenant")).to_have_text(TENANT)
        expect(page.locator("#whoami-role")).to_have_text("viewer")
        expect(page.get_by_role("link", name="New campaign")).to_have_count(0)
        expect(page.get_by_role("link", name="Access and keys")).to_have_count(0)
        expect(page.locator("#campaigns tbody tr", has_text="Autumn news")).to_have_count(1)
        page.get_by_role("link", name="Autumn news").click()
        expect(page.get_by_role("heading", name="Autumn news")).to_be_visible()
        expect(page.locator("#members tbody tr")).to_have_count(3)
        for name in ("Go live", "Archive", "Save changes", "Preview count", "Add to audience",
                     "Remove from audience", "Remove", "Save segment", "Send test to me",
                     "Review dispatch", "Delete campaign…"):  # fmt: skip
            expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
        expect(page.get_by_label("Name", exact=True)).to_be_disabled()
        expect(page.locator("#review .role-note")).to_have_text(
            "Reviewing a send needs the author role; you are a viewer."
        )
        expect(page.locator(".campaign-head .role-note")).to_contain_text("needs the publisher role")
        shot(page, "role-viewer", "viewport")
        assert_accessible(page, "role-viewer")
        page.goto(f"{url}/admin#/new")
        expect(page.get_by_role("heading", name="New campaign")).to_be_visible()
        expect(page.locator("main .role-note")).to_have_text(
            "Creating a campaign needs the author role; you are a viewer."
        )
        expect(page.get_by_role("button", name="Create campaign")).to_have_count(0)
        watch.assert_clean()
    finally:
        context.close()

    # --- an author: creates and edits, reviews a send, may not send it nor change its status
    context, page, watch = signed_in(browser, url, author)
    try:
        expect(page.locator("#whoami-role")).to_have_text("author")
        page.get_by_role("link", name="New campaign").first.click()
        page.get_by_label("Campaign id").fill("winter")
        page.get_by_label("Name", exact=True).fill("Winter news")
        page.get_by_label("Notification (inbox/push)").uncheck()
        page.get_by_label("Title", exact=True).fill("Winter is coming")
        page.get_by_role("button", name="Create campaign").click()
        expect(page.get_by_role("heading", name="Winter news")).to_be_visible()
        expect(page.get_by_role("button", name="Save changes")).to_be_enabled()
        expect(page.get_by_role("button", name="Go live")).to_have_count(0)
        audience = page.locator("#audience")
        audience.get_by_label(re.compile("^Profile ids, DIDs")).fill("a1\na2")
        audience.get_by_role("button", name="Add to audience").click()
        expect(page.locator("#audience-added")).to_have_text("2")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-audience")).to_have_text("2")
        expect(page.get_by_role("button", name=re.compile("^Confirm and send"))).to_have_count(0)
        expect(page.locator("#review .role-note")).to_have_text(
            "Sending needs the publisher role; you are an author."
        )
        shot(page, "role-author", "#review")
        assert_accessible(page, "role-author")
        watch.assert_clean()
    finally:
        context.close()
    created = trpc(url, author, "campaigns.get", {"campaignId": "winter"}, mutation=False)
    assert created["status"] == "draft" and created["tenantId"] == TENANT

    # --- a tenant admin: grants a role, revokes it; creates a key, sees it once, sees its use, revokes it
    context, page, watch = signed_in(browser, url, tenant_token(settings, "ada", "admin"))
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    try:
        expect(page.locator("#whoami-role")).to_have_text("admin")
        page.get_by_role("link", name="Access and keys").click()
        expect(page.get_by_role("heading", name="Access and keys")).to_be_visible()
        # The screen lists grants and keys as it opens; a grant clicked before that first list answers
        # can be drawn over by it (an admin sees the lists before using them; a loaded machine may not).
        expect(page.locator("#grants-table")).to_contain_text("No grants yet.")
        expect(page.locator("#keys-table")).to_contain_text("No API keys yet.")
        grants = page.locator("#grants")
        grants.get_by_label("Profile id").fill("pat")
        grants.get_by_label("Role", exact=True).select_option("publisher")
        grants.get_by_role("button", name="Grant role").click()
        expect(page.locator("#grants-table tr[data-subject='pat'][data-role='publisher']")).to_contain_text(
            "ada"
        )
        listed = trpc(url, author, "access.me", None, mutation=False)
        assert listed["role"] == "author"
        pat = mint_token(settings, profile_id="pat", tenant_id=TENANT)  # no role claim: the grant is its role
        assert trpc(url, pat, "access.me", None, mutation=False)["role"] == "publisher"
        assert_every_control_labelled(page)

        keys = page.locator("#keys")
        keys.get_by_label("Key name").fill("SIS sync")
        keys.get_by_label("Key role").select_option("viewer")
        keys.get_by_role("button", name="Create key").click()
        once = page.locator("#new-key")
        expect(once).to_have_value(re.compile(r"^cek_"))
        key = once.input_value()
        expect(page.locator(".key-once")).to_contain_text("only time it is shown")
        keys.get_by_role("button", name="Copy key").click()
        expect(keys).to_contain_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == key
        shot(page, "key-once", "#keys")
        assert_accessible(page, "key-once")
        row = page.locator("#keys-table tr", has_text="SIS sync")
        expect(row.locator("[data-field='lastUsedAt']")).to_have_text("never")
        # The key works, as an integration would use it; the list then shows its last use.
        assert [c["id"] for c in trpc(url, key, "campaigns.list", {}, mutation=False)["records"]] == [
            "autumn",
            "winter",
        ]
        keys.get_by_role("button", name="I have stored it, hide the key").click()
        expect(once).to_have_count(0)

        # pat has a campaign open as a publisher when the role is revoked: Go live is refused in words
        # naming the role it needs and the one pat now holds.
        pat_context, pat_page, pat_watch = signed_in(browser, url, pat)
        pat_page.goto(f"{url}/admin#/c/autumn")
        go_live = pat_page.get_by_role("button", name="Go live")
        expect(go_live).to_be_visible()

        page.once("dialog", lambda dialog: dialog.accept())
        grants.get_by_role("button", name="Revoke publisher from pat").click()
        expect(page.locator("#grants-table tr[data-subject='pat']")).to_have_count(0)
        assert trpc(url, pat, "access.me", None, mutation=False)["role"] is None
        go_live.click()
        refusal = pat_page.locator(".campaign-head [data-code='FORBIDDEN'] .error-words")
        expect(refusal).to_have_text(
            "Not allowed: changing the campaign's status needs the publisher role; you hold no role here."
            " Nothing was changed."
        )
        expect(pat_page.locator("#whoami-role")).to_have_text("publisher")  # the header redraws on navigation
        shot(pat_page, "forbidden", ".campaign-head")
        pat_watch.assert_clean()
        pat_context.close()

        page.reload()  # a fresh load shows last use; the key itself is nowhere on the page any more
        row = page.locator("#keys-table tr", has_text="SIS sync")
        expect(row.locator("[data-field='lastUsedAt']")).not_to_have_text("never")
        assert key not in page.content()
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Revoke key SIS sync").click()
        expect(row).to_have_attribute("data-state", "revoked")
        expect(row.locator("[data-field='state']")).to_contain_text("revoked")
        refused = httpx.get(f"{url}/trpc/campaigns.list", headers={"authorization": f"Bearer {key}"})
        assert refused.status_code == 401
        shot(page, "access", "viewport")
        assert_accessible(page, "access")
        watch.assert_clean()
    finally:
        context.close()


def _cards(url: str, settings: Settings, member: str) -> list[str]:
    """The titles of the in-app cards a member of the tenant sees in the app (getMyCampaigns)."""
    token = mint_token(settings, profile_id=member)
    cards = trpc(url, token, "campaigns.getMyCampaigns", None, mutation=False)["campaigns"]
    return [str(c["message"]["title"]) for c in cards if c["campaignId"] == "autumn"]


def test_a_second_publisher_approves_a_waiting_send(
    stack: tuple[str, Settings, Path], browser: Browser
) -> None:
    url, settings, _ = stack
    tenant_alpha(url, settings, min_recipients=2)
    pia, pol = tenant_token(settings, "pia", "publisher"), tenant_token(settings, "pol", "publisher")
    ana = tenant_token(settings, "ana", "author")
    # ana writes the campaign in the console; pia takes it live and asks for the send: she may send it
    # but not approve it. Its in-app card reaches three members: the go-live waits for a second publisher.
    author_writes_autumn(browser, url, ana)
    trpc(url, pia, "campaigns.setStatus", {"campaignId": "autumn", "status": "live"})
    assert _cards(url, settings, "a1") == []

    first, page, watch = signed_in(browser, url, pia)
    second, other, other_watch = signed_in(browser, url, pol)
    try:
        page.goto(f"{url}/admin#/c/autumn")
        expect(page.locator("#held-publish")).to_contain_text("Waiting for another publisher.")
        page.get_by_role("button", name="Review dispatch").click()
        expect(page.locator("#review-recipients")).to_have_text("3")
        page.get_by_role("button", name="Confirm and send to 3").click()
        awaits = page.locator("#dispatch-awaits")
        expect(awaits).to_contain_text("Waiting for another publisher.")
        expect(awaits.locator("#may-approve")).to_have_text(
            "Who may approve: another publisher than pia and ana."
        )
        expect(awaits).to_contain_text("The server said: a send to 3 recipients needs approval")
        shot(page, "approval-awaits", "#review")
        assert_accessible(page, "approval-awaits")

        # pia opens the list from there: her own request is not hers to approve, and it says who may.
        awaits.get_by_role("link", name="Open approvals").click()
        item = page.locator("#approvals article[data-campaign='autumn'][data-action='dispatch']")
        expect(item.locator("[data-field='requestedBy']")).to_have_text("pia")
        expect(item.locator("[data-field='recipients']")).to_have_text("3")
        expect(item.locator("[data-field='waiting']")).to_have_text(
            "Waiting for another publisher: another publisher than pia and ana may approve this."
        )
        expect(item.get_by_role("button", name="Approve send to 3")).to_have_count(0)
        going_live = page.locator("#approvals article[data-campaign='autumn'][data-action='publish']")
        expect(going_live.locator("[data-field='action']")).to_have_text("Go live")
        expect(going_live.get_by_role("button", name="Approve what 3 members see")).to_have_count(0)

        # pia edits after asking: the request is stale, and pol's approval of it is refused (CONFLICT).
        current = trpc(url, pia, "campaigns.get", {"campaignId": "autumn"}, mutation=False)
        edit = {"campaignId": "autumn", "expectedUpdatedAt": current["updatedAt"], "name": "Autumn news!"}
        trpc(url, pia, "campaigns.update", edit)
        other.get_by_role("link", name="Approvals").click()
        stale = other.locator(
            "#approvals article[data-campaign='autumn'][data-action='dispatch'][data-changed-since='true']"
        )
        expect(stale).to_contain_text("Edited since this was requested")
        stale.get_by_role("button", name="Approve send to 3").click()
        expect(stale.locator(".approval-refused")).to_contain_text(
            "Not approved: the campaign changed since this preview."
        )

        # pia reviews the edited campaign and asks again; pol, a second publisher, approves from the list.
        page.goto(f"{url}/admin#/c/autumn")
        page.get_by_role("button", name="Review dispatch").click()
        page.get_by_role("button", name="Confirm and send to 3").click()
        expect(page.locator("#dispatch-awaits")).to_contain_text("Waiting for another publisher")
        other.reload()
        theirs = other.locator(
            "#approvals article[data-campaign='autumn'][data-action='dispatch'][data-changed-since='false']"
        )
        expect(theirs).to_contain_text("Autumn news!")
        # Beside it, the go-live as it now stands, with what members would see differently.
        held = other.locator(
            "#approvals article[data-campaign='autumn'][data-action='publish'][data-changed-since='false']"
        )
        expect(held.locator("[data-change='name']")).to_contain_text("name: (none) → Autumn news!")
        expect(held.locator("[data-change='message']")).to_contain_text("Autumn")
        shot(other, "approvals", "#main")
        assert_accessible(other, "approvals")
        assert _cards(url, settings, "a1") == []  # nobody sees the card before the second publisher
        theirs.get_by_role("button", name="Approve send to 3").click()
        expect(theirs).to_contain_text("Approved by pol for 3 recipients")
        assert _cards(url, settings, "a1") == ["Autumn"]  # the approval showed the revision it saw
        # The list, for pia too, now says who approved and who may send.
        page.goto(f"{url}/admin#/approvals")
        approved = page.locator(
            "#approvals article[data-campaign='autumn'][data-changed-since='false'] [data-field='approvedBy']"
        )
        expect(approved).to_contain_text("Approved by pol")
        expect(approved).to_contain_text("Now pia may send it")

        # pia confirms again (nothing changed since: the approved preview) and the send goes out.
        page.goto(f"{url}/admin#/c/autumn")
        page.get_by_role("button", name="Review dispatch").click()
        page.get_by_role("button", name="Confirm and send to 3").click()
        expect(page.locator("#review-result")).to_contain_text("started")
        dispatches = trpc(url, pia, "campaigns.listDispatches", {"campaignId": "autumn"}, mutation=False)
        assert dispatches and all(d.get("approvedBy") == "pol" for d in dispatches)
        other.reload()  # the send closed every request of the campaign, the stale one too
        expect(other.locator("#approvals")).to_have_text("Nothing awaits approval.")

        # ana edits the live card: members keep seeing the approved one until pol approves the change.
        trpc(url, ana, "campaigns.update", {"campaignId": "autumn", "message": {"title": "Autumn, revised"}})
        assert _cards(url, settings, "a1") == ["Autumn"]
        page.reload()  # still on the campaign's page: read it afresh
        expect(page.locator("#held-publish")).to_contain_text("Waiting for another publisher.")
        other.reload()
        change = other.locator("#approvals article[data-campaign='autumn'][data-action='publish']")
        expect(change.locator("[data-field='action']")).to_have_text("Change of what members see")
        expect(change.locator("[data-change='message']")).to_contain_text("Autumn, revised")
        expect(change.locator("[data-change='name']")).to_have_count(0)
        change.get_by_role("button", name="Approve what 3 members see").click()
        expect(change).to_contain_text("Approved by pol: members now see this revision.")
        assert _cards(url, settings, "a1") == ["Autumn, revised"]
        watch.assert_clean()
        other_watch.assert_clean()
    finally:
        first.close()
        second.close()


def test_every_procedure_the_console_calls_is_in_the_servers_access_table(
    base_settings: Settings, graph: Graph
) -> None:
    """The console offers a control only when /openapi.json's ``x-access`` lets the caller use it, and
    hides what the table does not name: a procedure renamed or dropped on the server would vanish from
    the console silently. Every path in admin/src/api.ts is there, with the kind the console calls."""
    source = (REPO_ROOT / "admin" / "src" / "api.ts").read_text(encoding="utf-8")
    kinds = dict(
        re.findall(r'^  "(\w+\.\w+)": "(query|mutation)",$', source.split("const PROCEDURE_KINDS")[1], re.M)
    )
    assert {"access.me", "access.grant", "apiKeys.create", "campaigns.approveDispatch"} <= set(kinds)
    document = create_app(base_settings, graph=graph).openapi()
    # A query has two operations (GET, and POST for LearnCard's client): the console's kind must be one.
    operations = {path.removeprefix("/trpc/"): methods for path, methods in document["paths"].items()}
    levels = {"public", "user", "viewer", "author", "publisher", "admin", "platform"}
    for path, kind in kinds.items():
        assert path in operations, f"the console calls {path}, which the server does not offer"
        method = "get" if kind == "query" else "post"
        assert method in operations[path], path
        op = operations[path][method]
        assert op["x-access"] in levels, path
