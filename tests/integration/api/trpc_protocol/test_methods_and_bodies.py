"""The tRPC wire protocol over the real app and a real Neo4j: methods, paths, bodies and inputs.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import json

import pytest

from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, error_code, ok
from tests.support.trpc_wire import NEW_CAMPAIGN, _create, _error

_JSON = {"content-type": "application/json"}

# --- methods and paths -------------------------------------------------------------------------


def test_head_is_204_without_body(api: TrpcClient) -> None:
    for path in ("/trpc/campaigns.list", "/trpc/nope"):
        response = api.http.head(path)
        assert response.status_code == 204
        assert response.content == b""


def test_a_mutation_by_get_is_405_method_not_supported(api: TrpcClient, admin: dict[str, str]) -> None:
    mutation_by_get = api.http.get(
        "/trpc/campaigns.create", params={"input": json.dumps(NEW_CAMPAIGN)}, headers=admin
    )
    assert mutation_by_get.status_code == 405
    _error(mutation_by_get.json(), "METHOD_NOT_SUPPORTED", 405, path="campaigns.create")
    # Nothing ran: the mutation sent by GET created nothing.
    assert ok(api.http.get("/trpc/campaigns.list", headers=admin))["records"] == []
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"):
        response = api.http.request(method, "/trpc/campaigns.create", headers=admin)
        assert response.status_code == 405, method
        _error(response.json(), "METHOD_NOT_SUPPORTED", 405)
    allowed = api.http.request("OPTIONS", "/trpc/campaigns.create", headers=admin)
    assert allowed.headers["allow"] == "HEAD, POST"


def test_a_query_by_post_answers_as_by_get(api: TrpcClient, admin: dict[str, str]) -> None:
    """tRPC's ``methodOverride: "POST"`` (LearnCard's client): a query's input is then the JSON body."""
    _create(api, admin)
    by_get = ok(api.http.get("/trpc/campaigns.get", params={"input": '{"campaignId":"c1"}'}, headers=admin))
    assert ok(api.http.post("/trpc/campaigns.get", json={"campaignId": "c1"}, headers=admin)) == by_get
    assert ok(api.http.post("/trpc/campaigns.list", headers=admin))["records"][0]["id"] == "c1"
    batch = api.http.post(
        "/trpc/campaigns.get,campaigns.list?batch=1", json={"0": {"campaignId": "c1"}}, headers=admin
    ).json()
    assert [item["result"]["data"].get("id") for item in batch] == ["c1", None]
    refused = api.http.post("/trpc/campaigns.list", json={"limit": 0}, headers=admin)
    assert [issue["path"] for issue in _error(refused.json(), "BAD_REQUEST", 400)["data"]["issues"]] == [
        ["limit"]
    ]


def test_an_input_sent_as_a_json_string_is_unwrapped_and_validated_alike(
    api: TrpcClient, admin: dict[str, str], graph: Graph
) -> None:
    """LearnCard's input transformer JSON-stringifies every input: the wire input is a JSON string
    holding the object, on GET, POST and in batches; the same validation applies to what it holds."""
    created = ok(api.http.post("/trpc/campaigns.create", json=json.dumps(NEW_CAMPAIGN), headers=admin))
    assert created["id"] == "c1"
    wrapped = json.dumps(json.dumps({"campaignId": "c1"}))
    assert ok(api.http.get("/trpc/campaigns.get", params={"input": wrapped}, headers=admin))["id"] == "c1"
    assert ok(api.http.post("/trpc/campaigns.get", content=wrapped, headers={**admin, **_JSON}))["id"] == "c1"
    batch = api.http.post(
        "/trpc/campaigns.get,campaigns.list?batch=1",
        json={"0": json.dumps({"campaignId": "c1"}), "1": json.dumps({"limit": 5})},
        headers=admin,
    ).json()
    assert [item["result"]["data"].get("id") for item in batch] == ["c1", None]

    invalid = api.http.post(
        "/trpc/campaigns.create", json=json.dumps({**NEW_CAMPAIGN, "id": "Bad Id"}), headers=admin
    )
    assert [issue["path"] for issue in _error(invalid.json(), "BAD_REQUEST", 400)["data"]["issues"]] == [
        ["id"]
    ]
    lax = api.http.post("/trpc/campaigns.list", json=json.dumps({"limit": "5"}), headers=admin)
    assert error_code(lax) == "BAD_REQUEST"  # strict as ever: "5" is no integer inside the string either
    for not_json in ("{not json", "", "/a+/i"):
        response = api.http.post("/trpc/campaigns.create", json=not_json, headers=admin)
        assert response.status_code == 400, not_json
        _error(response.json(), "BAD_REQUEST", 400, path="campaigns.create")
    twice = api.http.post("/trpc/campaigns.create", json=json.dumps(json.dumps(NEW_CAMPAIGN)), headers=admin)
    assert error_code(twice) == "BAD_REQUEST"  # unwrapped once, never recursively
    assert graph.run("MATCH (c:Campaign) RETURN count(c) AS n")[0]["n"] == 1


