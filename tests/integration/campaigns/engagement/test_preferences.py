"""A user's announcement preferences over the real app and a real Neo4j."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from campaign_engine.campaigns.engagement.preferences import (
    AnnouncementPreferences,
    get_announcement_preferences,
    update_announcement_preferences,
)
from campaign_engine.config import Settings
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import at_once

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
GET = "preferences.getAnnouncementPreferences"
UPDATE = "preferences.updateAnnouncementPreferences"


class SteppingClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=SteppingClock()) as client:
        yield client


def _profile(graph: Graph, profile_id: str, **props: Any) -> None:
    graph.run(
        "CREATE (p:Profile {profileId: $pid, announcementEmailOptOut: false, announcementPushOptOut: false})"
        " SET p += $props",
        pid=profile_id,
        props=props,
    )


def _node(graph: Graph, profile_id: str) -> dict[str, Any]:
    rows = graph.run("MATCH (p:Profile {profileId: $pid}) RETURN p {.*} AS p", pid=profile_id)
    assert len(rows) == 1
    return dict(rows[0]["p"])


def test_defaults_are_opted_in(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1")
    graph.run("CREATE (:Profile {profileId: 'legacy'})")  # written before the fields existed
    expected = {"announcementEmailOptOut": False, "announcementPushOptOut": False}
    assert ok(api.query(GET, as_="u1")) == expected
    assert ok(api.query(GET, as_="legacy")) == expected


def test_partial_update_keeps_the_other_choice(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1")
    assert ok(api.mutate(UPDATE, {"announcementEmailOptOut": True}, as_="u1")) == {
        "announcementEmailOptOut": True,
        "announcementPushOptOut": False,
    }
    assert ok(api.mutate(UPDATE, {"announcementPushOptOut": True}, as_="u1")) == {
        "announcementEmailOptOut": True,
        "announcementPushOptOut": True,
    }
    assert ok(api.mutate(UPDATE, {"announcementEmailOptOut": False}, as_="u1")) == {
        "announcementEmailOptOut": False,
        "announcementPushOptOut": True,
    }
    assert ok(api.mutate(UPDATE, {}, as_="u1")) == {
        "announcementEmailOptOut": False,
        "announcementPushOptOut": True,
    }
    assert ok(api.query(GET, as_="u1")) == {"announcementEmailOptOut": False, "announcementPushOptOut": True}


def test_opt_out_times_are_kept_and_cleared(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1")
    ok(api.mutate(UPDATE, {"announcementEmailOptOut": True, "announcementPushOptOut": True}, as_="u1"))
    first = _node(graph, "u1")
    assert first["announcementEmailOptOutAt"] is not None
    assert first["announcementPushOptOutAt"] is not None
    ok(api.mutate(UPDATE, {"announcementEmailOptOut": True}, as_="u1"))
    assert _node(graph, "u1")["announcementEmailOptOutAt"] == first["announcementEmailOptOutAt"]
    ok(api.mutate(UPDATE, {"announcementPushOptOut": False}, as_="u1"))
    node = _node(graph, "u1")
    assert "announcementPushOptOutAt" not in node
    assert node["announcementEmailOptOutAt"] == first["announcementEmailOptOutAt"]
    assert node["campaignStateLock"] == 3  # every update took the profile lock


def test_only_the_callers_profile_changes(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1")
    _profile(graph, "u2")
    ok(api.mutate(UPDATE, {"announcementEmailOptOut": True, "announcementPushOptOut": True}, as_="u1"))
    assert ok(api.query(GET, as_="u2")) == {"announcementEmailOptOut": False, "announcementPushOptOut": False}


def test_missing_profile_is_not_found_and_not_created(api: TrpcClient, graph: Graph) -> None:
    assert error_code(api.query(GET, as_="ghost")) == "NOT_FOUND"
    assert error_code(api.mutate(UPDATE, {"announcementEmailOptOut": True}, as_="ghost")) == "NOT_FOUND"
    assert graph.run("MATCH (p:Profile) RETURN p") == []


def test_anonymous_and_invalid_calls_are_refused(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1")
    assert error_code(api.query(GET)) == "UNAUTHORIZED"
    assert error_code(api.mutate(UPDATE, {"announcementEmailOptOut": True})) == "UNAUTHORIZED"
    for bad in (
        {"announcementEmailOptOut": "true"},
        {"announcementPushOptOut": 1},
        {"profileId": "u2"},
        {"announcementEmailOptOut": True, "other": False},
    ):
        assert error_code(api.mutate(UPDATE, bad, as_="u1")) == "BAD_REQUEST"
    assert ok(api.query(GET, as_="u1")) == {"announcementEmailOptOut": False, "announcementPushOptOut": False}


def _patch_concurrently(graph: Graph, profile_id: str) -> None:
    """Two threads start together: one switches email off, the other push."""

    def patch(email: bool | None, push: bool | None) -> object:
        return update_announcement_preferences(
            graph, profile_id, email_opt_out=email, push_opt_out=push, now=T0
        )

    at_once(patch, [(True, None), (None, True)])


def test_concurrent_partial_updates_lose_nothing(graph: Graph) -> None:
    """The profile lock serialises the two patches, so neither overwrites the other's choice."""
    for round_ in range(10):
        profile_id = f"u{round_}"
        _profile(graph, profile_id)
        _patch_concurrently(graph, profile_id)
        assert get_announcement_preferences(graph, profile_id) == AnnouncementPreferences(True, True)


