"""The worker's ``/metrics`` server: concurrent, each request head bounded in time.

``prometheus_client.start_http_server`` cannot check a bearer token and the worker runs no event loop an
ASGI app could share, so this is a stdlib WSGI server with ``metrics_serving.scrape``'s check in front.
Each connection gets its own thread (at most ``MAX_CONNECTIONS``; past that a connection is closed at
once), so a slow or silent client holds only its own: its request line and headers must arrive within
``HEAD_TIMEOUT_SECONDS`` in all, however slowly it trickles them. The registry is still collected on one
thread: the local queue keeps a SQLite connection per thread that asks it, so a thread per scrape would
leave a connection per scrape behind.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry

from campaign_engine.observability.metrics_serving import scrape

__all__ = ["HEAD_TIMEOUT_SECONDS", "MAX_CONNECTIONS", "MetricsServer", "start_metrics_server"]

HEAD_TIMEOUT_SECONDS = 5.0
MAX_CONNECTIONS = 16


class _DeadlineSocketReader(io.RawIOBase):
    """Reads a socket; until ``deadline`` is cleared every read waits at most what is left of it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self.deadline: float | None = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request head did not arrive in time")
            self._sock.settimeout(remaining)
        return self._sock.recv_into(buffer)


class _Handler(WSGIRequestHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        limit = self.server.head_timeout
        self._reader = _DeadlineSocketReader(self.connection, time.monotonic() + limit)
        self.rfile = io.BufferedReader(self._reader)

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the request line and every header have been read
        self._reader.deadline = None
        self.connection.settimeout(self.server.head_timeout)  # a stalled reader of the answer, too
        return parsed

    def handle(self) -> None:
        try:
            super().handle()
        except TimeoutError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: the Authorization header must never reach one anyway."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False

    head_timeout = HEAD_TIMEOUT_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: refused at once rather than queued
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


@dataclass
class MetricsServer:
    """The serving thread and the collecting one; ``close`` stops both."""

    server: WSGIServer
    thread: threading.Thread
    collector: ThreadPoolExecutor

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
        self.collector.shutdown(wait=False, cancel_futures=True)


def start_metrics_server(
    registry: CollectorRegistry,
    *,
    host: str,
    port: int,
    token: str | None,
    head_timeout: float = HEAD_TIMEOUT_SECONDS,
    ready: Callable[[], bool] | None = None,
) -> MetricsServer:
    """Serve ``GET /metrics`` from ``registry`` (the bearer check of ``scrape``) and, given ``ready``,
    ``GET /readyz`` (200 or 503, no token: it says no more than a probe can see); other paths are 404."""
    collector = ThreadPoolExecutor(1, thread_name_prefix="metrics-collect")

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Sequence[bytes]:
        if ready is not None and environ.get("PATH_INFO") == "/readyz":
            up = ready()
            start_response(
                "200 OK" if up else "503 Service Unavailable", [("content-type", "application/json")]
            )
            return [b'{"status":"ready"}' if up else b'{"status":"unavailable"}']
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("content-type", "text/plain")])
            return [b"not found\n"]
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("allow", "GET, HEAD")])
            return [b""]
        status, body, headers = collector.submit(
            scrape,
            registry,
            authorization=environ.get("HTTP_AUTHORIZATION"),
            accept=environ.get("HTTP_ACCEPT"),
            token=token,
        ).result()
        start_response("200 OK" if status == 200 else "401 Unauthorized", list(headers.items()))
        return [body]

    server = make_server(host, port, app, _Server, handler_class=_Handler)
    server.head_timeout = head_timeout
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return MetricsServer(server, thread, collector)
