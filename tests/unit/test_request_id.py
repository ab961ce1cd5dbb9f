"""``X-Request-Id`` (observability/request_id.py): one id per request, bound for its log lines, seen by
everything downstream that reads the header, and echoed to the caller."""

from __future__ import annotations

import re

import pytest
import structlog
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from campaign_engine.observability.request_id import RequestIdMiddleware


async def _echo(request: Request) -> JSONResponse:
    bound = structlog.contextvars.get_contextvars().get("requestId")
    return JSONResponse({"bound": bound, "header": request.headers.get("x-request-id")})


@pytest.fixture
def client() -> TestClient:
    app = Starlette(routes=[Route("/", _echo)])
    return TestClient(RequestIdMiddleware(app))


def test_a_plain_token_from_the_caller_is_used_everywhere(client: TestClient) -> None:
    answer = client.get("/", headers={"X-Request-Id": "trace-01:abc.DEF_9"})
    assert answer.headers["x-request-id"] == "trace-01:abc.DEF_9"
    assert answer.json() == {"bound": "trace-01:abc.DEF_9", "header": "trace-01:abc.DEF_9"}


@pytest.mark.parametrize("given", [None, "", "has space", "m0@example.com", "x" * 129, 'a"b'])
def test_anything_else_gets_a_fresh_id_that_downstream_sees_too(
    client: TestClient, given: str | None
) -> None:
    headers = {} if given is None else {"X-Request-Id": given}
    answer = client.get("/", headers=headers)
    fresh = answer.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", fresh)
    assert answer.json() == {"bound": fresh, "header": fresh}
