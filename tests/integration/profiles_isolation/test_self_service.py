"""The matrix's rows for what a person does to themselves in tenant A: preferences for A, self-enrolment
in A's campaign and leaving it, engagement with A's campaign, and unsubscribing from A's email (the tRPC
procedure, the RFC 8058 one-click POST and the browser page's form), each by the person B shares with A.

The person signs in to A as a plain member and as each role of A (a teacher in A is a parent in B); the
unsubscribe paths carry the token of A's own email to them, taken from a real send of A's campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.integration.profiles_isolation.matrix import Baseline, Row, check_row, module_world
from tests.support.api import ok
from tests.support.isolation import Credential, World, tenant_a_credentials
from tests.support.postmark_standin import PostmarkStandin
from tests.support.shared_people import CAMPAIGN_A, CLUB_A, PARENT, A

pytestmark = pytest.mark.xdist_group("profiles-isolation-self-service")


def _send_a(world: World) -> None:
    """A's campaign reaches the parent once, so A's email to them carries A's unsubscribe link."""
    world.send(CAMPAIGN_A, A)
    [mail] = [m for m in world.sent if m["To"].startswith(f"{PARENT}@")]
    [link] = [h["Value"] for h in mail["Headers"] if h["Name"] == "List-Unsubscribe"]
    world.keys["unsubscribe"] = parse_qs(urlsplit(link.strip("<>")).query)["token"][0]


def _trpc(path: str, data: Any) -> Callable[[World, Credential], int]:
    return lambda world, credential: int(world.call(path, data, credential.headers()).status_code)


def _opt_in_to_a(world: World) -> None:
    """The parent takes back A's opt-out, so each unsubscribe row shows its own."""
    back = {"tenantId": A, "announcementEmailOptOut": False, "announcementPushOptOut": False}
    ok(world.call("preferences.updateAnnouncementPreferences", back, _parent_in_a(world)))


def _parent_in_a(world: World) -> dict[str, str]:
    return world.bearer(PARENT, tenant=A)


def _form(route: str, body: str) -> Callable[[World, Credential], int]:
    def write(world: World, credential: Credential) -> int:
        _opt_in_to_a(world)
        headers = {"content-type": "application/x-www-form-urlencoded"}
        params = {"token": world.keys["unsubscribe"]}
        return int(world.api.http.post(route, params=params, content=body, headers=headers).status_code)

    return write


def _unsubscribe_trpc(world: World, credential: Credential) -> int:
    _opt_in_to_a(world)
    return _trpc("campaigns.unsubscribeFromAnnouncements", {"token": world.keys["unsubscribe"]})(
        world, credential
    )


def _opted_out_of_a(world: World) -> bool:
    """The parent's own preferences for A say they are out of A's email."""
    mine = world.read("preferences.getAnnouncementPreferences", {"tenantId": A}, _parent_in_a(world))
    return bool(mine["announcementEmailOptOut"])


def _a_audience(world: World, ref: str) -> set[str]:
    answer = world.read("campaigns.getAudience", {"campaignId": ref}, world.role(A, "admin"))
    return {r["profileId"] for r in answer["records"]}


def _preferences(world: World, credential: Credential) -> int:
    _opt_in_to_a(world)
    return int(
        world.call("preferences.updateAnnouncementPreferences", _OPT_OUT, credential.headers()).status_code
    )


def _in_club(world: World) -> bool:
    return PARENT in _a_audience(world, CLUB_A)


_CLUB = {"campaignId": CLUB_A}
_OPT_OUT = {"tenantId": A, "announcementEmailOptOut": True, "announcementPushOptOut": True}
PERSON_ROWS = [
    Row("preferences.updateAnnouncementPreferences", "user",
        _preferences, shows=_opted_out_of_a),
    Row("campaigns.enroll", "user", _trpc("campaigns.enroll", _CLUB), shows=_in_club),
    Row("campaigns.recordEvent", "user",
        _trpc("campaigns.recordEvent", {"campaignId": CAMPAIGN_A, "event": "clicked"})),
    Row("campaigns.leave", "user", _trpc("campaigns.leave", _CLUB), shows=lambda world: not _in_club(world)),
]  # fmt: skip
TOKEN_ROWS = [
    Row("campaigns.unsubscribeFromAnnouncements", "public", _unsubscribe_trpc, shows=_opted_out_of_a),
    Row("POST /campaigns/unsubscribe", "public",
        _form("/campaigns/unsubscribe", "List-Unsubscribe=One-Click"), shows=_opted_out_of_a),
    Row("POST /campaigns/unsubscribe/browser", "public",
        _form("/campaigns/unsubscribe/browser", "scope=tenant"), shows=_opted_out_of_a),
]  # fmt: skip
COVERS = frozenset(row.path for row in PERSON_ROWS + TOKEN_ROWS)


@pytest.fixture(scope="module")
def world(
    base_settings: Settings,
    session_graph: Graph,
    standin: PostmarkStandin,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[World, Baseline]]:
    folder = tmp_path_factory.mktemp("self-service")
    yield from module_world(base_settings, session_graph, standin, folder, prepare=_send_a)


@pytest.mark.parametrize("row", TOKEN_ROWS, ids=lambda row: row.path)
def test_unsubscribing_from_a_leaves_b_as_it_was(world: tuple[World, Baseline], row: Row) -> None:
    shared, baseline = world
    check_row(shared, baseline, row, [Credential("the holder of A's link", None, dict)])


@pytest.mark.parametrize("row", PERSON_ROWS, ids=lambda row: row.path)
def test_the_shared_person_acting_in_a_leaves_b_as_it_was(world: tuple[World, Baseline], row: Row) -> None:
    shared, baseline = world
    check_row(shared, baseline, row, tenant_a_credentials(shared, subject=PARENT))
