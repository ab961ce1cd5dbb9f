"""The tRPC wire protocol over the real app and a real Neo4j: queries, mutations and batches.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import json

from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, ok
from tests.support.trpc_wire import NEW_CAMPAIGN, _create, _error, error_code_of

# --- queries, mutations, batches ---------------------------------------------------------------


def test_query_by_get_with_json_input_and_mutation_by_post_with_json_body(
    api: TrpcClient, admin: dict[str, str]
) -> None:
    created = api.http.post("/trpc/campaigns.create", json=NEW_CAMPAIGN, headers=admin)
    assert created.status_code == 200
    assert created.headers["content-type"].startswith("application/json")
    assert set(created.json()) == {"result"} and set(created.json()["result"]) == {"data"}
    got = api.http.get(
        "/trpc/campaigns.get", params={"input": json.dumps({"campaignId": "c1"})}, headers=admin
    )
    assert got.status_code == 200
    assert got.json() == {"result": {"data": created.json()["result"]["data"]}}
    # A query without ?input= runs with no input (the input model's defaults).
    listed = ok(api.http.get("/trpc/campaigns.list", headers=admin))
    assert [c["id"] for c in listed["records"]] == ["c1"]


def test_an_undeclared_query_parameter_is_bad_request_and_nothing_runs(
    api: TrpcClient, admin: dict[str, str]
) -> None:
    """A call reads ``input`` and ``batch``; anything else is refused, not ignored (the fuzzer's negative
    case: a query parameter the document does not declare)."""
    params = {"input": json.dumps({"campaignId": "c1"}), "extra": "1"}
    for refused in (
        api.http.get("/trpc/campaigns.get", params=params, headers=admin),
        api.http.post("/trpc/campaigns.create?extra=1", json=NEW_CAMPAIGN, headers=admin),
    ):
        assert refused.status_code == 400
        _error(refused.json(), "BAD_REQUEST", 400)
    assert ok(api.http.get("/trpc/campaigns.list", headers=admin))["records"] == []


def test_batch_get_answers_an_array_in_order(api: TrpcClient, admin: dict[str, str]) -> None:
    _create(api, admin)
    response = api.http.get(
        "/trpc/campaigns.get,campaigns.list",
        params={"batch": "1", "input": json.dumps({"0": {"campaignId": "c1"}, "1": {"limit": 1}})},
        headers=admin,
    )
    assert response.status_code == 200
    first, second = response.json()
    assert first["result"]["data"]["id"] == "c1"
    assert [c["id"] for c in second["result"]["data"]["records"]] == ["c1"]


def test_batch_member_without_input_runs_with_no_input(api: TrpcClient, admin: dict[str, str]) -> None:
    """httpBatchLink drops ``undefined`` inputs from ``{"0": .., "1": ..}``: a missing key is no input."""
    _create(api, admin)
    response = api.http.get(
        "/trpc/campaigns.list,campaigns.get",
        params={"batch": "1", "input": json.dumps({"1": {"campaignId": "c1"}})},
        headers=admin,
    )
    assert response.status_code == 200
    listed, got = response.json()
    assert [c["id"] for c in listed["result"]["data"]["records"]] == ["c1"]
    assert got["result"]["data"]["id"] == "c1"


def test_batch_get_with_mixed_statuses_is_207(api: TrpcClient, admin: dict[str, str]) -> None:
    _create(api, admin)
    response = api.http.get(
        "/trpc/campaigns.get,campaigns.get",
        params={"batch": "1", "input": json.dumps({"0": {"campaignId": "c1"}, "1": {"campaignId": "nope"}})},
        headers=admin,
    )
    assert response.status_code == 207
    found, missing = response.json()
    assert found["result"]["data"]["id"] == "c1"
    error = _error(missing, "NOT_FOUND", 404, path="campaigns.get")
    assert error["code"] == -32004


def test_batch_post_runs_each_mutation_and_reports_each_result(
    api: TrpcClient, admin: dict[str, str]
) -> None:
    response = api.http.post(
        "/trpc/campaigns.create,campaigns.create?batch=1",
        json={"0": NEW_CAMPAIGN, "1": {**NEW_CAMPAIGN, "id": "c2", "channels": []}},
        headers=admin,
    )
    assert response.status_code == 207
    created, invalid = response.json()
    assert created["result"]["data"]["id"] == "c1"
    error = _error(invalid, "BAD_REQUEST", 400, path="campaigns.create")
    assert [issue["path"] for issue in error["data"]["issues"]] == [["channels"]]
    # Same statuses everywhere: that status, not 207.
    both_bad = api.http.post(
        "/trpc/campaigns.create,campaigns.create?batch=1",
        json={"0": {"id": "x"}, "1": {"id": "y"}},
        headers=admin,
    )
    assert both_bad.status_code == 400
    assert [error_code_of(item) for item in both_bad.json()] == ["BAD_REQUEST", "BAD_REQUEST"]


def test_unknown_batch_member_fails_alone(api: TrpcClient, admin: dict[str, str]) -> None:
    response = api.http.get("/trpc/campaigns.list,nope.nothing?batch=1", headers=admin)
    assert response.status_code == 207
    listed, unknown = response.json()
    assert listed["result"]["data"]["records"] == []
    _error(unknown, "NOT_FOUND", 404, path="nope.nothing")


def test_oversized_batches_and_bodies_are_refused_before_anything_runs(
    api: TrpcClient, admin: dict[str, str], graph: Graph
) -> None:
    too_many = ",".join(["campaigns.list"] * 101)
    response = api.http.get(f"/trpc/{too_many}?batch=1", headers=admin)
    assert response.status_code == 400
    _error(response.json(), "BAD_REQUEST", 400)

    huge = '{"profiles": [{"profileId": "' + "x" * (9 * 1024 * 1024) + '"}]}'
    response = api.http.post(
        "/trpc/profiles.upsert", content=huge, headers={**admin, "content-type": "application/json"}
    )
    assert response.status_code == 413
    _error(response.json(), "PAYLOAD_TOO_LARGE", 413)
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0


def test_batch_input_must_be_an_object(api: TrpcClient, admin: dict[str, str]) -> None:
    response = api.http.get("/trpc/campaigns.list?batch=1", params={"input": "[1]"}, headers=admin)
    assert response.status_code == 400
    _error(response.json(), "BAD_REQUEST", 400)
