"""``create_app``: the composition root of the API edge.

It validates the settings this edge needs, opens the graph, wires the procedure routers into one tRPC
endpoint and serves the generated OpenAPI document. Its start (the schema, the tenant seed) needs the
graph and is retried until the graph answers (``api/startup.py``): a process started while Neo4j is
away serves 503 meanwhile rather than exiting. Tests pass their own graph or clock; nothing here runs at
import time.
"""

from __future__ import annotations

import gc
import importlib
import logging
import pkgutil
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from campaign_engine.api import routers
from campaign_engine.api.admin_console import OidcClient, admin_console_router
from campaign_engine.api.app_standin import app_standin_router
from campaign_engine.api.auth import TokenVerifier
from campaign_engine.api.clicks import clicks_router
from campaign_engine.api.context import RateLimiter, Services
from campaign_engine.api.dev_subjects import dev_subjects_router
from campaign_engine.api.event_kick import KickAfterEvents
from campaign_engine.api.exports import exports_router
from campaign_engine.api.imports import imports_router
from campaign_engine.api.openapi import build_openapi
from campaign_engine.api.routers.webhooks import webhooks_router
from campaign_engine.api.startup import Startup
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.campaigns.engagement.email_clicks import ClickRecorder
from campaign_engine.campaigns.engagement.rate_limit import GraphRateLimiter
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.campaigns.self_test import ChannelTester
from campaign_engine.campaigns.tenants.api_keys import verify_key
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.email.web_view import web_view_router
from campaign_engine.delivery.relay_kick import RelayKick
from campaign_engine.did import DidResolver, resolver_for
from campaign_engine.did.auth import DidAuthenticator
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.feedback.config import FeedbackConfig
from campaign_engine.feedback.sns_http import SnsHttp
from campaign_engine.graph.graph import API_UNAVAILABLE_WAIT_SECONDS, Graph, open_graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.schema import apply_schema, schema_applied
from campaign_engine.graph.tenant_directory import TenantDirectory, tenants_of
from campaign_engine.graph.tenants import settings_seed
from campaign_engine.observability.metrics_serving import scrape, serving_registry
from campaign_engine.observability.request_id import RequestIdMiddleware
from campaign_engine.queue.port import Queue
from campaign_engine.unsubscribe.routes import unsubscribe_router
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import build_dispatch_queue, build_self_testers, build_webhooks_queue
from campaign_engine.wiring.engine_did import engine_did

__all__ = ["ROUTERS", "create_app", "freeze_startup_heap"]

log = logging.getLogger(__name__)


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


class _TrpcFirst:
    """ASGI middleware that answers ``/trpc`` and ``/trpc/<path>`` itself, for every method.

    FastAPI's own 404/405/422 bodies and slash redirects never appear under /trpc: the endpoint answers
    every outcome as a tRPC envelope (a 405 with its ``Allow`` header, a bug as an INTERNAL_SERVER_ERROR
    envelope). Serving it ahead of FastAPI's exception layers and router also skips work that would do
    nothing for these calls (a few percent of a cheap call's CPU). It sits inside FastAPI's
    ServerErrorMiddleware, which only a failure while sending the answer can still reach.
    """

    def __init__(self, app: ASGIApp, endpoint: TrpcEndpoint) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            root: str = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            if path == "/trpc" or path.startswith("/trpc/"):
                scope["path_params"] = {"path": path[len("/trpc/") :]}
                response = await self.endpoint(Request(scope, receive))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _name_in(tenants: TenantDirectory) -> Callable[[str], str | None]:
    """The display name the email of ``tenant_id`` carried (its record's, else the default tenant's, as
    the email's branding), for the unsubscribe page."""

    def name(tenant_id: str) -> str | None:
        record = tenants.tenant(tenant_id)
        return None if record is None else record.name

    return name


