"""The chaos run's fault-injecting fronts, threads of the chaos process between the worker and the real
receivers: ``WebhookFront`` before the reference inbox (answers 503, or hangs, for a while) and
``SmtpFront`` before the SMTP catcher (throttles with 451, or fails: cuts every session and refuses new
ones with 421). Passing through, each forwards to the real process unchanged, so what the receivers
store is still the only record the checks trust."""

from __future__ import annotations

import asyncio
import http.client
import smtplib
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from bench._support import free_port

__all__ = ["SmtpFront", "WebhookFront"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class _Mode:
    """A fault mode with its end: ``mode()`` is ``"pass"`` once ``until`` has passed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mode, self._until = "pass", 0.0

    def set(self, mode: str, seconds: float) -> None:
        with self._lock:
            self._mode, self._until = mode, time.monotonic() + seconds

    def get(self) -> tuple[str, float]:
        """The mode now and the seconds it has left."""
        with self._lock:
            left = self._until - time.monotonic()
            return (self._mode, left) if left > 0 else ("pass", 0.0)


class WebhookFront:
    """HTTP/1.1 passthrough to ``upstream`` (host, port). ``fail(seconds)``: every POST answers 503;
    ``hang(seconds)``: every POST is held until the window ends (longer than the worker's timeout), then
    forwarded, so the inbox stores a notification whose sender already gave up on it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.mode = _Mode()
        self.upstream = upstream
        self.requests = 0
        self._upstreams: list[http.client.HTTPConnection] = []  # every thread's, closed at stop
        local = threading.local()
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                front.requests += 1
                mode, left = front.mode.get()
                if mode == "fail":
                    self._answer(503, b'{"error":"chaos: receiver unavailable"}', "application/json")
                    return
                if mode == "hang":
                    time.sleep(left)
                status, content, media = front._forward(local, self.path, dict(self.headers), body)
                self._answer(status, content, media)

            do_GET = do_POST

            def _answer(self, status: int, content: bytes, media: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", media)
                    self.send_header("content-length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):  # the worker gave up on a hung answer
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="webhook-front", daemon=True)

    def _forward(
        self, local: threading.local, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, str]:
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
        for attempt in range(2):  # a kept-alive connection the inbox closed is reopened once
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection(*self.upstream, timeout=30)
                self._upstreams.append(conn)
            try:
                conn.request("POST" if body else "GET", path, body=body, headers=sent)
                answer = conn.getresponse()
                return answer.status, answer.read(), answer.getheader("content-type") or "text/plain"
            except (OSError, http.client.HTTPException):
                conn.close()
                local.conn = None
                if attempt:
                    return 502, b'{"error":"chaos front: inbox unreachable"}', "application/json"
        raise AssertionError("unreachable")

    def start(self) -> WebhookFront:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for conn in self._upstreams:
            conn.close()


class SmtpFront:
    """An SMTP server relaying every message to the catcher at ``upstream`` before it answers 250, so a
    250 means the catcher has the file. ``throttle(seconds)``: RCPT answers 451 (the provider's
    ``throttled``, retried later); ``fail(seconds)``: every open session is cut at once, wherever it is
    (a message whose text was sent and not answered is the provider's ``uncertain``), and every command
    of a new one answers 421."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.mode = _Mode()
        self.upstream = upstream
        self._local = threading.local()
        self._upstreams: list[smtplib.SMTP] = []  # every relay thread's, closed at stop
        self._relay = ThreadPoolExecutor(max_workers=8, thread_name_prefix="smtp-front-relay")
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self.port = free_port()  # aiosmtpd's Controller connects to its own port to see it is up: not 0
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpFront:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
        self._relay.shutdown(wait=True, cancel_futures=True)
        for conn in self._upstreams:
            conn.close()

    def fail(self, seconds: float) -> None:
        self.mode.set("fail", seconds)
        loop = self.controller.loop
        for server in list(self._sessions):
            transport = getattr(server, "transport", None)
            if transport is not None:
                loop.call_soon_threadsafe(transport.abort)

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        self._sessions.add(server)
        session.host_name = hostname
        if self.mode.get()[0] == "fail":
            return ["421 4.3.2 chaos: service not available"]
        return responses

    async def handle_MAIL(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.mode.get()[0] == "fail":
            return "421 4.3.2 chaos: service not available"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        mode = self.mode.get()[0]
        if mode == "fail":
            return "421 4.3.2 chaos: service not available"
        if mode == "throttle":
            return "451 4.7.1 chaos: throttled, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content: bytes = envelope.original_content or envelope.content
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(
                self._relay, self._send, envelope.mail_from, list(envelope.rcpt_tos), content
            )
        except (OSError, smtplib.SMTPException):
            return "451 4.3.0 chaos front: the catcher did not take it"
        return "250 Message accepted for delivery"

    def _send(self, sender: str, recipients: list[str], content: bytes) -> None:
        for attempt in range(2):  # a pooled connection the catcher closed is reopened once
            conn: smtplib.SMTP | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = smtplib.SMTP(*self.upstream, timeout=30)
                self._local.conn = conn
                self._upstreams.append(conn)
            try:
                conn.sendmail(sender, recipients, content)
                return
            except smtplib.SMTPServerDisconnected:
                self._local.conn = None
                if attempt:
                    raise
