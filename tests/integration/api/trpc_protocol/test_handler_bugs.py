"""The tRPC wire protocol over the real app and a real Neo4j: handler bugs, through a throwaway
router never part of the production registry.

Each test pins one rule of DESIGN.md's API section: what an unmodified ``@trpc/client`` sends and
expects (``tests/e2e/test_trpc_client.py`` drives the real client; these tests pin the edges it never
exercises: bad JSON, wrong methods, content types, handler bugs, health).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.routing import Route

from campaign_engine.api.auth import TokenVerifier
from campaign_engine.api.context import Context, Services
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.config import Settings
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from tests.support.trpc_wire import JSON, _error

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
