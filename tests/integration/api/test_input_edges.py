"""Hostile and edge timestamps at the API: refused with BAD_REQUEST before anything is written, and the
campaigns already stored stay readable (never a 500, never half-written)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok

NOTIFY_ONLY: dict[str, Any] = {
    "name": "Edges",
    "channels": ["notify"],
    "notification": {"title": "New", "body": "Something new"},
}

# Each was a 500 or a stored value that broke later reads, or is just outside the documented range
# (1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z in UTC).
BAD_TIMESTAMPS = [
    "9999-12-31T23:59:59-01:00",  # year 10000 in UTC: overflowed into a 500
    "0999-01-01T00:00:00Z",  # stored as "999-01-01T..." and then list/get/update answered 500
    "1969-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    "+010000-01-01T00:00:00.000Z",  # JavaScript's toISOString() past year 9999
    "2030-02-30T00:00:00Z",
    "2030-01-01T00:00:00",
    "2030-12-31T23:59:60Z",
    "",
    0,
]
TIMESTAMP_FIELDS = ["startsAt", "endsAt"]


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def admin_mutate(api: TrpcClient, path: str, data: Any) -> Any:
    return api.mutate(path, data, as_=ADMIN_ID, admin=True)


def admin_query(api: TrpcClient, path: str, data: Any = None) -> Any:
    return api.query(path, data, as_=ADMIN_ID, admin=True)


def assert_bad_request_at(response: Any, field: str) -> None:
    assert response.status_code == 400, response.text
    assert error_code(response) == "BAD_REQUEST"
    assert [field] in [issue["path"] for issue in response.json()["error"]["data"]["issues"]], response.text


def stored_campaigns(graph: Graph) -> list[dict[str, Any]]:
    return [row["c"] for row in graph.run("MATCH (c:Campaign) RETURN c {.*} AS c ORDER BY c.id")]


def assert_reads_still_work(api: TrpcClient, expected_ids: list[str]) -> None:
    listed = ok(admin_query(api, "campaigns.list"))
    assert [record["id"] for record in listed["records"]] == expected_ids
    for campaign_id in expected_ids:
        assert ok(admin_query(api, "campaigns.get", {"campaignId": campaign_id}))["id"] == campaign_id


@pytest.mark.parametrize("field", TIMESTAMP_FIELDS)
@pytest.mark.parametrize("value", BAD_TIMESTAMPS)
def test_bad_timestamps_on_create_are_bad_request_and_write_nothing(
    api: TrpcClient, graph: Graph, field: str, value: Any
) -> None:
    ok(admin_mutate(api, "campaigns.create", {"id": "before", **NOTIFY_ONLY}))
    before = stored_campaigns(graph)
    response = admin_mutate(api, "campaigns.create", {"id": "edge", **NOTIFY_ONLY, field: value})
    assert_bad_request_at(response, field)
    assert stored_campaigns(graph) == before
    assert_reads_still_work(api, ["before"])


@pytest.mark.parametrize("field", TIMESTAMP_FIELDS)
@pytest.mark.parametrize("value", BAD_TIMESTAMPS)
def test_bad_timestamps_on_update_are_bad_request_and_change_nothing(
    api: TrpcClient, graph: Graph, field: str, value: Any
) -> None:
    ok(admin_mutate(api, "campaigns.create", {"id": "edge", **NOTIFY_ONLY}))
    before = stored_campaigns(graph)
    response = admin_mutate(api, "campaigns.update", {"campaignId": "edge", field: value})
    assert_bad_request_at(response, field)
    assert stored_campaigns(graph) == before
    assert_reads_still_work(api, ["edge"])


@pytest.mark.parametrize("value", BAD_TIMESTAMPS)
def test_bad_expected_updated_at_is_bad_request_and_changes_nothing(
    api: TrpcClient, graph: Graph, value: Any
) -> None:
    ok(admin_mutate(api, "campaigns.create", {"id": "edge", **NOTIFY_ONLY}))
    before = stored_campaigns(graph)
    response = admin_mutate(
        api, "campaigns.update", {"campaignId": "edge", "name": "x", "expectedUpdatedAt": value}
    )
    assert_bad_request_at(response, "expectedUpdatedAt")
    assert stored_campaigns(graph) == before


@pytest.mark.parametrize(
    ("field", "value", "stored"),
    [
        ("startsAt", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
        ("startsAt", "2030-01-01T05:30:00.123456789+05:30", "2030-01-01T00:00:00.123456Z"),
        ("startsAt", "2030-01-01t00:00:00.5z", "2030-01-01T00:00:00.500000Z"),
        ("endsAt", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999000Z"),
        ("endsAt", "9999-12-31T23:59:59+01:00", "9999-12-31T22:59:59.000000Z"),
    ],
)
def test_edge_timestamps_are_stored_fixed_width_and_read_back(
    api: TrpcClient, graph: Graph, field: str, value: str, stored: str
) -> None:
    created = ok(admin_mutate(api, "campaigns.create", {"id": "edge", **NOTIFY_ONLY, field: value}))
    assert created[field] == stored
    assert stored_campaigns(graph)[0][field] == stored  # the flat copy Cypher compares as text
    assert ok(admin_query(api, "campaigns.get", {"campaignId": "edge"}))[field] == stored
    updated = ok(admin_mutate(api, "campaigns.update", {"campaignId": "edge", "name": "again"}))
    assert updated[field] == stored
    assert_reads_still_work(api, ["edge"])
