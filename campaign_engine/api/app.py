"""``create_app``: the composition root of the API edge.

It validates the settings this edge needs, opens the graph, applies the schema, wires the procedure
routers into one tRPC endpoint and serves the generated OpenAPI document. Tests pass their own graph or
clock; nothing here runs at import time.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.responses import Response

from campaign_engine.api import routers
from campaign_engine.api.auth import TokenVerifier
from campaign_engine.api.context import RateLimiter, Services
from campaign_engine.api.openapi import build_openapi
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.config import Settings
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.schema import apply_schema, schema_applied

__all__ = ["ROUTERS", "create_app"]


def _discover_routers() -> Sequence[ProcedureRouter]:
    """Every module in ``api/routers`` that defines ``router`` contributes its procedures."""
    found = []
    for info in sorted(pkgutil.iter_modules(routers.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{routers.__name__}.{info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, ProcedureRouter):
            found.append(router)
    return tuple(found)


ROUTERS: Sequence[ProcedureRouter] = _discover_routers()


def create_app(
    settings: Settings,
    *,
    graph: Graph | None = None,
    clock: Clock = system_clock,
    rate_limiter: RateLimiter | None = None,
    extras: dict[str, object] | None = None,
) -> FastAPI:
    settings.require_api()
    owns_graph = graph is None
    the_graph = graph if graph is not None else open_graph(settings)
    services = Services(
        settings=settings,
        graph=the_graph,
        clock=clock,
        verifier=TokenVerifier(settings),
        rate_limiter=rate_limiter,
        extras=dict(extras or {}),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        apply_schema(the_graph)
        yield
        if owns_graph:
            the_graph.close()

    app = FastAPI(title="campaign-engine", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.services = services
    endpoint = TrpcEndpoint(services, ROUTERS)

    async def trpc(request: Request) -> Response:
        return await endpoint(request)

    # A plain Starlette route: FastAPI's own 404/405/422 bodies never appear under /trpc.
    app.add_route(
        "/trpc/{path:path}",
        trpc,
        methods=["GET", "POST", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"],
        include_in_schema=False,
    )
    document = build_openapi(endpoint.procedures.values(), title=app.title, version=app.version)

    def openapi() -> dict[str, Any]:
        return document

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        try:
            ready = schema_applied(the_graph)
        except Exception:  # any failure to answer means "not ready", never a 500 page
            ready = False
        return JSONResponse(
            {"status": "ready" if ready else "unavailable"}, status_code=200 if ready else 503
        )

    return app
