"""What the safe-transport tests share: a controllable resolver, the two faces every test runs through
(``AsyncSafeTransport.post`` and the ``WebhookPoster`` the worker posts through), the expectation
``fails`` naming both, and a real loopback HTTP(S) server that records what it saw."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import httpx
import pytest

from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.sender import (
    Answered,
    Blocked,
    Outgoing,
    PostResult,
)
from campaign_engine.egress.policy import DestinationRules, EgressBlocked
from campaign_engine.egress.transport import (
    MAX_RESPONSE_BYTES,
    AsyncSafeTransport,
    make_webhook_transport,
)

SECRET = "whsec_cG9zdGVyLXRlc3Qtc2VjcmV0LTAxMjM0NTY3ODlhYmM="  # Standard Webhooks: whsec_ + base64


# 10 MB of zeros, compressed once at import: compressing per request took longer than the client's
# timeout on a loaded 2-core machine, and the test then measured the server's speed, not the cap.
_GZIP_BOMB = gzip.compress(b"0" * 10_000_000)


class DictResolver:
    """host -> answers; an unknown host fails like NXDOMAIN. Records every call."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


@dataclass(frozen=True)
class Reply:
    status_code: int
    content: bytes
    headers: httpx.Headers | None
    """None through the sender, which hands back only the content type."""

    def json(self) -> Any:
        return json.loads(self.content)


class NotAnswered(Exception):
    """The sender face's way of failing a ``post``: the result that was not ``Answered``."""

    def __init__(self, result: PostResult) -> None:
        super().__init__(repr(result))
        self.result = result


class Face(Protocol):
    def post(self, url: str, *, json: Any = None, msg_id: str = "d-1") -> Reply: ...

    def idle(self, seconds: float) -> None:
        """Let ``seconds`` pass with the transport's event loop running (its timers fire)."""
        ...

    def __enter__(self) -> Face: ...

    def __exit__(self, *_: object) -> None: ...


def _body(payload: Any) -> bytes:
    return b"" if payload is None else json.dumps(payload).encode()


class PostFace:
    """``AsyncSafeTransport.post`` driven from sync test code on a private event loop."""

    def __init__(self, transport: AsyncSafeTransport, *, timeout: float) -> None:
        self._transport = transport
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()

    def post(self, url: str, *, json: Any = None, msg_id: str = "d-1") -> Reply:
        sent = [("content-type", "application/json"), ("webhook-id", msg_id)]
        status, headers, content = self._loop.run_until_complete(
            self._transport.post(url, _body(json), sent, timeout=self._timeout)
        )
        return Reply(status, content, httpx.Headers(headers))

    def idle(self, seconds: float) -> None:
        self._loop.run_until_complete(asyncio.sleep(seconds))

    def __enter__(self) -> PostFace:
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.run_until_complete(self._transport.aclose())
        # Closing a transport completes on a later loop iteration (e.g. after a failed TLS handshake).
        self._loop.run_until_complete(asyncio.sleep(0.05))
        self._loop.close()


class SenderFace:
    """``WebhookPoster`` (signing, private loop, result values) over the same transport, one item a call."""

    def __init__(self, transport: AsyncSafeTransport, *, timeout: float) -> None:
        self._poster = WebhookPoster(transport, secret=SECRET, concurrency=4, timeout=timeout)

    def post(self, url: str, *, json: Any = None, msg_id: str = "d-1") -> Reply:
        [result] = self._poster.post_all([Outgoing(url=url, body=_body(json), msg_id=msg_id)])
        if not isinstance(result, Answered):
            raise NotAnswered(result)
        return Reply(result.status_code, result.body, None)

    def idle(self, seconds: float) -> None:
        time.sleep(seconds)  # the poster's loop runs in its own thread

    def __enter__(self) -> SenderFace:
        return self

    def __exit__(self, *_: object) -> None:
        self._poster.close()


def _over(face: str, transport: AsyncSafeTransport, *, timeout: float) -> Face:
    return PostFace(transport, timeout=timeout) if face == "post" else SenderFace(transport, timeout=timeout)


