"""The tRPC wire protocol over the real app and a real Neo4j: the OpenAPI document and the health endpoints.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient

from campaign_engine.api.app import ROUTERS, create_app
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.schema import apply_schema
from tests.conftest import free_port
from tests.support.api import TrpcClient

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
        # One operation per procedure; a query's second one is its POST (tRPC's method override).
        assert list(item) == ([method, "post"] if procedure.kind == "query" else [method]), path
        operation = item[method]
        assert operation["operationId"] == path
        if procedure.kind == "query":
            posted = item["post"]
            assert posted["operationId"] == f"{path}:post"
            assert posted["responses"] == operation["responses"]
            if procedure.input_model is not None:
                body_schema = posted["requestBody"]["content"]["application/json"]["schema"]
                assert body_schema == operation["parameters"][0]["content"]["application/json"]["schema"]
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
        for method in item:
            response = api.http.request(method.upper(), url)
            body = response.json()
            assert set(body) <= {"result", "error"}, (url, method, body)
            if "error" in body:
                message = body["error"]["message"]
                assert not message.startswith(("No procedure found", "Unsupported")), (url, method, body)


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