def test_unknown_procedure_is_a_not_found_envelope(api: TrpcClient, admin: dict[str, str]) -> None:
    for url in ("/trpc/campaigns.nope", "/trpc/nope", "/trpc/", "/trpc", "/trpc/campaigns"):
        for method in ("GET", "POST"):
            response = api.http.request(method, url, headers=admin, follow_redirects=False)
            assert response.status_code == 404, (method, url, response.text)
            error = _error(response.json(), "NOT_FOUND", 404)
            assert error["code"] == -32004
    assert api.http.get("/trpc/campaigns.nope").json()["error"]["data"]["path"] == "campaigns.nope"


# --- bodies and inputs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("GET", "/trpc/campaigns.list?input=%7Bnot-json", None),
        ("GET", "/trpc/campaigns.list,campaigns.list?batch=1&input=%7B%220%22%3A", None),
        ("POST", "/trpc/campaigns.create", b'{"id": "c1",'),
        ("POST", "/trpc/campaigns.create,campaigns.create?batch=1", b"{0: 1}"),
        ("POST", "/trpc/campaigns.create", b"\xff\xfe"),
    ],
)
def test_malformed_json_is_parse_error_400(
    api: TrpcClient, admin: dict[str, str], method: str, url: str, body: bytes | None
) -> None:
    response = api.http.request(
        method, url, content=body, headers={**admin, "content-type": "application/json"}
    )
    assert response.status_code == 400
    # One envelope for the whole request, even for a batch: @trpc/client hands it to every call.
    error = _error(response.json(), "PARSE_ERROR", 400)
    assert error["code"] == -32700


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_post_body_that_is_not_json_content_is_415(
    api: TrpcClient, admin: dict[str, str], content_type: str | None
) -> None:
    headers = dict(admin)
    if content_type is not None:
        headers["content-type"] = content_type
    response = api.http.post(
        "/trpc/campaigns.create", content=json.dumps(NEW_CAMPAIGN).encode(), headers=headers
    )
    assert response.status_code == 415
    error = _error(response.json(), "UNSUPPORTED_MEDIA_TYPE", 415)
    assert error["code"] == -32015
    assert ok(api.http.get("/trpc/campaigns.list", headers=admin))["records"] == []


def test_json_content_type_with_charset_is_accepted(api: TrpcClient, admin: dict[str, str]) -> None:
    response = api.http.post(
        "/trpc/campaigns.create",
        content=json.dumps(NEW_CAMPAIGN).encode(),
        headers={**admin, "content-type": "Application/JSON; charset=utf-8"},
    )
    assert ok(response)["id"] == "c1"


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
def test_empty_post_body_is_no_input(
    api: TrpcClient, admin: dict[str, str], content_type: str | None
) -> None:
    headers = dict(admin)
    if content_type is not None:
        headers["content-type"] = content_type
    response = api.http.post("/trpc/campaigns.create", content=b"", headers=headers)
    # Not a parse error, not 415: the input model validates "nothing" and names the missing fields.
    assert response.status_code == 400
    error = _error(response.json(), "BAD_REQUEST", 400, path="campaigns.create")
    assert {tuple(issue["path"]) for issue in error["data"]["issues"]} >= {("id",), ("name",), ("channels",)}


def test_validation_errors_are_bad_request_with_field_paths(api: TrpcClient, admin: dict[str, str]) -> None:
    secret_looking = "do-not-echo-this-value"
    response = api.http.post(
        "/trpc/campaigns.create",
        json={
            "id": "Not An Id",
            "name": "ok",
            "channels": ["notify", "pigeon"],
            "notification": {"title": "", "body": "b"},
            "bogus": secret_looking,
        },
        headers=admin,
    )
    assert response.status_code == 400
    error = _error(response.json(), "BAD_REQUEST", 400, path="campaigns.create")
    assert error["code"] == -32600
    issues = error["data"]["issues"]
    assert all(set(issue) == {"path", "message", "code"} for issue in issues), issues
    assert {tuple(issue["path"]) for issue in issues} == {
        ("id",),
        ("channels", 1),
        ("notification", "title"),
        ("bogus",),
    }
    assert secret_looking not in response.text  # inputs are never echoed back
    query = api.http.get("/trpc/campaigns.list", params={"input": json.dumps({"limit": 0})}, headers=admin)
    assert query.status_code == 400
    assert [issue["path"] for issue in query.json()["error"]["data"]["issues"]] == [["limit"]]
    not_an_object = api.http.get("/trpc/campaigns.list", params={"input": "[]"}, headers=admin)
    assert error_code(not_an_object) == "BAD_REQUEST"
