"""The webhook HTTP client: one POST at a time per connection, dialled only to policy-checked addresses.

Every webhook POST goes through ``AsyncSafeTransport.post``. It applies the egress policy of
``policy.py`` where connections are opened (``_connect``): the URL rules first, then one resolution
per new connection with every answer checked, then a socket to the validated literal IP. The request
still carries the original hostname, so ``Host``, TLS SNI and certificate verification use the name,
never the IP. A transport never follows redirects: a 3xx is handed back as-is. Answers are read whole
and capped at ``MAX_RESPONSE_BYTES`` while reading (``ResponseTooLarge``; a head over the caps of
``http1`` is ``HeadersTooLarge``); content encodings are not decoded, because a decoded size cannot be
capped (we ask for ``identity``).

A hostile receiver must not hold our resources either:

- Resolution runs on the transport's own small thread pool, never the loop's default executor (the
  pause gate reads the graph there), and each POST waits for it at most its connect budget: a name
  that never resolves is ``ConnectError`` (unreachable, retried), never a verdict. Concurrent attempts
  for one name share one resolution, so a stuck name holds one thread, not one per POST.
- Kept-alive connections wait in an ``idle_pool.IdlePool``: bounded in total across destinations and
  reaped at ``keepalive_expiry``, so thousands of distinct hosts cannot pile up open sockets.

The HTTP/1.1 exchange is our own (``http1.Http1Connection``: one write per request, httptools' C
parser for the answer) over asyncio connections. httpx's client layers and httpcore's async stack
(pool scans, anyio streams, h11) cost ~1 ms of CPU per POST, most of the worker's budget; this costs a
tenth of that. httpx is still the URL parser (``egress.checked_url``) and the vocabulary of transport
errors (``httpx.ConnectError``, ``ReadTimeout``, ...); ``poster.py`` translates them, once, into the
result types of ``sender.py``.
"""

from __future__ import annotations

import asyncio
import functools
import re
import ssl
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from campaign_engine.egress.http1 import HeadersTooLarge, Http1Connection, ResponseTooLarge
from campaign_engine.egress.idle_pool import Destination, IdlePool
from campaign_engine.egress.policy import (
    AddressPolicy,
    DestinationRules,
    ResolutionFailed,
    Resolver,
    checked_url,
    system_resolver,
)
from campaign_engine.egress.tls import tls_context

__all__ = [
    "MAX_RESPONSE_BYTES",
    "AsyncSafeTransport",
    "HeadersTooLarge",
    "ResponseTooLarge",
    "make_webhook_transport",
]

MAX_RESPONSE_BYTES = 64 * 1024

_Key = Destination  # (scheme, host, port): connections are pooled per destination
_FORBIDDEN_IN_HEADERS = re.compile(rb"[\r\n\0]")


