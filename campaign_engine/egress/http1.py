"""One HTTP/1.1 client connection for webhook POSTs: the wire protocol, and nothing about policy.

``transport.AsyncSafeTransport`` opens these connections (to addresses ``policy.py`` validated), pools
them and decides reuse; this module only speaks HTTP/1.1 on one of them: the request goes out in one
write, httptools' C parser reads the answer, and the body is capped while it arrives (the rest is
dropped, ``ResponseTooLarge``), so an answer is never streamed or buffered beyond the cap. The head is
capped too, like common servers cap requests (``HeadersTooLarge``: more than ``MAX_HEADER_BYTES`` before
the headers end, or more than ``MAX_HEADERS`` of them), so a receiver that streams headers forever
cannot hold the connection and memory until the timeout. An answer over either cap is unreadable.

Two flags carry what the pool needs to know: ``reusable`` (a complete answer that allows keep-alive,
and nothing has happened on the idle socket since) and ``heard`` (some byte of an answer arrived,
so a broken exchange must not be retried as "the server closed an idle connection").
``Content-Encoding`` is dropped from the answer's headers: the body is handed back as received, never
decoded, because a decoded size cannot be capped.
"""

from __future__ import annotations

import asyncio
from typing import cast

import httptools
import httpx

__all__ = ["MAX_HEADERS", "MAX_HEADER_BYTES", "HeadersTooLarge", "Http1Connection", "ResponseTooLarge"]

MAX_HEADER_BYTES = 16 * 1024  # status line and headers, interim (1xx) answers included
MAX_HEADERS = 100


class ResponseTooLarge(httpx.TransportError):
    """The receiver answered with more than the cap (``MAX_RESPONSE_BYTES``); the answer is unreadable."""


class HeadersTooLarge(ResponseTooLarge):
    """The head is over ``MAX_HEADER_BYTES`` or ``MAX_HEADERS``: unreadable, and the connection is closed."""


class Http1Connection(asyncio.Protocol):
    """One HTTP/1.1 client connection: one request at a time, answer parsed by httptools."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body = bytearray()
        self._limit = 0  # set by each exchange
        self._length_known = False
        self._complete = False
        self._error: Exception | None = None
        self._overflow: ResponseTooLarge | None = None  # over a cap: reported once feed_data returns
        self._head_open = False  # the final answer's headers have not ended yet
        self._head_bytes = 0  # bytes received while ``_head_open``
        self._header_bytes = 0  # names and values of ``_headers``, however the head was split
        self._keep_alive = False
        self.reusable = False
        self.idle_since = 0.0
        self.heard = False  # any byte of an answer arrived during the current exchange
        # Done once the connection is gone (a TLS close needs a round trip): lets an owner wait for it
        # before closing the event loop. Protocols are only built by ``loop.create_connection``.
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def exchange(
        self, head: bytes, body: bytes, *, timeout: float | None, limit: int
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        transport = self._transport
        if transport is None or transport.is_closing():
            raise httpx.RemoteProtocolError("connection closed before the request was sent")
        self.reusable = False
        self._limit = limit
        self._status, self._headers, self._body = 0, [], bytearray()
        self._complete, self._length_known, self._error, self._overflow = False, False, None, None
        self._head_open, self._head_bytes, self._header_bytes = True, 0, 0
        self.heard = False
        self._waiter = asyncio.get_running_loop().create_future()
        transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            transport.write(body)
        try:
            async with asyncio.timeout(timeout):
                await self._waiter
        except TimeoutError as exc:
            raise httpx.ReadTimeout("timed out waiting for the answer") from exc
        finally:
            self._waiter = None
        if self._error is not None:
            raise self._error
        # Keep the connection only for a complete answer that allows it.
        self.reusable = self._complete and self._keep_alive and not transport.is_closing()
        headers = [(k, v) for k, v in self._headers if k.lower() != b"content-encoding"]
        return self._status, headers, bytes(self._body)

    def close(self) -> None:
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close without the TLS goodbye (for a peer that never completes it)."""
        self.reusable = False
        if self._transport is not None:
            self._transport.abort()

    # --- asyncio.Protocol ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports are duck-typed
        self.reusable = True

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes nobody asked for: the connection is no longer usable
            self.close()
            return
        self.heard = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._finish(httpx.RemoteProtocolError(f"malformed answer: {type(exc).__name__}"))
            return
        if self._overflow is not None:
            self._finish(self._overflow)
        elif self._head_open:  # no end of headers yet, so every byte of this exchange so far is head
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEADER_BYTES:
                self._finish(HeadersTooLarge(f"response head exceeds {MAX_HEADER_BYTES} bytes"))

    def eof_received(self) -> bool | None:
        self._on_close()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_close()
        self._transport = None
        if not self.lost.done():
            self.lost.set_result(None)

    def _on_close(self) -> None:
        self.reusable = False
        if self._waiter is None or self._waiter.done():
            return
        if self._status >= 200 and not self._length_known:  # body delimited by the close itself
            self._complete = False
            self._finish(None)
        else:
            self._finish(httpx.RemoteProtocolError("server disconnected without a complete answer"))

    def _finish(self, error: Exception | None) -> None:
        if error is not None:
            self._error = error
            self.close()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # --- httptools callbacks ---

    def on_header(self, name: bytes, value: bytes) -> None:
        # Counted here too: a head that arrives whole in one read never looks open to data_received.
        self._header_bytes += len(name) + len(value)
        if len(self._headers) >= MAX_HEADERS or self._header_bytes > MAX_HEADER_BYTES:
            if self._overflow is None:
                self._overflow = HeadersTooLarge(
                    f"response has over {MAX_HEADERS} headers or {MAX_HEADER_BYTES} bytes of them"
                )
            return
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._head_open = self._status < 200  # an interim answer's head counts towards the final one's
        self._keep_alive = self._parser.should_keep_alive()  # only reliable before the message ends
        self._length_known = any(
            k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self._headers
        ) or self._status in (204, 304)

    def on_body(self, body: bytes) -> None:
        if self._overflow is not None:
            return
        if len(self._body) + len(body) > self._limit:  # the rest is dropped
            self._overflow = ResponseTooLarge(f"response body exceeds {self._limit} bytes")
            return
        self._body += body

    def on_message_complete(self) -> None:
        if self._overflow is not None:
            return
        if 100 <= self._status < 200:  # an interim answer (100 Continue, 103): the real one follows
            self._status, self._headers, self._header_bytes = 0, [], 0
            return
        self._complete = True
        self._finish(None)
