"""Profiles imported from a CSV file and exports downloaded, in the console."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.config import Settings
from tests.support.console import (
    AUTUMN,
    TENANT,
    TENANT_MEMBERS,
    assert_accessible,
    shot,
    signed_in,
    tenant_alpha,
    tenant_token,
    trpc,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


IMPORT_CSV = (
    "\ufeffprofileId,email,locale,tags,homeroom\r\n"
    "a1,a1@example.com,es-MX,grade-7;band,7B\r\n"
    "b1,not-an-address,,,\r\n"
    "b2,b2@example.com,en,,\r\n"
)


def test_profiles_are_imported_from_csv_and_exports_download_in_the_console(
    stack: tuple[str, Settings, Path], browser: Browser, tmp_path: Path
) -> None:
    """Imports and exports in the console: a CSV upload answers its report (dry run first), a campaign's
    recipients and the audit trail download as files, all with the tab's own token."""
    url, settings, _ = stack
    tenant_alpha(url, settings)
    ana = tenant_token(settings, "ana", "author")
    trpc(url, ana, "campaigns.create", AUTUMN)
    trpc(url, ana, "campaigns.addAudience", {"campaignId": "autumn",
         "source": {"type": "profileIds", "profileIds": TENANT_MEMBERS}})  # fmt: skip
    csv_file = tmp_path / "students.csv"
    csv_file.write_text(IMPORT_CSV, encoding="utf-8", newline="")
    context, page, watch = signed_in(browser, url, ana)
    try:
        page.get_by_role("link", name="Import and export").click()
        expect(page.get_by_role("heading", name="Import and export", exact=True)).to_be_visible()
        page.get_by_label("CSV file").set_input_files(str(csv_file))
        page.get_by_label("Dry run").check()
        page.get_by_role("button", name="Import").click()
        summary = page.locator("#import-summary")
        expect(summary).to_contain_text("3 rows read: would create 1, would update 1, rejected 1.")
        expect(summary).to_contain_text("Nothing was written (dry run).")
        profile = trpc(url, ana, "profiles.get", {"profileId": "a1"}, mutation=False)
        assert profile["locale"] is None  # the dry run wrote nothing

        page.get_by_label("Dry run").uncheck()
        page.get_by_role("button", name="Import").click()
        expect(summary).to_contain_text("3 rows read: created 1, updated 1, unchanged 0, rejected 1.")
        expect(page.locator("#import-unknown")).to_have_text("Ignored columns: homeroom.")
        rejected = page.locator("#import-rejections tbody tr")
        expect(rejected).to_have_count(1)
        expect(rejected.locator("td").nth(0)).to_have_text("3")
        expect(rejected.locator("td").nth(1)).to_have_text("email")
        assert trpc(url, ana, "profiles.get", {"profileId": "a1"}, mutation=False)["locale"] == "es-MX"
        shot(page, "import-report")
        page.get_by_role("button", name="Import").click()  # the same file again: nothing to change
        expect(summary).to_contain_text("3 rows read: created 0, updated 0, unchanged 2, rejected 1.")
        assert_accessible(page, "import")

        with page.expect_download() as audit:
            page.get_by_role("button", name="Download the audit trail (CSV)").click()
        assert audit.value.suggested_filename == f"audit-{TENANT}.csv"
        audit_rows = Path(audit.value.path()).read_text(encoding="utf-8").splitlines()
        assert audit_rows[0].startswith("at,actor,tenantId,procedure")
        assert any(",imports.profiles," in row for row in audit_rows[1:])

        page.goto(f"{url}/admin#/c/autumn")
        with page.expect_download() as recipients:
            page.get_by_role("button", name="Download recipients (CSV)").click()
        assert recipients.value.suggested_filename == "autumn-recipients.csv"
        lines = Path(recipients.value.path()).read_text(encoding="utf-8").splitlines()
        assert [line.split(",")[0] for line in lines] == ["profileId", *TENANT_MEMBERS]
        expect(page.locator("#recipients-download-result")).to_have_text("Saved autumn-recipients.csv.")
        watch.assert_clean()
    finally:
        context.close()