def create_app(
    settings: Settings,
    *,
    graph: Graph | None = None,
    clock: Clock = system_clock,
    rate_limiter: RateLimiter | None = None,
    dispatch_queue: Queue | None = None,
    webhooks_queue: Queue | None = None,
    self_test_testers: Mapping[str, ChannelTester] | None = None,
    sns_http: SnsHttp | None = None,
    did_resolver: DidResolver | None = None,
    start_now: bool = False,
    serve_metrics: bool = True,
) -> FastAPI:
    """The API app. It starts (applies the schema) in its lifespan, or here when ``start_now``: the
    Lambda handler starts it once per container and serves it without lifespan events. A start that
    cannot reach the graph is tried again (``Startup``) while the app answers 503. ``webhooks_queue``
    (the relay's) gets a job for each endpoint a request queued events for (``api/event_kick.py``)."""
    settings.require_api()
    if serve_metrics:  # closed without a token unless meant to be open, checked before anything opens
        settings.require_metrics()
    FeedbackConfig.from_settings(settings)  # webhook credentials and topics fail before anything opens
    owns_graph = graph is None
    # A caller can ask again: an unreachable graph is a 503 within about a second (graph/graph.py).
    the_graph = (
        graph
        if graph is not None
        else open_graph(
            settings,
            unavailable_wait=API_UNAVAILABLE_WAIT_SECONDS,
            tx_timeout=settings.neo4j_tx_timeout_seconds,
        )
    )
    # Shared across API processes through the graph; tests may inject their own limiter.
    own_limiter = (
        GraphRateLimiter(
            the_graph, limit_per_minute=settings.campaign_user_rate_limit_per_minute, clock=clock
        )
        if rate_limiter is None
        else None
    )
    try:  # the anonymous unsubscribe pages exist only where their token secret is configured
        tokens: UnsubscribeTokens | None = UnsubscribeTokens.from_settings(settings)
    except ConfigError:
        tokens = None
    # DID-auth (did/auth.py): did:web documents come through the egress rules, cached per process.
    resolver = did_resolver if did_resolver is not None else resolver_for(settings)
    did_auth = DidAuthenticator(
        the_graph,
        resolver,
        domain=settings.domain_name,
        default_tenant=settings.campaign_default_tenant_id,
        leeway=settings.auth_jwt_leeway_seconds,
    )
    services = Services(
        settings=settings,
        graph=the_graph,
        clock=clock,
        verifier=TokenVerifier(
            settings,
            api_keys=lambda token: verify_key(the_graph, token, now=clock()),
            did_auth=lambda token: did_auth.authenticate(token, now=clock()),
        ),
        engagement=EngagementService(the_graph, policy=lambda: Policy.of(settings, clock())),
        unsubscribe_tokens=tokens,
        secret_box=settings.secret_box(),  # a malformed CAMPAIGN_SECRETS_KEY stops the API at start
        rate_limiter=own_limiter or rate_limiter,
        dispatch_queue=dispatch_queue if dispatch_queue is not None else build_dispatch_queue(settings),
        self_test_testers=dict(
            self_test_testers if self_test_testers is not None else build_self_testers(settings, the_graph)
        ),
    )
    # Testers the app built hold their provider's connections; ones handed in are their caller's to close.
    own_testers = [] if self_test_testers is not None else list(services.self_test_testers.values())

    # Email clicks are written on the recorder's thread: the redirect never waits for them.
    clicks = ClickRecorder(the_graph)

    # The tenant records, seeded once from the tenant settings (checked here, at start, as that seed).
    tenants = tenants_of(the_graph, settings)
    tenants.seed_before_load(settings_seed(settings))

    def start() -> None:
        apply_schema(the_graph, default_tenant=settings.campaign_default_tenant_id)
        tenants.records()  # seeds the records now, not at the first request that needs them
        log.info("api.started")

    # A Lambda container has no thread between invocations: it retries when a request comes.
    startup = Startup(start, uri=settings.neo4j_uri, inline=start_now)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if not start_now:  # the first attempt's graph I/O on a thread: the loop never waits on the graph
            await run_in_threadpool(startup.begin)
        yield
        await run_in_threadpool(shut_down)  # joins threads and says goodbye to the graph: not on the loop

    def shut_down() -> None:
        startup.close()
        services.engagement.close()  # their batch threads, before the graph they use
        clicks.close()
        for tester in own_testers:
            close = getattr(tester, "close", None)
            if close is not None:
                close()
        if own_limiter is not None:
            own_limiter.close()
        if did_resolver is None:
            resolver.close()
        if owns_graph:
            the_graph.close()

    if start_now:
        startup.begin()
    app = FastAPI(title="campaign-engine", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.services = services
    app.state.click_recorder = clicks
    endpoint = TrpcEndpoint(services, ROUTERS, gate=startup.require)

    app.add_middleware(_TrpcFirst, endpoint=endpoint)
    relay_queue = webhooks_queue if webhooks_queue is not None else build_webhooks_queue(settings)
    app.add_middleware(KickAfterEvents, kick=RelayKick(graph=the_graph, queue=relay_queue))
    app.add_middleware(RequestIdMiddleware)  # outermost of ours: every route's lines carry requestId
    document: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        """Built at its first request: the schemas of every procedure cost about a quarter of a CPU-second,
        which a Lambda cold start and each in-process test app would otherwise pay for a document they
        rarely serve."""
        if not document:
            document.update(build_openapi(endpoint.procedures.values(), title=app.title, version=app.version))
        return document

    app.openapi = openapi  # type: ignore[method-assign]

    if tokens is not None:
        app.include_router(
            unsubscribe_router(graph=the_graph, tokens=tokens, clock=clock, tenant_name=_name_in(tenants))
        )
        app.include_router(web_view_router(graph=the_graph, tokens=tokens, settings=settings))
        app.include_router(clicks_router(tokens=tokens.clicks, recorder=clicks, clock=clock))
    # Provider feedback (bounces, complaints); each endpoint answers 404 until configured.
    app.include_router(webhooks_router(settings=settings, graph=the_graph, clock=clock, sns_http=sns_http))
    app.include_router(imports_router(services))
    app.include_router(exports_router(services))
    if settings.campaign_local_development:  # make dev's app origin is this API: its /m/<id> stand-in
        app.include_router(app_standin_router(graph=the_graph, tenant_id=settings.campaign_default_tenant_id))
        # make dev's OpenID provider signs in only its dev users: the admins and the granted subjects.
        app.include_router(dev_subjects_router(graph=the_graph, admins=settings.admin_profile_ids))
    # The console at /admin: static files, tRPC only; signing in with the organisation's provider if set.
    app.include_router(admin_console_router(oidc=OidcClient.from_settings(settings)))

    if serve_metrics:  # Lambda reports EMF instead: a scrape there would reach one container's counters
        app.add_api_route("/metrics", metrics_route(settings), include_in_schema=False)

    engine = engine_did(settings)  # a bad, or needed and missing, CAMPAIGN_DID_KEY stops the API at start
    if engine is not None:  # did:web's own path: LearnCard's inbox verifies the engine's bearer with it
        did_document = engine.document()  # the signing key, then a previous one while rotating
        app.add_api_route(
            "/.well-known/did.json", lambda: JSONResponse(did_document), include_in_schema=False
        )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:  # on the loop: a liveness probe never waits for a thread
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        try:
            startup.require()  # not ready before the start succeeded, whatever the graph says now
            # Fails at once when the graph is unreachable; schema_applied alone would sit in the
            # driver's transaction retries for ~30 s, longer than any readiness probe waits.
            the_graph.driver.verify_connectivity()
            ready = schema_applied(the_graph)
        except Exception:  # any failure to answer means "not ready", never a 500 page
            ready = False
        return JSONResponse(
            {"status": "ready" if ready else "unavailable"}, status_code=200 if ready else 503
        )

    return app


def metrics_route(settings: Settings) -> Callable[[Request], Response]:
    """``GET /metrics``: this process's (or, in multiprocess mode, every process's) metrics in the
    Prometheus text format, behind METRICS_BEARER_TOKEN (``require_metrics``). Not under /trpc, not in
    OpenAPI."""
    settings.require_metrics()
    registry = serving_registry(multiprocess_dir=settings.prometheus_multiproc_dir)
    token = settings.metrics_bearer_token.get_secret_value() if settings.metrics_bearer_token else None

    def metrics_endpoint(request: Request) -> Response:  # sync: the collectors run in the thread pool
        status, body, headers = scrape(
            registry,
            authorization=request.headers.get("authorization"),
            accept=request.headers.get("accept"),
            token=token,
        )
        return Response(body, status_code=status, headers=headers)

    return metrics_endpoint


def freeze_startup_heap() -> None:
    """Call once the app is built, before serving: what exists now lives as long as the process.

    CPython's full collections re-scan every tracked object; with the ~100k objects of our imports and
    the app, each took ~80 ms on the 2-core machine and stalled every request in flight (the p99 of
    getMyCampaigns). Frozen objects are skipped by the collector; garbage created later is collected
    as usual. Not for test processes, which build many apps and drop them.
    """
    gc.collect()
    gc.freeze()