def test_use_case_not_found(graph: Graph) -> None:
    with pytest.raises(NotFound):
        update_announcement_preferences(graph, "ghost", email_opt_out=True, push_opt_out=None, now=T0)


# --- per tenant (docs/people.md: opt-outs add up) ---------------------------------------------------


def _views(graph: Graph, profile_id: str) -> dict[str, tuple[Any, Any]]:
    rows = graph.run(
        "MATCH (:Profile {profileId: $pid})-[:HAS_VIEW]->(v:TenantView)"
        " RETURN v.tenantId AS t, v.announcementEmailOptOut AS email, v.announcementPushOptOut AS push",
        pid=profile_id,
    )
    return {row["t"]: (row["email"], row["push"]) for row in rows}


def test_a_tenants_choices_live_on_its_view_and_stop_only_that_tenant(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1", tenants=["north", "river"])
    river = {"tenantId": "river"}
    both = {"announcementEmailOptOut": True, "announcementPushOptOut": True}
    assert ok(api.mutate(UPDATE, {**river, "announcementEmailOptOut": True}, as_="u1")) == {
        "announcementEmailOptOut": True,
        "announcementPushOptOut": False,
    }
    assert _views(graph, "u1") == {"river": (True, False)}
    assert _node(graph, "u1")["announcementEmailOptOut"] is False  # the other tenants keep mailing
    assert ok(api.query(GET, river, as_="u1"))["announcementEmailOptOut"] is True
    assert ok(api.query(GET, {"tenantId": "north"}, as_="u1"))["announcementEmailOptOut"] is False
    assert ok(api.query(GET, as_="u1"))["announcementEmailOptOut"] is False  # deployment-wide

    # The deployment-wide choice holds for every tenant, whatever the tenant's own says.
    ok(api.mutate(UPDATE, both, as_="u1"))
    assert ok(api.query(GET, {"tenantId": "north"}, as_="u1")) == both
    assert ok(api.mutate(UPDATE, {**river, "announcementEmailOptOut": False}, as_="u1")) == both
    # Turning a channel on for every tenant turns it on for each: the views' own opt-outs go too.
    ok(api.mutate(UPDATE, {**river, "announcementPushOptOut": True}, as_="u1"))
    ok(api.mutate(UPDATE, {"announcementPushOptOut": False}, as_="u1"))
    assert ok(api.query(GET, river, as_="u1"))["announcementPushOptOut"] is False
    assert _views(graph, "u1") == {"river": (False, None)}


def test_a_tenant_not_the_callers_is_refused(api: TrpcClient, graph: Graph) -> None:
    _profile(graph, "u1", tenants=["north"])
    assert error_code(api.query(GET, {"tenantId": "river"}, as_="u1")) == "FORBIDDEN"
    patch = {"tenantId": "river", "announcementEmailOptOut": True}
    assert error_code(api.mutate(UPDATE, patch, as_="u1")) == "FORBIDDEN"
    assert error_code(api.query(GET, {"tenantId": ""}, as_="u1")) == "BAD_REQUEST"
    assert error_code(api.query(GET, {"tenantId": "ghost"}, as_="ghost")) == "NOT_FOUND"
    assert _views(graph, "u1") == {}
