"""Bearer JWT auth for user and public procedures, through a throwaway router never part of the
production registry: a user procedure needs a valid token but no admin rights."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
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
from tests.support.jwt_tokens import (
    OTHER_SECRET,
    _bearer,
    _code,
    _hs256,
)

# --- user and public procedures: a throwaway router, never part of the production registry --------


def _probe_router() -> ProcedureRouter:
    router = ProcedureRouter("probe", {"whoami": "user", "open": "public"})

    @router.query("whoami")
    def whoami(ctx: Context) -> str:
        return ctx.user().profile_id

    @router.query("open")
    def open_(ctx: Context) -> str:
        return "open"

    return router


@pytest.fixture
def probe(base_settings: Settings, graph: Graph) -> Iterator[TestClient]:
    engagement = EngagementService(graph, policy=lambda: Policy.of(base_settings, system_clock()))
    services = Services(
        settings=base_settings,
        graph=graph,
        clock=system_clock,
        verifier=TokenVerifier(base_settings),
        engagement=engagement,
    )
    endpoint = TrpcEndpoint(services, [_probe_router()])
    app = Starlette(routes=[Route("/trpc/{path:path}", endpoint.__call__, methods=["GET", "POST"])])
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    engagement.close()


def test_user_procedures_need_a_valid_token_but_no_admin_rights(probe: TestClient) -> None:
    assert probe.get("/trpc/probe.whoami", headers=_bearer(_hs256(sub="user-7", scope=""))).json() == {
        "result": {"data": "user-7"}
    }
    assert _code(probe.get("/trpc/probe.whoami")) == (401, "UNAUTHORIZED")
    assert _code(probe.get("/trpc/probe.whoami", headers=_bearer(_hs256(OTHER_SECRET)))) == (
        401,
        "UNAUTHORIZED",
    )


def test_a_bad_token_fails_only_procedures_that_need_a_caller(probe: TestClient) -> None:
    headers = _bearer(_hs256(OTHER_SECRET))
    response = probe.get("/trpc/probe.open,probe.whoami?batch=1", headers=headers)
    assert response.status_code == 207
    opened, refused = response.json()
    assert opened == {"result": {"data": "open"}}
    assert refused["error"]["data"]["code"] == "UNAUTHORIZED"
