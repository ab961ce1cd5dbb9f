"""A tRPC-compatible HTTP adapter driven by one procedure registry.

Wire format (what an unmodified ``@trpc/client`` v10/v11 sends with httpLink or httpBatchLink): queries
``GET /trpc/<path>?input=<json>`` (or ``POST`` with a JSON body: the method override), mutations
``POST`` with a JSON body, batches ``/trpc/a,b?batch=1`` with ``{"0": .., "1": ..}`` answered by an array
(207 when statuses differ). An input sent as a JSON string holding it is unwrapped (``trpc_input.py``).
Every answer under ``/trpc`` is a tRPC envelope, including unknown paths, wrong methods (405 with the
``Allow`` header RFC 9110 requires) and hostile bodies: input is parsed by pydantic-core's strict JSON
parser, whose nesting depth (200) and integer size (4,300 digits) are bounded and which refuses invalid
UTF-8, lone surrogates and NaN, so every malformed input is one PARSE_ERROR, never an exception.

Handlers are plain synchronous functions ``(ctx, input) -> output``; they run in the thread pool because
the Neo4j driver is synchronous. A handler may instead be a coroutine when its work is handed to a
batching worker (``graph/coalesce.py``); it then runs on the event loop and must never block. Type
hints give the input model and the output schema.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar, get_type_hints

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from campaign_engine.api.access import PEOPLE_ONLY, Access
from campaign_engine.api.auth import Caller
from campaign_engine.api.context import TENANT_HEADER, Context, RateLimiter, Services, acting_tenant
from campaign_engine.api.errors import envelope_for, error_envelope
from campaign_engine.api.trpc_input import NO_INPUT, RequestError, request_inputs, unwrapped
from campaign_engine.domain.errors import (
    BadRequest,
    CampaignError,
    Forbidden,
    NotFound,
    bad_request_from,
)
from campaign_engine.observability import metrics
from campaign_engine.observability.request_id import REQUEST_ID_HEADER, request_id_from

__all__ = ["Procedure", "ProcedureRouter", "TrpcEndpoint", "request_context", "request_context_async"]

log = logging.getLogger(__name__)

Kind = Literal["query", "mutation"]
# A query answers GET and POST (tRPC's method override); a mutation only POST: a GET never writes.
METHODS: dict[Kind, frozenset[str]] = {"query": frozenset({"GET", "POST"}), "mutation": frozenset({"POST"})}
F = TypeVar("F", bound=Callable[..., Any])
Gate = Callable[[], None]  # raises while no procedure may run yet (a start still waiting: api/startup.py)


@dataclass(frozen=True)
class Procedure:
    path: str
    kind: Kind
    access: Access  # from its router's table (api/access.py)
    rate_limited: bool
    input_model: type[BaseModel] | None
    output_adapter: TypeAdapter[Any]
    handler: Callable[..., Any]
    summary: str
    is_async: bool  # a coroutine runs on the event loop; a plain function in the thread pool


class ProcedureRouter:
    """Collects the procedures of one namespace, e.g. ``ProcedureRouter("campaigns", ACCESS)``, where
    ``ACCESS`` is the module's table of procedure name -> access; a procedure it does not name is refused
    at import, and an entry naming no procedure when the endpoint is built."""

    def __init__(self, namespace: str, access: Mapping[str, Access]) -> None:
        self.namespace = namespace
        self.access = dict(access)
        self.procedures: list[Procedure] = []

    def query(self, name: str, *, rate_limited: bool | None = None) -> Callable[[F], F]:
        return self._register(name, "query", rate_limited)

    def mutation(self, name: str, *, rate_limited: bool | None = None) -> Callable[[F], F]:
        return self._register(name, "mutation", rate_limited)

    def check_table(self) -> None:
        """Every entry of the access table names a registered procedure (no stale, misspelt rows)."""
        stale = set(self.access) - {p.path.removeprefix(f"{self.namespace}.") for p in self.procedures}
        if stale:
            raise TypeError(f"{self.namespace}: access table names no such procedure: {sorted(stale)}")

    def _register(self, name: str, kind: Kind, rate_limited: bool | None) -> Callable[[F], F]:
        access = self.access.get(name)
        if access is None:
            raise TypeError(f"{self.namespace}.{name} has no entry in its router's access table")

        def decorate(handler: F) -> F:
            hints = get_type_hints(handler)
            input_model = hints.get("data")
            if input_model is not None and not (
                isinstance(input_model, type) and issubclass(input_model, BaseModel)
            ):
                raise TypeError(f"{handler.__name__}: 'data' must be annotated with a pydantic model")
            self.procedures.append(
                Procedure(
                    path=f"{self.namespace}.{name}",
                    kind=kind,
                    access=access,
                    # User and discovery procedures share the per-profile limit; admin ones are exempt.
                    rate_limited=(access == "user") if rate_limited is None else rate_limited,
                    input_model=input_model,
                    output_adapter=TypeAdapter(hints["return"]),
                    handler=handler,
                    summary=(handler.__doc__ or "").strip().splitlines()[0] if handler.__doc__ else "",
                    is_async=inspect.iscoroutinefunction(handler),
                )
            )
            return handler

        return decorate


MAX_BATCH = 100  # calls in one batch request; more is a client bug or abuse
_QUERY_PARAMETERS = frozenset({"input", "batch"})
# Every answer is one caller's data (their campaigns, an admin's audience): no cache may keep it.
NO_STORE = {"cache-control": "no-store"}


def _with_no_store(headers: dict[str, str] | None) -> dict[str, str]:
    return {**NO_STORE, **(headers or {})}


class TrpcEndpoint:
    """The ASGI-level handler mounted at ``/trpc/{path:path}`` for every method."""

    def __init__(
        self, services: Services, routers: Sequence[ProcedureRouter], *, gate: Gate | None = None
    ) -> None:
        self.services, self.gate = services, gate
        self.procedures: dict[str, Procedure] = {}
        for router in routers:
            router.check_table()
            for procedure in router.procedures:
                if procedure.path in self.procedures:
                    raise ValueError(f"duplicate procedure {procedure.path}")
                self.procedures[procedure.path] = procedure

    async def __call__(self, request: Request) -> Response:
        if request.method == "HEAD":
            return Response(status_code=204, headers=NO_STORE)
        raw_path = request.path_params.get("path", "")
        try:
            return await self._answer(request, raw_path)
        except Exception:  # a bug outside any one call: still an envelope, never a plain-text 500
            log.exception("trpc.internal_error path=%s", raw_path)
            status, envelope = error_envelope("INTERNAL_SERVER_ERROR", "Internal server error", path=raw_path)
            return JSONResponse(envelope, status_code=status, headers=NO_STORE)

    async def _answer(self, request: Request, raw_path: str) -> Response:
        started = time.perf_counter()
        batch = request.query_params.get("batch") in {"1", "true"}
        paths = raw_path.split(",") if batch else [raw_path]
        try:
            if request.method not in {"GET", "POST"}:
                raise RequestError("METHOD_NOT_SUPPORTED", f"Unsupported {request.method} request")
            if len(paths) > MAX_BATCH:
                raise RequestError("BAD_REQUEST", f"A batch may hold at most {MAX_BATCH} calls")
            if not _QUERY_PARAMETERS.issuperset(request.query_params.keys()):
                # What a tRPC client sends is all a call reads; anything else is a caller's mistake, not
                # something to ignore silently (the fuzzer's negative cases: an undeclared parameter).
                raise RequestError("BAD_REQUEST", "Unknown query parameter: a call reads input and batch")
            inputs = await request_inputs(request, batch=batch, count=len(paths))
        except RequestError as exc:
            # Refused before any call ran: counted once, under its one procedure or as a batch.
            label = self._label(paths[0]) if len(paths) == 1 else metrics.BATCH_PROCEDURE
            metrics.trpc_request(label, exc.code, time.perf_counter() - started)
            status, envelope = error_envelope(exc.code, exc.message, path=raw_path)
            return JSONResponse(
                envelope, status_code=status, headers=_with_no_store(self._allow(status, paths))
            )

        ctx = await request_context_async(self.services, request)
        results = [
            await self._measured(ctx, request.method, path, value)
            for path, value in zip(paths, inputs, strict=True)
        ]
        if not batch:
            status, encoded = results[0]
        else:
            statuses = {status for status, _ in results}
            status = statuses.pop() if len(statuses) == 1 else 207
            encoded = b"[" + b",".join(body for _, body in results) + b"]"
        return Response(
            encoded,
            status_code=status,
            media_type="application/json",
            headers=_with_no_store(self._allow(status, paths)),
        )

    def _allow(self, status: int, paths: Sequence[str]) -> dict[str, str] | None:
        """RFC 9110 section 15.5.6: a 405 names the methods the target supports (HEAD always answers).

        A known procedure supports its kind's method; a path naming none is answered by GET and POST
        (as NOT_FOUND), so those are the methods it "supports".
        """
        if status != 405:
            return None
        known = [self.procedures[path] for path in paths if path in self.procedures]
        methods = {method for procedure in known for method in METHODS[procedure.kind]} or {"GET", "POST"}
        return {"allow": ", ".join(sorted({"HEAD", *methods}))}

    def _label(self, path: str) -> str:
        """The metric label of ``path``: a registered procedure, else one fixed value (bounded set)."""
        return path if path in self.procedures else metrics.UNKNOWN_PROCEDURE

    async def _measured(self, ctx: Context, method: str, path: str, raw: Any) -> tuple[int, bytes]:
        """``_call``, counted and timed per call (each call of a batch on its own)."""
        started = time.perf_counter()
        status, body = await self._call(ctx, method, path, raw)
        metrics.trpc_request(self._label(path), _code_of(status, body), time.perf_counter() - started)
        return status, body

    async def _call(self, ctx: Context, method: str, path: str, raw: Any) -> tuple[int, bytes]:
        """One call's HTTP status and its JSON envelope, already encoded."""
        try:
            procedure = self._lookup(method, path)
            if self.gate is not None:
                self.gate()
            ctx = replace(ctx, procedure=path)  # the audit trail names the call, not the batch
            if procedure.is_async:
                output = await self._run_async(procedure, ctx, raw)
            else:
                output = await run_in_threadpool(self._run, procedure, ctx, raw)
        except RequestError as exc:
            return _encoded(error_envelope(exc.code, exc.message, path=path))
        except CampaignError as exc:
            return _encoded(envelope_for(exc, path=path))
        except Exception as exc:  # a bug, including a ValidationError a use case did not translate
            log.exception("trpc.internal_error path=%s", path)
            return _encoded(envelope_for(exc, path=path))
        return 200, b'{"result":{"data":' + output + b"}}"

    def _lookup(self, method: str, path: str) -> Procedure:
        procedure = self.procedures.get(path)
        if procedure is None:
            raise NotFound(f'No procedure found on path "{path}"')
        if method not in METHODS[procedure.kind]:
            raise RequestError(
                "METHOD_NOT_SUPPORTED", f"Unsupported {method}-request to {procedure.kind} procedure"
            )
        return procedure

    def _run(self, procedure: Procedure, ctx: Context, raw: Any) -> bytes:
        """A synchronous handler, in a worker thread: authorize, limit, validate, handle, encode."""
        limiter = self._authorize(procedure, ctx.require(procedure.access))
        if limiter is not None:
            limiter.hit(ctx.user().profile_id)
        return self._encode(procedure, procedure.handler(*self._arguments(procedure, ctx, raw)))

    async def _run_async(self, procedure: Procedure, ctx: Context, raw: Any) -> bytes:
        """A coroutine handler, on the event loop: the same steps, waiting without a thread.

        The call is counted before its work is issued, query or mutation: an over-limit call costs its
        count and nothing else, so a batch of refused getMyCampaigns calls reads no graph.
        """
        limiter = self._authorize(procedure, await ctx.require_async(procedure.access))  # roles: a thread
        if limiter is not None:
            await limiter.hit_async(ctx.user().profile_id)
        return self._encode(procedure, await procedure.handler(*self._arguments(procedure, ctx, raw)))

    def _authorize(self, procedure: Procedure, caller: Caller | None) -> RateLimiter | None:
        """Raises unless ``caller`` may run ``procedure``; returns the limiter their call counts against."""
        if procedure.access == "public":
            return None
        if caller is not None and caller.is_api_key and procedure.path in PEOPLE_ONLY:
            raise Forbidden(
                f"{procedure.path} needs the {procedure.access} role held by a person: "
                "an API key cannot mint keys; sign in to create one"
            )
        return self.services.rate_limiter if procedure.rate_limited else None

    @staticmethod
    def _arguments(procedure: Procedure, ctx: Context, raw: Any) -> tuple[Any, ...]:
        if procedure.input_model is None:
            if raw is not NO_INPUT and raw is not None and unwrapped(raw) is not None:
                raise BadRequest("This procedure takes no input")
            return (ctx,)
        payload = {} if raw is NO_INPUT or raw is None else unwrapped(raw)
        try:
            # Strict JSON semantics, as /openapi.json promises: 0 is no boolean and "5" no integer, while
            # a timestamp string is still read by its field. Re-encoding costs microseconds per call.
            return (ctx, procedure.input_model.model_validate_json(to_json(payload), strict=True))
        except ValidationError as exc:
            raise bad_request_from(exc) from exc

    @staticmethod
    def _encode(procedure: Procedure, result: Any) -> bytes:
        # warnings="error": output that does not match the declared type is a bug (500), never sent.
        # Encoded to JSON by pydantic-core in one step (several times faster than dump + json.dumps).
        return procedure.output_adapter.dump_json(result, by_alias=True, warnings="error")


