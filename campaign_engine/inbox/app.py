"""The reference inbox receiver: what ``make dev`` and the end-to-end tests deliver to.

It is also the model for third-party receivers (see ``docs/receiver-contract.md``): verify the Standard
Webhooks signature over the *raw* body, parse leniently, store durably with a deduplication key, and
only then answer ``{"sent": true}`` — for a duplicate too, because the sender must stop retrying it.
A refusal (bad signature, bad payload) is a 400 with ``{"sent": false}``, which the worker reads as a
definite negative rather than retrying a request that can never succeed as sent.

The send endpoint does only what the contract needs (cap, verify, parse, store) and awaits the store's
group commit directly on the event loop: no thread hop per request, and the answer leaves only after the
COMMIT holding its row returned (see ``InboxStore``). Per-request logs are DEBUG: the row is the record.
It is a bare ASGI handler in front of the FastAPI app (``_SendEndpoint``): routing, the Request object,
the middleware stack and the response classes cost more CPU per POST than verifying and storing, and
this endpoint is the reference receiver's whole hot path. Everything else is served by FastAPI.

A POST with an ``Authorization`` header and no Standard Webhooks signature is LearnCard's format
instead (an ``LCNNotification`` with the sender's DID-auth bearer, answered ``true``), accepted by
``inbox/learncard.py`` into the same store, so the listing shows both; the Standard Webhooks path pays
one header lookup for it.

The listing endpoint is unauthenticated: this receiver is for local runs and tests on loopback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from campaign_engine.domain.notification import AnnouncementPayload
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.domain.webhook_signature import DEFAULT_TOLERANCE_SECONDS, secret_bytes, verify
from campaign_engine.inbox.learncard import LearnCardAcceptance, SenderCheck
from campaign_engine.inbox.store import InboxStore

__all__ = ["MAX_BODY_BYTES", "create_inbox_app", "serve_inbox"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024
SEND_PATH = "/api/notifications/send"
_SENT = b'{"sent":true}'
_HEADERS = (b"webhook-id", b"webhook-timestamp", b"webhook-signature", b"authorization")

_Accept = Callable[[bytes | None, dict[bytes, bytes]], Awaitable[tuple[int, bytes]]]


def create_inbox_app(
    *,
    db_path: Path,
    secret: str,
    clock: Clock = system_clock,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    store: InboxStore | None = None,
    learncard: SenderCheck | None = None,
) -> FastAPI:
    """Open (or create) the inbox at ``db_path``; the store closes when the app shuts down.

    ``store`` (tests) replaces the one opened at ``db_path``; the app closes it all the same.
    ``learncard``: whom LearnCard-format POSTs are accepted from (None: that format is refused).
    """
    secret_bytes(secret)  # fail at start on an empty or malformed secret, not at the first POST
    if store is None:
        store = InboxStore(db_path, clock=clock)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()
        if learncard is not None:
            learncard.close()

    app = FastAPI(title="campaign-engine inbox", lifespan=lifespan, docs_url=None, redoc_url=None)
    lcn = None if learncard is None else LearnCardAcceptance(learncard, store)

    async def accept(body: bytes | None, headers: dict[bytes, bytes]) -> tuple[int, bytes]:
        """One POST: ``body`` is None when it exceeded the cap. Returns (status, JSON answer)."""
        if body is None:
            return _refuse(413, "payload too large")
        if lcn is not None and b"authorization" in headers and b"webhook-signature" not in headers:
            return await lcn.accept(body, headers[b"authorization"])
        if not verify(
            secret,
            msg_id=headers.get(b"webhook-id", b"").decode("latin-1"),
            timestamp=headers.get(b"webhook-timestamp", b"").decode("latin-1"),
            signature_header=headers.get(b"webhook-signature", b"").decode("latin-1"),
            body=body,
            now=int(clock().timestamp()),
            tolerance=tolerance,
        ):
            log.warning("inbox.rejected reason=signature")
            return _refuse(400, "invalid signature")
        try:
            payload = AnnouncementPayload.model_validate_json(body)
        except ValidationError as exc:
            log.warning("inbox.rejected reason=payload")
            # loc + msg only: pydantic's "input" would echo the sender's data back.
            issues = [{"path": list(e["loc"]), "message": e["msg"]} for e in exc.errors()]
            return _refuse(400, "invalid payload", issues=issues)
        is_new = await asyncio.wrap_future(store.submit(payload))  # resolves after the COMMIT
        if log.isEnabledFor(logging.DEBUG):
            meta = payload.metadata
            log.debug(
                "inbox.stored",
                extra={
                    "campaignId": meta.campaign_id,
                    "dispatchId": meta.dispatch_id,
                    "deliveryId": meta.delivery_id,
                    "profileId": payload.recipient,
                    "duplicate": not is_new,
                },
            )
        return 200, _SENT

    app.add_middleware(_SendEndpoint, accept=accept)

    @app.get("/api/notifications")
    async def list_notifications(
        profile_id: Annotated[str, Query(alias="profileId", min_length=1, max_length=200)],
    ) -> dict[str, Any]:
        items = await run_in_threadpool(store.list_for, profile_id)
        return {"profileId": profile_id, "notifications": items}

    @app.get("/healthz")
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        """Ready once the store is open, which the app did when built: the inbox reads no graph, so it
        starts and serves while Neo4j is away, as the same probe of every process can see."""
        return {"status": "ready"}

    return app


def serve_inbox(
    *, host: str, port: int, db_path: Path, secret: str, learncard: SenderCheck | None = None
) -> None:
    """Run the inbox in the foreground until interrupted (``campaign-engine inbox``)."""
    import uvicorn  # imported here: only this entry point needs the server

    # No access log: query strings name profiles. log_config=None: the process's own logging
    # (configured by the CLI: JSON lines, redacted) renders uvicorn's records too.
    uvicorn.run(
        create_inbox_app(db_path=db_path, secret=secret, learncard=learncard),
        host=host,
        port=port,
        access_log=False,
        log_config=None,
    )


class _SendEndpoint:
    """``POST /api/notifications/send`` as a bare ASGI handler; every other request goes on to FastAPI."""

    def __init__(self, app: ASGIApp, *, accept: _Accept) -> None:
        self._app = app
        self._accept = accept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != SEND_PATH or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        try:
            body = await _read_capped(receive, MAX_BODY_BYTES)
        except _Disconnected:
            return  # the client went away: nothing to answer
        headers = {name: value for name, value in scope["headers"] if name in _HEADERS}
        status, content = await self._accept(body, headers)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})


class _Disconnected(Exception):
    pass


async def _read_capped(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None once it exceeds ``limit``."""
    received = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        received += message.get("body", b"")
        if len(received) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(received)


def _refuse(status: int, error: str, *, issues: list[dict[str, Any]] | None = None) -> tuple[int, bytes]:
    content: dict[str, Any] = {"sent": False, "error": error}
    if issues is not None:
        content["issues"] = issues
    return status, json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