# Local development's destination rules (http, any port): these tests' receivers are loopback servers.
LOOPBACK = DestinationRules.of(local_development=True)


def _webhook_client(
    face: str,
    *,
    allow_private: bool,
    timeout: float,
    resolver: DictResolver,
    rules: DestinationRules = LOOPBACK,
) -> Face:
    """The production transport (``make_webhook_transport``) behind ``face``."""
    transport = make_webhook_transport(allow_private=allow_private, rules=rules, resolver=resolver)
    return _over(face, transport, timeout=timeout)


def _transport_client(
    face: str, *, resolver: DictResolver, verify: ssl.SSLContext | bool = True, timeout: float = 2
) -> Face:
    """A transport built directly (allow_private, custom CA) behind ``face``."""
    transport = AsyncSafeTransport(allow_private=True, rules=LOOPBACK, resolver=resolver, verify=verify)
    return _over(face, transport, timeout=timeout)


def _client(
    face: str, answers: dict[str, list[str]], *, allow_private: bool = False
) -> tuple[Face, DictResolver]:
    resolver = DictResolver(answers)
    return _webhook_client(face, allow_private=allow_private, timeout=5, resolver=resolver), resolver


@dataclass
class Caught:
    value: object = None
    """The transport's exception (post face) or the sender's result (sender face)."""


@contextmanager
def fails(
    face: str, *, raises: type[Exception], result: type[object], match: str | None = None
) -> Iterator[Caught]:
    """The block must fail: ``post`` raising ``raises``, the sender answering a ``result``."""
    caught = Caught()
    if face == "post":
        with pytest.raises(raises, match=match) as info:
            yield caught
        caught.value = info.value
        return
    with pytest.raises(NotAnswered) as not_answered:
        yield caught
    caught.value = not_answered.value.result
    assert isinstance(caught.value, result), caught.value
    if match is not None:
        assert re.search(match, str(getattr(caught.value, "reason", ""))), caught.value


def blocked(face: str, match: str | None = None) -> Any:
    return fails(face, raises=EgressBlocked, result=Blocked, match=match)


# --- a real loopback server ---------------------------------------------------------------------


@dataclass
class Seen:
    hosts: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    connections: int = 0
    sni: list[str | None] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is observable
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen.hosts.append(self.headers["Host"])
        self.server.seen.paths.append(self.path)
        if getattr(self, "drop_next", False):  # the idle close racing the client's next request
            self.close_connection = True
            return
        if self.path == "/then-drop":  # answers as kept alive, then drops the next request unanswered
            self._answer(200, b"true")
            self.drop_next = True
        elif self.path == "/redirect":
            self._answer(302, b"", extra={"Location": "http://127.0.0.1:1/elsewhere"})
        elif self.path == "/big":
            self._answer(200, b"x" * (MAX_RESPONSE_BYTES + 1))
        elif self.path == "/exactly-cap":
            self._answer(200, b"x" * MAX_RESPONSE_BYTES)
        elif self.path == "/gzip":
            self._answer(200, _GZIP_BOMB, extra={"Content-Encoding": "gzip"})
        elif self.path == "/close":
            self._answer(200, b"true", extra={"Connection": "close"})
            self.close_connection = True
        elif self.path == "/quiet-close":  # looks kept alive, then the server drops the idle socket
            self._answer(200, b"true")
            self.close_connection = True
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b'{"sent":', b" true}"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/until-close":  # no length: the body ends when the connection does
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"sent": true}')
            self.close_connection = True
        else:
            self._answer(200, json.dumps({"ok": True}).encode())

    def _answer(self, status: int, body: bytes, *, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen = Seen()
        self.tls = tls

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        self.seen.connections += 1
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, address


def _serve(server: _Server) -> Iterator[_Server]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _url(server: _Server, path: str, host: str = "inbox.test", scheme: str = "http") -> str:
    return f"{scheme}://{host}:{server.server_address[1]}{path}"