def request_context(services: Services, request: Request) -> Context:
    """The context of one HTTP request: its verified caller (or the error that refused its credential),
    the tenant the credential names and the request id. Every authenticated route builds it here, tRPC
    or not, so the credential rules are one."""
    try:
        caller = services.verifier.verify(request.headers.get("authorization"))
        auth_error: CampaignError | None = None
    except CampaignError as exc:
        caller, auth_error = None, exc
    # The verified credential names the tenant (the console's pick only where acting_tenant allows);
    # without one, the default tenant, the one data made before tenants belongs to.
    tenant, picked, refusal = acting_tenant(caller, request.headers.get(TENANT_HEADER))
    return Context(
        services=services,
        caller=caller,
        tenant_id=tenant or services.settings.campaign_default_tenant_id,
        auth_error=auth_error or refusal,
        request_id=_request_id(request),
        tenant_picked=picked,
    )


async def request_context_async(services: Services, request: Request) -> Context:
    """``request_context`` off the event loop when verifying may wait (a key set, an API key's record and
    ``lastUsedAt``, a DID): a slow graph never stalls the loop. An HS256 check stays on it."""
    if services.verifier.may_block(request.headers.get("authorization")):
        return await run_in_threadpool(request_context, services, request)
    return request_context(services, request)


def _request_id(request: Request) -> str:
    """The id ``RequestIdMiddleware`` put in the headers (the one the logs carry) for the audit trail;
    without the middleware (an endpoint mounted alone) the same rule draws one here."""
    given = request.headers.get(REQUEST_ID_HEADER)
    return request_id_from(None if given is None else given.encode("latin-1"))


def _code_of(status: int, body: bytes) -> str:
    """``OK``, or the tRPC code of an error envelope (read back only for errors, which are rare)."""
    return "OK" if status == 200 else str(json.loads(body)["error"]["data"]["code"])


def _encoded(envelope: tuple[int, Any]) -> tuple[int, bytes]:
    status, body = envelope
    return status, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
