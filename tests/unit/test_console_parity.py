"""Every admin procedure has a console screen that calls it, or a reason here why it is API-only.

The procedure registry (every router's ``ACCESS`` table, ``api/app.py``'s ``ROUTERS``) is the list of
capabilities; an admin procedure is one whose access is a tenant role or ``platform``. The console calls
a procedure only through ``admin/src/api.ts``'s ``PROCEDURE_KINDS`` (a path outside it fails tsc), so
"a screen calls it" is: the path is in that table and a screen module names it.

``API_ONLY`` holds the procedures meant for programs, each with its reason. ``NOT_YET_ON_A_SCREEN``
holds the gaps there were when this rule came: each may leave (when its screen lands), none may join,
and one that gained a screen must leave, so the list only gets shorter.
"""

from __future__ import annotations

import re
from pathlib import Path

from campaign_engine.api.app import ROUTERS

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "admin" / "src"
NOT_SCREENS = {"api.ts", "messages.ts"}  # the client table and the error wording name every path

API_ONLY: dict[str, str] = {
    "profiles.upsert": "programs sync profiles; people import them with the CSV import, whose route"
    " (POST /imports/profiles) the console's import screen calls under this procedure's access",
    "audit.list": "the console's export screen downloads the trail over its route (GET /exports/audit.csv),"
    " under this procedure's access; paging the trail is for programs",
    "profiles.delete": "erasure requests come from the organisation's own systems, one person at a time",
    "profiles.rotateWebhookSecret": "a profile's own receiver is a program: its operator rotates the"
    " secret from the program that holds it",
    "campaigns.getDispatch": "the console's progress reads campaigns.listDispatches, which carries every"
    " dispatch's counters; one dispatch by id is for programs polling a send they started",
}

# Capabilities the console does not reach yet: each gets a screen (and leaves this list). Empty now:
# every admin procedure has a screen or a reason above, and none may join.
NOT_YET_ON_A_SCREEN: set[str] = set()


def admin_procedures() -> set[str]:
    return {p.path for router in ROUTERS for p in router.procedures if p.access not in ("public", "user")}


def on_a_screen() -> set[str]:
    table = set(
        re.findall(
            r'^\s*"([A-Za-z]+\.[A-Za-z]+)": "(?:query|mutation)",$', (SRC / "api.ts").read_text(), re.M
        )
    )
    screens = "\n".join(p.read_text(encoding="utf-8") for p in SRC.glob("*.ts") if p.name not in NOT_SCREENS)
    return {path for path in table if f'"{path}"' in screens}


def test_every_admin_procedure_has_a_screen_or_a_reason() -> None:
    missing = admin_procedures() - on_a_screen() - API_ONLY.keys() - NOT_YET_ON_A_SCREEN
    assert missing == set(), f"give these a console screen, or a reason in API_ONLY: {sorted(missing)}"


def test_the_lists_name_only_admin_procedures_without_a_screen() -> None:
    procedures, screened = admin_procedures(), on_a_screen()
    assert API_ONLY.keys() - procedures == set()
    assert NOT_YET_ON_A_SCREEN - procedures == set()
    assert not (API_ONLY.keys() & NOT_YET_ON_A_SCREEN)
    assert screened & API_ONLY.keys() == set(), "a procedure a screen calls is not API-only"
    assert screened & NOT_YET_ON_A_SCREEN == set(), "it has a screen now: remove it from NOT_YET_ON_A_SCREEN"
    assert all(len(reason) > 40 for reason in API_ONLY.values())
