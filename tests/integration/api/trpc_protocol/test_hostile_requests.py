"""The tRPC wire protocol over the real app and a real Neo4j: hostile requests, strictly typed
inputs, and where an input is required.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from campaign_engine.api.errors import JSON_RPC_CODES
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, ok
from tests.support.trpc_wire import JSON, NEW_CAMPAIGN, _error

# --- hostile requests: each one is a single 4xx envelope, and nothing runs -----------------------


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
        "PUT", "/trpc/campaigns.create", b"{}", JSON, 405, "METHOD_NOT_SUPPORTED", "HEAD, POST", id="put"
    ),
    pytest.param(
        "OPTIONS",
        "/trpc/campaigns.get",
        None,
        None,
        405,
        "METHOD_NOT_SUPPORTED",
        "GET, HEAD, POST",
        id="options",
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
        method, operation = next(iter(item.items()))  # a query's POST twin declares the same input
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
