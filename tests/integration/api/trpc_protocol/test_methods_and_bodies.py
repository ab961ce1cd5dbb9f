"""The tRPC wire protocol over the real app and a real Neo4j: methods, paths, bodies and inputs.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import json

import pytest

from tests.support.api import TrpcClient, error_code, ok
from tests.support.trpc_wire import NEW_CAMPAIGN, _error

# --- methods and paths -------------------------------------------------------------------------


def test_head_is_204_without_body(api: TrpcClient) -> None:
    for path in ("/trpc/campaigns.list", "/trpc/nope"):
        response = api.http.head(path)
        assert response.status_code == 204
        assert response.content == b""


def test_wrong_method_is_405_method_not_supported_both_ways(api: TrpcClient, admin: dict[str, str]) -> None:
    query_by_post = api.http.post("/trpc/campaigns.list", json={}, headers=admin)
    assert query_by_post.status_code == 405
    assert _error(query_by_post.json(), "METHOD_NOT_SUPPORTED", 405, path="campaigns.list")["code"] == -32005
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
