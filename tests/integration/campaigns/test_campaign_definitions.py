"""Campaign definitions and lifecycle over the real API and a real Neo4j."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import at_once

NOTIFY_ONLY: dict[str, Any] = {
    "name": "Spring launch",
    "channels": ["notify"],
    "notification": {"title": "New", "body": "Something new"},
}


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def admin_mutate(api: TrpcClient, path: str, data: Any) -> Any:
    return api.mutate(path, data, as_=ADMIN_ID, admin=True)


def create(api: TrpcClient, campaign_id: str = "spring", **extra: Any) -> dict[str, Any]:
    return dict(ok(admin_mutate(api, "campaigns.create", {"id": campaign_id, **NOTIFY_ONLY, **extra})))


def test_create_returns_definition_and_lifecycle_fields(api: TrpcClient) -> None:
    created = create(api, startsAt="2030-01-01T02:00:00+02:00", description="d")
    assert created["id"] == "spring"
    assert created["status"] == "draft"
    assert created["revision"] == 1
    assert created["tenantId"] == "default"
    assert created["createdAt"] == created["updatedAt"]
    assert created["startsAt"].startswith("2030-01-01T00:00:00")  # normalised to UTC
    assert created["excludeMinors"] is True and created["discoverable"] is False


def test_tenant_comes_from_the_signed_claim_never_a_header(api: TrpcClient, graph: Graph) -> None:
    token = mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, tenant_id="acme")
    signed = {"authorization": f"Bearer {token}", "x-tenant-id": "other"}
    response = api.http.post("/trpc/campaigns.create", json={"id": "t1", **NOTIFY_ONLY}, headers=signed)
    assert ok(response)["tenantId"] == "acme"  # the claim, not the header
    # The audit entry records the tenant the credential acted in.
    acted = graph.run("MATCH (a:AuditEntry {targetId: 't1'}) RETURN a.tenantId AS tenant")
    assert [row["tenant"] for row in acted] == ["acme"]
    # A header alone names no tenant: the call acts in the default tenant.
    unsigned = {**api.headers_for(ADMIN_ID, admin=True), "x-tenant-id": "acme"}
    response = api.http.post("/trpc/campaigns.create", json={"id": "t2", **NOTIFY_ONLY}, headers=unsigned)
    assert ok(response)["tenantId"] == "default"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"id": "Bad_Id"}, "id"),
        ({"id": "x" * 65}, "id"),
        ({"channels": []}, "channels"),
        ({"channels": ["notify", "notify"]}, "channels"),
        ({"channels": ["email"]}, None),  # email content missing
        ({"name": ""}, "name"),
        ({"startsAt": "2030-01-02T00:00:00Z", "endsAt": "2030-01-01T00:00:00Z"}, None),
        ({"startsAt": "2030-01-02T00:00:00"}, "startsAt"),  # naive timestamps are ambiguous
        ({"unknownField": 1}, "unknownField"),
        (
            {"channels": ["inApp"], "message": {"title": "t", "media": {"type": "image", "url": "http://x"}}},
            None,
        ),
    ],
)
def test_invalid_definitions_are_bad_request_and_write_nothing(
    api: TrpcClient, graph: Graph, patch: dict[str, Any], field: str | None
) -> None:
    response = admin_mutate(api, "campaigns.create", {"id": "c1", **NOTIFY_ONLY, **patch})
    assert response.status_code == 400
    assert error_code(response) == "BAD_REQUEST"
    issues = response.json()["error"]["data"]["issues"]
    if field is not None:
        assert any(field in issue["path"] for issue in issues), issues
    assert graph.run("MATCH (c:Campaign) RETURN count(c) AS n")[0]["n"] == 0


def test_duplicate_id_is_conflict(api: TrpcClient) -> None:
    create(api)
    response = admin_mutate(api, "campaigns.create", {"id": "spring", **NOTIFY_ONLY})
    assert error_code(response) == "CONFLICT"


def test_update_is_a_partial_patch(api: TrpcClient) -> None:
    created = create(api, description="keep me?", endsAt="2031-01-01T00:00:00Z")
    updated = ok(
        admin_mutate(api, "campaigns.update", {"campaignId": "spring", "name": "Renamed", "endsAt": None})
    )
    assert updated["name"] == "Renamed"
    assert updated["description"] == "keep me?"
    assert updated.get("endsAt") is None
    assert updated["revision"] == created["revision"] + 1
    assert updated["updatedAt"] > created["updatedAt"]


def test_update_cannot_clear_required_fields_or_status(api: TrpcClient) -> None:
    create(api)
    assert (
        error_code(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "name": None}))
        == "BAD_REQUEST"
    )
    assert (
        error_code(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "status": "live"}))
        == "BAD_REQUEST"
    )
    # Removing the notification while the notify channel is selected breaks the definition.
    response = admin_mutate(api, "campaigns.update", {"campaignId": "spring", "notification": None})
    assert error_code(response) == "BAD_REQUEST"


def test_message_is_replaced_as_a_whole(api: TrpcClient) -> None:
    create(api, channels=["inApp"], message={"title": "One", "body": "first", "priority": 5})
    updated = ok(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "message": {"title": "Two"}}))
    assert updated["message"]["title"] == "Two"
    assert "body" not in updated["message"]  # absent, not null: LearnCard's validators refuse null
    assert updated["message"]["priority"] == 0


def test_stale_expected_updated_at_is_conflict(api: TrpcClient) -> None:
    created = create(api)
    ok(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "name": "A"}))
    response = admin_mutate(
        api,
        "campaigns.update",
        {"campaignId": "spring", "name": "B", "expectedUpdatedAt": created["updatedAt"]},
    )
    assert error_code(response) == "CONFLICT"


def test_concurrent_updates_with_the_same_expected_updated_at_one_wins(api: TrpcClient) -> None:
    created = create(api)

    def update(index: int) -> Any:
        return admin_mutate(
            api,
            "campaigns.update",
            {"campaignId": "spring", "name": f"writer {index}", "expectedUpdatedAt": created["updatedAt"]},
        )

    results = at_once(update, [(0,), (1,)])
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 409], [r.text for r in results]
    final = ok(api.query("campaigns.get", {"campaignId": "spring"}, as_=ADMIN_ID, admin=True))
    assert final["revision"] == 2


def test_updated_at_is_strictly_monotonic_within_one_millisecond(
    base_settings: Settings, graph: Graph
) -> None:
    frozen = datetime(2030, 1, 1, tzinfo=UTC)
    with api_client(base_settings, graph, clock=lambda: frozen) as api:
        stamps = [create(api)["updatedAt"]]
        for index in range(3):
            stamps.append(
                ok(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "name": f"n{index}"}))[
                    "updatedAt"
                ]
            )
    assert stamps == sorted(set(stamps)), stamps
    # Distinct even to the millisecond, the precision clients echo them back at.
    assert len({stamp[:23] for stamp in stamps}) == len(stamps), stamps


def js_date_echo(stamp: str) -> str:
    """What ``new Date(stamp).toISOString()`` sends back: milliseconds, truncated, ``Z``."""
    return stamp[:23] + "Z"


def test_expected_updated_at_is_compared_as_an_instant(api: TrpcClient) -> None:
    created = create(api)

    def update(name: str, expected: str) -> Any:
        data = {"campaignId": "spring", "name": name, "expectedUpdatedAt": expected}
        return admin_mutate(api, "campaigns.update", data)

    echoed = ok(update("through a JavaScript Date", js_date_echo(created["updatedAt"])))
    assert error_code(update("stale echo", js_date_echo(created["updatedAt"]))) == "CONFLICT"
    in_paris = datetime.fromisoformat(echoed["updatedAt"]).astimezone(timezone(timedelta(hours=1)))
    assert ok(update("another offset", in_paris.isoformat()))["revision"] == created["revision"] + 2
    assert error_code(update("stale offset", in_paris.isoformat())) == "CONFLICT"


def test_a_stale_echo_from_the_same_millisecond_is_still_a_conflict(
    base_settings: Settings, graph: Graph
) -> None:
    frozen = datetime(2030, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    with api_client(base_settings, graph, clock=lambda: frozen) as api:
        echo = js_date_echo(create(api)["updatedAt"])
        first = {"campaignId": "spring", "name": "first", "expectedUpdatedAt": echo}
        ok(admin_mutate(api, "campaigns.update", first))
        second = {"campaignId": "spring", "name": "second", "expectedUpdatedAt": echo}
        assert error_code(admin_mutate(api, "campaigns.update", second)) == "CONFLICT"


def test_status_transitions(api: TrpcClient) -> None:
    create(api)

    def set_status(status: str) -> Any:
        return admin_mutate(api, "campaigns.setStatus", {"campaignId": "spring", "status": status})

    assert error_code(set_status("paused")) == "BAD_REQUEST"  # draft -> paused is not allowed
    assert ok(set_status("live"))["status"] == "live"
    assert ok(set_status("paused"))["status"] == "paused"
    assert ok(set_status("live"))["status"] == "live"
    assert ok(set_status("archived"))["status"] == "archived"
    assert error_code(set_status("live")) == "BAD_REQUEST"  # archived is final
    assert (
        error_code(admin_mutate(api, "campaigns.update", {"campaignId": "spring", "name": "x"}))
        == "BAD_REQUEST"
    )


def test_list_is_keyset_paged_by_id_and_filters_status(api: TrpcClient) -> None:
    for campaign_id in ["c-03", "c-01", "c-02", "c-05", "c-04"]:
        create(api, campaign_id)
    ok(admin_mutate(api, "campaigns.setStatus", {"campaignId": "c-02", "status": "live"}))
    seen: list[str] = []
    cursor = None
    while True:
        page = ok(api.query("campaigns.list", {"limit": 2, "cursor": cursor}, as_=ADMIN_ID, admin=True))
        seen += [record["id"] for record in page["records"]]
        if not page["hasMore"]:
            break
        cursor = page["cursor"]
    assert seen == ["c-01", "c-02", "c-03", "c-04", "c-05"]
    live = ok(api.query("campaigns.list", {"status": "live"}, as_=ADMIN_ID, admin=True))
    assert [record["id"] for record in live["records"]] == ["c-02"]


def test_delete_removes_everything_and_recreate_is_a_new_incarnation(api: TrpcClient, graph: Graph) -> None:
    first = create(api)
    graph.run(
        """
        MATCH (c:Campaign {id: 'spring'})
        CREATE (p:Profile {profileId: 'p1'})
                 -[:IN_CAMPAIGN_AUDIENCE {campaignId: 'spring', profileId: 'p1'}]->(c),
               (p)-[:CAMPAIGN_STATE {shownCount: 1}]->(c),
               (p)-[:CAMPAIGN_TEST {testId: 't'}]->(c),
               (:Dispatch {id: 'd1'})-[:DISPATCH_OF]->(c)
        """
    )
    assert ok(admin_mutate(api, "campaigns.delete", {"campaignId": "spring"})) == {"ok": True}
    left = graph.run("MATCH (n) WHERE n:Campaign OR n:Dispatch RETURN count(n) AS n")[0]["n"]
    rels = graph.run("MATCH (:Profile {profileId: 'p1'})-[r]->() RETURN count(r) AS n")[0]["n"]
    assert (left, rels) == (0, 0)
    assert (
        error_code(api.query("campaigns.get", {"campaignId": "spring"}, as_=ADMIN_ID, admin=True))
        == "NOT_FOUND"
    )
    again = create(api)
    assert again["createdAt"] > first["createdAt"]


def test_unknown_campaign_is_not_found_everywhere(api: TrpcClient) -> None:
    missing = {"campaignId": "nope"}
    assert error_code(api.query("campaigns.get", missing, as_=ADMIN_ID, admin=True)) == "NOT_FOUND"
    assert error_code(admin_mutate(api, "campaigns.update", {**missing, "name": "x"})) == "NOT_FOUND"
    assert error_code(admin_mutate(api, "campaigns.setStatus", {**missing, "status": "live"})) == "NOT_FOUND"
    assert error_code(admin_mutate(api, "campaigns.delete", missing)) == "NOT_FOUND"