class AsyncSafeTransport:
    """Pooled, policy-checked HTTP/1.1 POSTs on the running event loop.

    ``verify`` exists for tests with a private CA; production keeps the default CA bundle. Proxies are
    not supported: a proxy would make the egress decision somewhere we cannot check. At most
    ``max_idle_connections`` kept-alive connections are kept across all destinations, each for at most
    ``keepalive_expiry`` seconds; how many POSTs run at once is the caller's bound (the poster's). At
    most ``resolver_threads`` host names resolve at once.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        rules: DestinationRules = DestinationRules(),  # noqa: B008 - frozen, strict: https to 443/80
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        max_idle_connections: int = 64,
        keepalive_expiry: float = 5.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        resolver_threads: int = 16,
    ) -> None:
        self._ssl_context = tls_context(verify)
        self._policy = AddressPolicy(resolver=resolver or system_resolver, allow_private=allow_private)
        self._rules = rules
        self._max_response_bytes = max_response_bytes
        self._idle = IdlePool(max_idle=max_idle_connections, expiry=keepalive_expiry)
        self._open: set[Http1Connection] = set()  # every connection not yet lost, idle or not
        self._resolver_threads = resolver_threads
        self._resolver_pool: ThreadPoolExecutor | None = None  # started on first use
        self._resolving: dict[tuple[str, int], asyncio.Future[list[str]]] = {}

    @property
    def open_connections(self) -> int:
        """Connections whose socket is not closed yet, in flight or idle."""
        return len(self._open)

    async def post(
        self, url: str, body: bytes, headers: Sequence[tuple[str, str]], *, timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One POST: ``(status, headers, body)`` of the whole (capped) answer.

        ``timeout`` bounds resolution-to-handshake, and separately the wait for the complete answer
        after the request was written (a total, so a trickling receiver cannot hold a slot). Raises
        ``EgressBlocked`` (final), ``ResponseTooLarge`` (``HeadersTooLarge`` for the head) or another
        ``httpx.TransportError`` (a name that does not resolve in time is a ``ConnectError``).
        """
        key, prefix = _target(url)
        self._rules.check_destination(key[0], key[2])
        lines = [prefix]
        for name, value in headers:
            encoded_name, encoded_value = name.encode("latin-1"), value.encode("latin-1")
            if _FORBIDDEN_IN_HEADERS.search(encoded_name) or _FORBIDDEN_IN_HEADERS.search(encoded_value):
                raise httpx.LocalProtocolError("illegal character in a request header")
            lines += (encoded_name, b": ", encoded_value, b"\r\n")
        lines += (b"Content-Length: ", str(len(body)).encode("ascii"), b"\r\n\r\n")
        return await self._exchange(key, b"".join(lines), body, timeout)

    async def aclose(self, *, grace: float = 1.0) -> None:
        """Close every connection and return once they are gone, so the caller may close its event
        loop right after (a TLS close waits for the peer's answer; after ``grace`` seconds it is cut)."""
        self._idle.clear()
        for pending in self._resolving.values():
            pending.cancel()  # a resolver thread that answers after the loop closed then drops it
        if self._resolver_pool is not None:
            self._resolver_pool.shutdown(wait=False, cancel_futures=True)
            self._resolver_pool = None
        connections, self._open = self._open, set()
        for attempt in (Http1Connection.close, Http1Connection.abort):
            waiting = [connection for connection in connections if not connection.lost.done()]
            if not waiting:
                return
            for connection in waiting:
                attempt(connection)
            await asyncio.wait([connection.lost for connection in waiting], timeout=grace)

    async def _exchange(
        self, key: _Key, head: bytes, body: bytes, timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        connection = self._idle.checkout(key)
        if connection is not None:
            try:
                return await self._exchange_on(key, connection, head, body, timeout)
            except httpx.RemoteProtocolError:
                # A kept-alive connection the server closed while we picked it (the close was still
                # in flight): nothing of an answer arrived, so try once more on a new connection, as
                # HTTP clients do. A receiver that did get the request sees a duplicate, which the
                # contract requires it to absorb.
                if connection.heard:
                    raise
        connection = await self._connect(key, timeout)
        return await self._exchange_on(key, connection, head, body, timeout)

    async def _exchange_on(
        self, key: _Key, connection: Http1Connection, head: bytes, body: bytes, timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        try:
            answer = await connection.exchange(head, body, timeout=timeout, limit=self._max_response_bytes)
        except BaseException:
            connection.close()
            raise
        self._idle.checkin(key, connection)
        return answer

    def _track(self, connection: Http1Connection) -> None:
        self._open.add(connection)
        connection.lost.add_done_callback(lambda _: self._open.discard(connection))

    async def _connect(self, key: _Key, timeout: float | None) -> Http1Connection:
        """Resolve once, validate every answer, dial the validated IPs in turn; TLS uses the name."""
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            if self._policy.needs_resolution(host):
                async with asyncio.timeout(timeout):
                    addresses = await asyncio.shield(self._resolution(host, port))
            else:
                addresses = self._policy.validated_addresses(host, port)
        except ResolutionFailed as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except TimeoutError:  # the resolution goes on for later attempts; this one gives up
            raise httpx.ConnectError("webhook host name resolution timed out") from None
        tls = scheme == "https"
        last_error: Exception | None = None
        for address in addresses:
            remaining = None if timeout is None else timeout - (time.monotonic() - started)
            if remaining is not None and remaining <= 0:
                raise httpx.ConnectTimeout("connect timeout")
            try:
                async with asyncio.timeout(remaining):
                    _, protocol = await loop.create_connection(
                        Http1Connection,
                        host=address,
                        port=port,
                        ssl=self._ssl_context if tls else None,
                        server_hostname=host.strip("[]") if tls else None,
                    )
                self._track(protocol)
                return protocol
            except TimeoutError as exc:
                last_error = httpx.ConnectTimeout("connect timeout")
                last_error.__cause__ = exc
            except (OSError, ssl.SSLError, ssl.CertificateError) as exc:
                last_error = httpx.ConnectError(f"connect failed: {type(exc).__name__}")
                last_error.__cause__ = exc
        assert last_error is not None  # validated_addresses never returns an empty list
        raise last_error

    def _resolution(self, host: str, port: int) -> asyncio.Future[list[str]]:
        """The validated addresses of ``host``, from the resolution in flight for it or a new one."""
        key = (host, port)
        pending = self._resolving.get(key)
        if pending is not None:
            return pending
        if self._resolver_pool is None:
            self._resolver_pool = ThreadPoolExecutor(self._resolver_threads, thread_name_prefix="webhook-dns")
        pending = asyncio.get_running_loop().run_in_executor(
            self._resolver_pool, self._policy.validated_addresses, host, port
        )
        self._resolving[key] = pending

        def forget(done: asyncio.Future[list[str]]) -> None:
            if self._resolving.get(key) is done:
                del self._resolving[key]
            if not done.cancelled():
                done.exception()  # retrieved: every POST that waited for it may have given up

        pending.add_done_callback(forget)
        return pending


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> tuple[_Key, bytes]:
    """Connection key and request head up to the caller's headers, for one checked webhook URL.

    Cached: most deliveries go to one default receiver. Failures (``EgressBlocked``) are not cached.
    """
    parsed = checked_url(url)
    key = (
        parsed.scheme,
        parsed.raw_host.decode("ascii"),
        parsed.port or (443 if parsed.scheme == "https" else 80),
    )
    prefix = b"".join(
        (
            b"POST ",
            parsed.raw_path,
            b" HTTP/1.1\r\nHost: ",
            parsed.netloc,
            b"\r\nUser-Agent: campaign-engine\r\nAccept-Encoding: identity\r\n",
        )
    )
    return key, prefix


def make_webhook_transport(
    *,
    allow_private: bool,
    rules: DestinationRules,
    resolver: Resolver | None = None,
    max_connections: int = 64,
) -> AsyncSafeTransport:
    """The transport the notification worker's poster posts through. ``max_connections`` (idle ones,
    across all destinations) should match the poster's concurrency, so every POST in flight can keep its
    connection alive; open sockets then stay under twice that however many hosts there are."""
    return AsyncSafeTransport(
        allow_private=allow_private, rules=rules, resolver=resolver, max_idle_connections=max_connections
    )
