"""The tRPC wire protocol, OpenAPI document and health endpoints over the real app and a real Neo4j.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.routing import Route

from campaign_engine.api.app import ROUTERS, create_app
from campaign_engine.api.auth import TokenVerifier
from campaign_engine.api.context import Context, Services
from campaign_engine.api.errors import JSON_RPC_CODES
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.config import Settings
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.schema import apply_schema
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import TrpcClient, api_client, error_code, ok

NEW_CAMPAIGN = {
    "id": "c1",
    "name": "Hello",
    "channels": ["notify"],
    "notification": {"title": "Title", "body": "Body"},
}


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


@pytest.fixture
def admin(api: TrpcClient) -> dict[str, str]:
    return api.headers_for(ADMIN_ID, admin=True)


def _create(api: TrpcClient, admin: dict[str, str], campaign_id: str = "c1") -> dict[str, Any]:
    created: dict[str, Any] = ok(
        api.http.post("/trpc/campaigns.create", json={**NEW_CAMPAIGN, "id": campaign_id}, headers=admin)
    )
    return created


def _error(body: Any, code: str, status: int, path: str | None = None) -> dict[str, Any]:
    """Asserts one tRPC error envelope and returns its ``error`` object."""
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "code", "data"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert error["data"]["code"] == code, error
    assert error["data"]["httpStatus"] == status, error
    if path is not None:
        assert error["data"]["path"] == path, error
    return error


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


def error_code_of(body: Any) -> str:
    return str(body["error"]["data"]["code"])


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


# --- hostile requests: each one is a single 4xx envelope, and nothing runs -----------------------

JSON = "application/json"


def _oversize_in_chunks() -> Iterator[bytes]:
    """9 MiB without a Content-Length (chunked): the limit must hold while the body arrives."""
    yield b'{"profiles": [{"profileId": "'
    for _ in range(9):
        yield b"x" * (1024 * 1024)
    yield b'"}]}'


HOSTILE = [
    # method, url, body, content type, status, tRPC code, Allow header on a 405
    pytest.param(
        "POST", "/trpc/campaigns.create", b"[" * 5000, JSON, 400, "PARSE_ERROR", None, id="deep-body"
    ),
    pytest.param(
        "GET",
        "/trpc/campaigns.list?input=" + "%5B" * 5000,
        None,
        None,
        400,
        "PARSE_ERROR",
        None,
        id="deep-query",
    ),
    pytest.param(
        "POST",
        "/trpc/campaigns.create,campaigns.create?batch=1",
        b'{"0": ' + b"[" * 5000,
        JSON,
        400,
        "PARSE_ERROR",
        None,
        id="deep-batch",
    ),
    pytest.param(
        "POST",
        "/trpc/profiles.upsert",
        b'{"profiles": [' + b"9" * 5000 + b"]}",
        JSON,
        400,
        "PARSE_ERROR",
        None,
        id="5000-digit-integer",
    ),
    pytest.param(
        "GET",
        "/trpc/campaigns.list?input=%7B%22limit%22%3A" + "9" * 5000 + "%7D",
        None,
        None,
        400,
        "PARSE_ERROR",
        None,
        id="5000-digit-integer-query",
    ),
    # Within the parser's bound, a huge number is the model's to refuse, with the field's path.
    pytest.param(
        "GET",
        "/trpc/campaigns.list?input=%7B%22limit%22%3A" + "9" * 4000 + "%7D",
        None,
        None,
        400,
        "BAD_REQUEST",
        None,
        id="4000-digit-integer",
    ),
    pytest.param(
        "POST", "/trpc/campaigns.create", b'{"id": "\xc3\x28"}', JSON, 400, "PARSE_ERROR", None, id="bad-utf8"
    ),
    pytest.param(
        "POST",
        "/trpc/campaigns.create",
        b'{"id": "\\ud800"}',
        JSON,
        400,
        "PARSE_ERROR",
        None,
        id="lone-surrogate",
    ),
    pytest.param(
        "GET",
        "/trpc/campaigns.list?input=%7B%22limit%22%3ANaN%7D",
        None,
        None,
        400,
        "PARSE_ERROR",
        None,
        id="nan",
    ),
    pytest.param(
        "POST",
        "/trpc/campaigns.create",
        b"{}",
        "text/plain",
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        None,
        id="text-plain",
    ),
    pytest.param(
        "POST",
        "/trpc/profiles.upsert",
        _oversize_in_chunks,
        JSON,
        413,
        "PAYLOAD_TOO_LARGE",
        None,
        id="oversize",
    ),
    pytest.param(
        "GET",
        "/trpc/campaigns.create",
        json.dumps(NEW_CAMPAIGN).encode(),
        JSON,
        405,
        "METHOD_NOT_SUPPORTED",
        "HEAD, POST",
        id="get-with-body-to-mutation",
    ),
    pytest.param(
        "POST",
        "/trpc/campaigns.list",
        b"{}",
        JSON,
        405,
        "METHOD_NOT_SUPPORTED",
        "GET, HEAD",
        id="post-to-query",
    ),
    pytest.param(
        "PUT", "/trpc/campaigns.create", b"{}", JSON, 405, "METHOD_NOT_SUPPORTED", "HEAD, POST", id="put"
    ),
    pytest.param(
        "OPTIONS", "/trpc/campaigns.get", None, None, 405, "METHOD_NOT_SUPPORTED", "GET, HEAD", id="options"
    ),
    pytest.param(
        "DELETE",
        "/trpc/nope.nothing",
        None,
        None,
        405,
        "METHOD_NOT_SUPPORTED",
        "GET, HEAD, POST",
        id="unknown-path",
    ),
    pytest.param(
        "GET",
        "/trpc/campaigns.create,campaigns.delete?batch=1",
        None,
        None,
        405,
        "METHOD_NOT_SUPPORTED",
        "HEAD, POST",
        id="batch-of-mutations-by-get",
    ),
]


@pytest.mark.parametrize(("method", "url", "body", "content_type", "status", "code", "allow"), HOSTILE)
def test_hostile_requests_are_one_4xx_envelope_and_nothing_runs(
    api: TrpcClient,
    admin: dict[str, str],
    graph: Graph,
    method: str,
    url: str,
    body: bytes | Callable[[], Iterator[bytes]] | None,
    content_type: str | None,
    status: int,
    code: str,
    allow: str | None,
) -> None:
    headers = {**admin, **({"content-type": content_type} if content_type else {})}
    content = body() if callable(body) else body
    response = api.http.request(method, url, content=content, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(JSON)
    payload = response.json()
    if isinstance(payload, list):  # a batch whose every call was refused alike
        assert payload, payload
        errors = [_error(item, code, status) for item in payload]
    else:
        errors = [_error(payload, code, status)]
    assert all(error["code"] == JSON_RPC_CODES[code] for error in errors)
    assert response.headers.get("allow") == allow
    assert graph.run("MATCH (n) WHERE n:Campaign OR n:Profile RETURN count(n) AS n")[0]["n"] == 0


def test_inputs_are_read_as_strictly_typed_json_as_documented(
    api: TrpcClient, admin: dict[str, str], graph: Graph
) -> None:
    """The document says integer and boolean: "5" and 0 are neither (pydantic's lax mode coerced them)."""
    query = api.http.get("/trpc/campaigns.list", params={"input": json.dumps({"limit": "5"})}, headers=admin)
    assert [issue["path"] for issue in _error(query.json(), "BAD_REQUEST", 400)["data"]["issues"]] == [
        ["limit"]
    ]
    upsert = api.http.post(
        "/trpc/profiles.upsert",
        json={"profiles": [{"profileId": "p1", "isServiceProfile": 0}]},
        headers=admin,
    )
    issues = _error(upsert.json(), "BAD_REQUEST", 400)["data"]["issues"]
    assert [issue["path"] for issue in issues] == [["profiles", 0, "isServiceProfile"]]
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0
    # A timestamp has no JSON type of its own: its string is still read by the field.
    created = ok(
        api.http.post(
            "/trpc/campaigns.create",
            json={**NEW_CAMPAIGN, "startsAt": "2030-01-01T02:00:00+02:00"},
            headers=admin,
        )
    )
    assert created["startsAt"].startswith("2030-01-01T00:00:00")


def test_openapi_requires_an_input_exactly_where_the_api_does(api: TrpcClient, admin: dict[str, str]) -> None:
    """A call without input is refused (BAD_REQUEST naming fields) iff the document marks it required;
    where it is optional the document also allows ``null``, which the adapter reads as no input."""
    doc = api.http.get("/openapi.json").json()
    optional = set()
    for url, item in doc["paths"].items():
        ((method, operation),) = item.items()
        declared = operation["parameters"][0] if "parameters" in operation else operation.get("requestBody")
        if declared is None:
            continue
        response = api.http.request(method.upper(), url, headers=admin)
        refused = response.status_code == 400 and bool(response.json()["error"]["data"].get("issues"))
        assert refused == declared["required"], (url, response.text)
        if not declared["required"]:
            optional.add(url)
            schema = declared["content"]["application/json"]["schema"]
            assert {"type": "null"} in schema["anyOf"], url
    assert {"/trpc/campaigns.list", "/trpc/preferences.updateAnnouncementPreferences"} <= optional
    assert "/trpc/campaigns.get" not in optional


# --- handler bugs: a throwaway router, never part of the production registry ----------------------


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    word: str = "default"
    times: int = Field(default=1, ge=1)


class Echo(BaseModel):
    words: list[str]


def _probe_router() -> ProcedureRouter:
    router = ProcedureRouter(
        "probe", {"boom": "public", "badOutput": "public", "ping": "public", "echo": "public"}
    )

    @router.query("boom")
    def boom(ctx: Context) -> Echo:
        raise RuntimeError("neo4j://admin:hunter2@db.internal:7687 exploded in /srv/app/secret.py")

    @router.query("badOutput")
    def bad_output(ctx: Context) -> Echo:
        return {"words": "hunter2"}  # type: ignore[return-value]

    @router.query("ping")
    def ping(ctx: Context) -> str:
        return "pong"

    @router.mutation("echo")
    def echo(ctx: Context, data: EchoInput) -> Echo:
        return Echo(words=[data.word] * data.times)

    return router


@pytest.fixture
def probe_app(base_settings: Settings, graph: Graph) -> Iterator[Starlette]:
    engagement = EngagementService(graph, policy=lambda: Policy.of(base_settings, system_clock()))
    services = Services(
        settings=base_settings,
        graph=graph,
        clock=system_clock,
        verifier=TokenVerifier(base_settings),
        engagement=engagement,
    )
    endpoint = TrpcEndpoint(services, [_probe_router()])
    yield Starlette(routes=[Route("/trpc/{path:path}", endpoint.__call__, methods=["GET", "POST", "HEAD"])])
    engagement.close()


@pytest.fixture
def probe(probe_app: Starlette) -> Iterator[TestClient]:
    with TestClient(probe_app, raise_server_exceptions=False) as client:
        yield client


def _raw_post(app: Starlette, *received: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """POST /trpc/probe.echo straight through ASGI, with the server messages ``received`` as given."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/trpc/probe.echo",
        "raw_path": b"/trpc/probe.echo",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "server": ("testserver", 80),
        "client": ("testclient", 50000),
    }
    messages = iter(received)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, body = sent[0], b"".join(message.get("body", b"") for message in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


def test_a_bug_outside_any_call_is_still_one_envelope(
    probe_app: Starlette, caplog: pytest.LogCaptureFixture
) -> None:
    """A server handing the body over as text (a bug, not a client error) fails before any call runs."""
    with caplog.at_level(logging.ERROR, logger="campaign_engine.api.trpc"):
        status, headers, body = _raw_post(probe_app, {"type": "http.request", "body": '{"word": "hi"}'})
    assert status == 500
    assert headers["content-type"] == JSON
    _error(json.loads(body), "INTERNAL_SERVER_ERROR", 500, path="probe.echo")
    assert any("probe.echo" in record.getMessage() for record in caplog.records)


def test_a_client_gone_mid_body_is_a_bad_request_not_a_logged_bug(
    probe_app: Starlette, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="campaign_engine.api.trpc"):
        status, _, body = _raw_post(
            probe_app,
            {"type": "http.request", "body": b'{"wo', "more_body": True},
            {"type": "http.disconnect"},
        )
    assert status == 400
    _error(json.loads(body), "BAD_REQUEST", 400)
    assert caplog.records == []


@pytest.mark.parametrize("procedure", ["probe.boom", "probe.badOutput"])
def test_handler_bug_is_a_generic_internal_server_error(
    probe: TestClient, procedure: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="campaign_engine.api.trpc"):
        response = probe.get(f"/trpc/{procedure}")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "message": "Internal server error",
            "code": -32603,
            "data": {"code": "INTERNAL_SERVER_ERROR", "httpStatus": 500, "path": procedure},
        }
    }
    for leak in ("hunter2", "neo4j://", "/srv/app", "RuntimeError", "Traceback", "stack"):
        assert leak not in response.text
    assert any(procedure in record.getMessage() for record in caplog.records)  # the operator still sees it


def test_a_failing_member_does_not_fail_the_batch(probe: TestClient) -> None:
    response = probe.get("/trpc/probe.ping,probe.boom?batch=1")
    assert response.status_code == 207
    pong, boom = response.json()
    assert pong == {"result": {"data": "pong"}}
    assert boom["error"]["data"]["code"] == "INTERNAL_SERVER_ERROR"


def test_procedure_without_input_model_rejects_input(probe: TestClient) -> None:
    assert probe.get("/trpc/probe.ping").json() == {"result": {"data": "pong"}}
    response = probe.get("/trpc/probe.ping", params={"input": json.dumps({"x": 1})})
    assert response.status_code == 400
    assert response.json()["error"]["data"]["code"] == "BAD_REQUEST"


def test_empty_mutation_body_uses_input_defaults(probe: TestClient) -> None:
    assert probe.post("/trpc/probe.echo").json() == {"result": {"data": {"words": ["default"]}}}
    response = probe.post("/trpc/probe.echo", json={"word": "hi", "times": 2})
    assert response.json() == {"result": {"data": {"words": ["hi", "hi"]}}}
    # JSON null is no input too (a client may send it for an optional input).
    assert probe.post("/trpc/probe.echo", json=None).json() == {"result": {"data": {"words": ["default"]}}}


# --- OpenAPI -----------------------------------------------------------------------------------


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_openapi_describes_every_procedure_in_the_wire_shape(api: TrpcClient) -> None:
    response = api.http.get("/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.1")
    registered = {p.path: p for router in ROUTERS for p in router.procedures}
    assert {"campaigns.create", "campaigns.get", "campaigns.list", "profiles.upsert", "profiles.get"} <= set(
        registered
    )
    assert set(doc["paths"]) == {f"/trpc/{path}" for path in registered}
    schemas = doc["components"]["schemas"]
    for path, procedure in registered.items():
        item = doc["paths"][f"/trpc/{path}"]
        method = "get" if procedure.kind == "query" else "post"
        assert list(item) == [method], (path, list(item))  # one operation per procedure
        operation = item[method]
        assert operation["operationId"] == path
        success = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert success["required"] == ["result"]
        assert success["properties"]["result"]["required"] == ["data"]
        assert "data" in success["properties"]["result"]["properties"]
        error = operation["responses"]["default"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/TrpcError"}
        if procedure.access == "public":
            assert "security" not in operation
        else:
            assert operation["security"] == [{"bearer": []}]
        if procedure.input_model is not None and procedure.kind == "query":
            assert [p["name"] for p in operation["parameters"]] == ["input"]
            assert operation["parameters"][0]["in"] == "query"
        if procedure.input_model is not None and procedure.kind == "mutation":
            assert "application/json" in operation["requestBody"]["content"]
    error_schema = schemas["TrpcError"]["properties"]["error"]
    assert error_schema["required"] == ["message", "code", "data"]
    assert {"NOT_FOUND", "BAD_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "INTERNAL_SERVER_ERROR"} <= set(
        error_schema["properties"]["data"]["properties"]["code"]["enum"]
    )
    assert "issues" in error_schema["properties"]["data"]["properties"]
    for ref in set(_refs(doc)):  # every reference resolves
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    create_body = doc["paths"]["/trpc/campaigns.create"]["post"]["requestBody"]["content"]["application/json"]
    create_schema = create_body["schema"]
    if "$ref" in create_schema:
        create_schema = schemas[create_schema["$ref"].rsplit("/", 1)[1]]
    assert {"id", "name", "channels", "startsAt"} <= set(create_schema["properties"])  # camelCase wire names


def test_every_documented_operation_is_routed(api: TrpcClient) -> None:
    """The document and the router come from one registry: each documented call reaches a procedure."""
    doc = api.http.get("/openapi.json").json()
    for url, item in doc["paths"].items():
        ((method, _),) = item.items()
        response = api.http.request(method.upper(), url)
        body = response.json()
        assert set(body) <= {"result", "error"}, (url, body)
        if "error" in body:
            assert not body["error"]["message"].startswith(("No procedure found", "Unsupported")), (url, body)


# --- health ------------------------------------------------------------------------------------


def test_healthz_and_readyz(api: TrpcClient) -> None:
    assert api.http.get("/healthz").json() == {"status": "ok"}
    ready = api.http.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})


def test_readyz_is_503_until_the_schema_is_applied(api: TrpcClient, graph: Graph) -> None:
    graph.run("DROP INDEX campaign_status IF EXISTS")
    try:
        response = api.http.get("/readyz")
        assert (response.status_code, response.json()) == (503, {"status": "unavailable"})
        assert api.http.get("/healthz").status_code == 200  # the process itself is fine
    finally:
        apply_schema(graph)
    assert api.http.get("/readyz").status_code == 200


def test_readyz_is_503_at_once_when_the_graph_is_unreachable(base_settings: Settings) -> None:
    settings = base_settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{free_port()}"})
    graph = open_graph(settings)
    try:
        # No lifespan: the schema cannot be applied to a graph that is not there.
        client = TestClient(create_app(settings, graph=graph), raise_server_exceptions=False)
        started = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - started
        assert (response.status_code, response.json()) == (503, {"status": "unavailable"})
        assert elapsed < 5, f"readiness took {elapsed:.1f}s: probes would time out"
        assert client.get("/healthz").status_code == 200
    finally:
        graph.close()


def test_every_trpc_answer_says_no_store(api: TrpcClient, admin: dict[str, str]) -> None:
    """Answers are one caller's data: no browser or shared cache may keep any of them, success or not."""
    answers = {
        "query": api.http.get("/trpc/campaigns.list", params={"input": "{}"}, headers=admin),
        "batch": api.http.get(
            "/trpc/campaigns.list,campaigns.get",
            params={"batch": "1", "input": json.dumps({"0": {}, "1": {"campaignId": "none"}})},
            headers=admin,
        ),
        "unauthorized": api.http.get("/trpc/campaigns.list", params={"input": "{}"}),
        "unknown": api.http.get("/trpc/no.such"),
        "wrong method": api.http.put("/trpc/campaigns.list"),
        "parse error": api.http.get("/trpc/campaigns.list", params={"input": "{"}, headers=admin),
        "head": api.http.head("/trpc/campaigns.list"),
    }
    assert answers["query"].status_code == 200 and answers["batch"].status_code == 207
    for name, answer in answers.items():
        assert answer.headers.get("cache-control") == "no-store", name
    assert answers["wrong method"].headers["allow"]  # the 405's own header is kept
