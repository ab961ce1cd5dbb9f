"""A real HTTP server on loopback that speaks the slice of Postmark's API we use, with scriptable faults.

It serves ``GET /message-streams/{id}`` and ``POST /email/batch`` like Postmark (server token header,
per-message results with ``ErrorCode``/``MessageID``, 422 + ErrorCode 410 above 500 messages), and lets a
test script the next batch calls: 429 with Retry-After, 500, a delay (client timeouts), an arbitrary
answer, or dropping the connection after reading the whole request. Per-address error codes turn
individual messages into failures inside a 200. Every accepted message is recorded.

Use as a context manager (or ``start``/``stop``); uvicorn runs in a daemon thread on a free port.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

__all__ = ["PostmarkStandin", "ScriptedAnswer"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_ERROR_TEXT = {
    300: "Invalid email request: the 'To' address is not a valid mailbox.",
    406: "You tried to send to recipient(s) that have been marked as inactive.",
    429: "Rate limit exceeded.",
}


@dataclass
class ScriptedAnswer:
    """What the next batch call does instead of the normal answer."""

    kind: str  # "normal" | "status" | "drop" | "delay" | "hold"
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    gate: threading.Event | None = None


class PostmarkStandin:
    def __init__(
        self,
        *,
        token: str = "test-server-token",
        streams: dict[str, str] | None = None,
    ) -> None:
        self.token = token
        self.streams = dict(streams or {"broadcast": "Broadcasts", "outbound": "Transactional"})
        self.error_codes: dict[str, int] = {}
        """Lower-cased recipient address -> Postmark ErrorCode answered for that message."""
        self.accepted: list[dict[str, Any]] = []
        self.accepted_at: list[float] = []
        """When each of ``accepted`` was (``time.time()``), in the same order."""
        self.batch_calls = 0
        self.stream_calls = 0
        self._script: list[ScriptedAnswer] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.url = ""
        self._fastapi = _build_app(self)

    # --- scripting ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget scripts, error codes and records, so one server can serve many tests."""
        with self._lock:
            self._script.clear()
            self.error_codes = {}
            self.accepted = []
            self.accepted_at = []
            self.batch_calls = 0
            self.stream_calls = 0

    def pass_next(self, count: int = 1) -> None:
        """Answer the next calls normally (to script a fault for a later call)."""
        self._push(count, ScriptedAnswer("normal"))

    def throttle_next(self, count: int = 1, *, retry_after: str | None = "2") -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        body = {"ErrorCode": 429, "Message": "Rate limit exceeded."}
        self._push(count, ScriptedAnswer("status", status=429, body=body, headers=headers))

    def fail_next(self, count: int = 1, *, status: int = 500) -> None:
        self._push(count, ScriptedAnswer("status", status=status, body={"ErrorCode": 0, "Message": "error"}))

    def answer_next(self, *, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._push(1, ScriptedAnswer("status", status=status, body=body, headers=headers or {}))

    def drop_next(self, count: int = 1) -> None:
        """Read the whole request, then reset the connection without answering."""
        self._push(count, ScriptedAnswer("drop"))

    def delay_next(self, seconds: float, count: int = 1) -> None:
        """Process normally (messages are accepted and recorded) but answer late."""
        self._push(count, ScriptedAnswer("delay", delay_seconds=seconds))

    def hold_next(self) -> threading.Event:
        """Accept and record the next batch's messages, but answer only once the returned event is set
        (a test acts between the provider's acceptance and the sender learning of it)."""
        gate = threading.Event()
        self._push(1, ScriptedAnswer("hold", gate=gate))
        return gate

    def _push(self, count: int, answer: ScriptedAnswer) -> None:
        with self._lock:
            self._script.extend([answer] * count)

    def _pop(self) -> ScriptedAnswer | None:
        with self._lock:
            self.batch_calls += 1
            return self._script.pop(0) if self._script else None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> PostmarkStandin:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            self._asgi,
            log_level="warning",
            http="h11",
            ws="none",
            lifespan="off",
            access_log=False,
            interface="asgi3",
            proxy_headers=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("Postmark stand-in did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> PostmarkStandin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- the server ----------------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Outermost ASGI layer: the only place that still holds uvicorn's own ``send`` (and its socket)."""
        if scope["type"] == "http" and scope["path"] == "/email/batch" and scope["method"] == "POST":
            answer = self._pop()
            if answer is not None and answer.kind == "drop":
                await _drain(receive)
                transport = getattr(getattr(send, "__self__", None), "transport", None)
                if transport is None:
                    raise RuntimeError("cannot reach the connection to drop it")
                transport.abort()
                await receive()  # returns http.disconnect once the connection is gone
                return
            scope.setdefault("state", {})["scripted"] = answer
        await self._fastapi(scope, receive, send)


def _build_app(standin: PostmarkStandin) -> FastAPI:
    app = FastAPI()

    def authorised(request: Request) -> bool:
        return request.headers.get("X-Postmark-Server-Token") == standin.token

    @app.get("/message-streams/{stream_id}")
    def get_stream(stream_id: str, request: Request) -> Response:
        standin.stream_calls += 1
        if not authorised(request):
            return JSONResponse({"ErrorCode": 10, "Message": "Bad or missing API token."}, status_code=401)
        kind = standin.streams.get(stream_id)
        if kind is None:
            return JSONResponse({"ErrorCode": 1226, "Message": "The message stream was not found."}, 404)
        return JSONResponse(
            {
                "ID": stream_id,
                "ServerID": 1,
                "Name": stream_id,
                "Description": None,
                "MessageStreamType": kind,
                "CreatedAt": "2024-01-01T00:00:00-05:00",
                "UpdatedAt": None,
                "ArchivedAt": None,
            }
        )

    @app.post("/email/batch")
    async def send_batch(request: Request) -> Response:
        answer: ScriptedAnswer | None = request.scope.get("state", {}).get("scripted")
        raw = await request.body()
        if answer is not None and answer.kind == "status":
            return _json_response(answer.body, answer.status, answer.headers)
        if not authorised(request):
            return JSONResponse({"ErrorCode": 10, "Message": "Bad or missing API token."}, status_code=401)
        try:
            messages = json.loads(raw)
        except ValueError:
            return JSONResponse({"ErrorCode": 402, "Message": "Received invalid JSON input."}, 422)
        if not isinstance(messages, list):
            return JSONResponse({"ErrorCode": 403, "Message": "Incompatible JSON input."}, 422)
        if len(messages) > 500:
            return JSONResponse({"ErrorCode": 410, "Message": "Too many batch messages."}, 422)
        results = [_result_for(standin, m) for m in messages]
        if answer is not None and answer.kind == "delay":
            await asyncio.sleep(answer.delay_seconds)
        if answer is not None and answer.gate is not None:
            await asyncio.to_thread(answer.gate.wait, 60)
        return JSONResponse(results)

    return app


def _result_for(standin: PostmarkStandin, message: Any) -> dict[str, Any]:
    to = str(message.get("To", "")) if isinstance(message, dict) else ""
    if not isinstance(message, dict) or not to or not message.get("From"):
        return {"ErrorCode": 300, "Message": "Invalid email request."}
    if not (message.get("HtmlBody") or message.get("TextBody")):
        return {"ErrorCode": 300, "Message": "Provide either email TextBody or HtmlBody or both."}
    stream = message.get("MessageStream", "outbound")
    if stream not in standin.streams:
        return {"ErrorCode": 1235, "Message": "The message stream was not found."}
    code = standin.error_codes.get(to.lower())
    if code is not None:
        return {"ErrorCode": code, "Message": _ERROR_TEXT.get(code, "Error.")}
    message_id = str(uuid.uuid4())
    with standin._lock:
        standin.accepted.append({**message, "MessageID": message_id})
        standin.accepted_at.append(time.time())
    return {
        "To": to,
        "SubmittedAt": "2024-01-01T00:00:00.0000000-05:00",
        "MessageID": message_id,
        "ErrorCode": 0,
        "Message": "OK",
    }


def _json_response(body: Any, status: int, headers: dict[str, str]) -> Response:
    if isinstance(body, str | bytes):
        return Response(body, status_code=status, headers=headers, media_type="text/plain")
    return JSONResponse(body, status_code=status, headers=headers)


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
