"""Safe egress: the transport every webhook POST goes through.

Webhook URLs are user-supplied, so a POST must never become a request into our own network (SSRF).
The decision is taken **at connect time**, where the connection is opened, because that is the only
place that sees the address actually dialled: the host is resolved once per connection attempt with
an injectable ``Resolver``, *every* answer must be public (one private answer blocks the lot, so DNS
rebinding across answers cannot slip through), and the socket is opened to that validated literal IP.
The request still carries the original hostname, so ``Host``, TLS SNI and certificate verification use
the name, never the IP; nothing resolves the name a second time within the attempt.

Request-level rules run first: ``http``/``https`` only and no credentials in the URL. A transport never
follows redirects; the client must keep ``follow_redirects=False`` (``make_webhook_client`` does), so a
3xx is handed back as-is. Response bodies are capped at 64 KiB while reading (``ResponseTooLarge``);
content encodings are not decoded because a decoded size cannot be capped (we ask for ``identity``).

``allow_private`` (``CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS``, development only) admits loopback, RFC 1918 and
IPv6 ULA destinations. Nothing else can opt out: link-local (cloud metadata), multicast, reserved and
translation ranges stay blocked whatever the flag says.

Two faces, one policy: ``SafeTransport`` (sync, ``httpx.Client``, httpcore's pool dialling through
``_PinningBackend``) and ``AsyncSafeTransport`` (asyncio; usable under ``httpx.AsyncClient``, and
through its lean ``post`` entry point, which the notification worker's event loop uses). Both take
their addresses from ``_AddressPolicy`` and share the URL checks and the response cap, so the address
rules exist exactly once; tests/unit/test_safe_transport.py runs its whole matrix through all three.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, cast

import httpcore
import httptools
import httpx

__all__ = [
    "MAX_RESPONSE_BYTES",
    "AsyncSafeTransport",
    "EgressBlocked",
    "Resolver",
    "ResponseTooLarge",
    "SafeTransport",
    "blocked_reason",
    "make_async_webhook_client",
    "make_webhook_client",
    "make_webhook_transport",
    "system_resolver",
]

MAX_RESPONSE_BYTES = 64 * 1024

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Resolver(Protocol):
    def __call__(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, as IP strings; raise ``OSError`` when it cannot."""
        ...


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class EgressBlocked(httpx.TransportError):
    """The destination breaks the egress policy. Final: retrying the same URL cannot succeed.

    The message never includes the URL or host (webhook URLs may carry secrets).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"webhook egress blocked: {reason}")
        self.reason = reason


class ResponseTooLarge(httpx.TransportError):
    """The receiver answered with more than ``MAX_RESPONSE_BYTES``; the answer is unreadable."""


# --- address policy ---------------------------------------------------------------------------------

_BLOCKED_V4 = tuple(
    (ipaddress.IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", "this-network"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255 broadcast
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
# Inside 2000::/3 but not plain global unicast. Everything outside 2000::/3 (loopback, unspecified,
# IPv4-mapped/compatible, NAT64 64:ff9b::/96, ULA fc00::/7, link-local, multicast) is refused wholesale.
_BLOCKED_V6 = tuple(
    (ipaddress.IPv6Network(net), why)
    for net, why in (
        ("2001::/23", "IETF protocol assignments"),  # Teredo 2001::/32, benchmarking, ORCHID
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4"),
        ("3fff::/20", "documentation"),
    )
)
_DEV_PRIVATE = tuple(
    ipaddress.ip_network(net)
    for net in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7")
)


def blocked_reason(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why a connection to ``address`` is refused, or ``None`` when it is allowed."""
    if allow_private and any(address in net for net in _DEV_PRIVATE):
        return None
    if isinstance(address, ipaddress.IPv4Address):
        for net, why in _BLOCKED_V4:
            if address in net:
                return why
        return None
    if address not in _GLOBAL_UNICAST_V6:
        return "not IPv6 global unicast"
    for net6, why6 in _BLOCKED_V6:
        if address in net6:
            return why6
    return None


def _parse_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


# --- connect-time check -----------------------------------------------------------------------------


class _AddressPolicy:
    """The one place that turns a host into the addresses a connection attempt may dial."""

    def __init__(self, *, resolver: Resolver, allow_private: bool) -> None:
        self._resolver = resolver
        self._allow_private = allow_private

    @staticmethod
    def needs_resolution(host: str) -> bool:
        return _parse_literal(host) is None

    def validated_addresses(self, host: str, port: int) -> list[str]:
        """Resolve once (IP literals are not resolved) and require every answer to be allowed."""
        literal = _parse_literal(host)
        if literal is not None:
            candidates = [literal]
        else:
            try:
                answers = self._resolver(host, port)
                candidates = [ipaddress.ip_address(answer) for answer in answers]
            except (OSError, ValueError) as exc:
                # Fail closed, but as a connect error: a DNS hiccup is retryable, not a policy verdict.
                raise httpcore.ConnectError("webhook host name resolution failed") from exc
            if not candidates:
                raise httpcore.ConnectError("webhook host name resolved to no address")
        for address in candidates:
            reason = blocked_reason(address, allow_private=self._allow_private)
            if reason is not None:
                raise EgressBlocked(f"destination address is {reason}")
        return [str(address) for address in candidates]


def _remaining(timeout: float | None, started: float) -> float | None:
    remaining = None if timeout is None else timeout - (time.monotonic() - started)
    if remaining is not None and remaining <= 0:
        raise httpcore.ConnectTimeout("connect timeout")
    return remaining


class _PinningBackend(httpcore.NetworkBackend):
    """Resolves, validates every answer, then dials the validated IP; httpcore keeps the name."""

    def __init__(self, policy: _AddressPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        started = time.monotonic()
        last_error: Exception | None = None
        for address in self._policy.validated_addresses(host, port):
            remaining = _remaining(timeout, started)
            try:
                return self._inner.connect_tcp(
                    address,
                    port,
                    timeout=remaining,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None  # validated_addresses never returns an empty list
        raise last_error

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise EgressBlocked("unix sockets are not webhook destinations")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# --- the transports ---------------------------------------------------------------------------------


def _check_url(url: httpx.URL) -> None:
    """URL-level rules, before any resolution or connection."""
    if url.scheme not in ("http", "https"):
        raise EgressBlocked("only http and https destinations are allowed")
    if url.userinfo:
        raise EgressBlocked("credentials in the URL are not allowed")
    if not url.host:
        raise EgressBlocked("the URL has no host")


def _check_request(request: httpx.Request) -> None:
    _check_url(request.url)
    request.headers["Accept-Encoding"] = "identity"


def _undecoded_headers(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    # Drop Content-Encoding so httpx hands back the capped raw bytes instead of decompressing them
    # without bound; an encoded answer then reads as unparseable, i.e. uncertain.
    return [(k, v) for k, v in response.headers.raw if k.lower() != b"content-encoding"]


def _pool_kwargs(
    ssl_context: ssl.SSLContext, limits: httpx.Limits
) -> dict[str, ssl.SSLContext | int | float | bool | None]:
    return {
        "ssl_context": ssl_context,
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
        "http1": True,
        "http2": False,
        "retries": 0,
    }


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            if received > self._limit:
                raise ResponseTooLarge(f"response body exceeds {self._limit} bytes")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class SafeTransport(httpx.HTTPTransport):
    """An ``httpx.HTTPTransport`` whose connection pool dials only policy-checked addresses.

    ``verify`` exists for tests with a private CA; production keeps the default CA bundle. Proxies
    are not supported: a proxy would make the egress decision somewhere we cannot check.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=64, max_keepalive_connections=64)
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=ssl_context, limits=limits, trust_env=False)
        self._max_response_bytes = max_response_bytes
        # Replace the pool HTTPTransport just built (it holds no connections yet) with one that dials
        # through the pinning backend; everything else about request handling stays httpx's own.
        policy = _AddressPolicy(resolver=resolver or system_resolver, allow_private=allow_private)
        self._pool = httpcore.ConnectionPool(
            **_pool_kwargs(ssl_context, limits),  # type: ignore[arg-type]
            network_backend=_PinningBackend(policy),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        _check_request(request)
        response = super().handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=_undecoded_headers(response),
            stream=_CappedStream(response.stream, self._max_response_bytes),
            extensions=response.extensions,
        )


class AsyncSafeTransport(httpx.AsyncBaseTransport):
    """``SafeTransport`` for ``httpx.AsyncClient``: same policy object, same checks, same cap.

    The HTTP/1.1 exchange is our own (``_Http1``: one write per request, httptools' C parser for the
    answer) over asyncio connections opened by ``_connect``, which applies ``_AddressPolicy`` exactly
    as the sync backend does. httpcore's async stack (pool scans, anyio streams, h11) cost ~1 ms of
    CPU per POST, most of the worker's budget; this costs a tenth of that. The whole answer is read
    inside ``handle_async_request`` (at most ``max_response_bytes``), so responses are never streamed.

    Timeouts: ``connect`` bounds resolution-to-handshake, ``read`` bounds the wait for the complete
    answer after the request was written (a total, so a trickling receiver cannot hold a slot).
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=64, max_keepalive_connections=64)
        self._ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        self._policy = _AddressPolicy(resolver=resolver or system_resolver, allow_private=allow_private)
        self._max_response_bytes = max_response_bytes
        self._max_idle = limits.max_keepalive_connections or 0
        self._keepalive_expiry = limits.keepalive_expiry or 0.0
        self._idle: dict[tuple[str, str, int], list[_Http1]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _check_request(request)
        timeouts = request.extensions.get("timeout", {})
        head, body = await _serialize(request)
        status, headers, content = await self._exchange(
            _key(request.url), head, body, timeouts.get("connect"), timeouts.get("read")
        )
        return httpx.Response(
            status_code=status,
            headers=headers,
            content=content,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def post(
        self, url: str, body: bytes, headers: Sequence[tuple[str, str]], *, timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One POST without the ``httpx.AsyncClient`` layers: ``(status, headers, body)``.

        The worker's entry point. Building httpx's Request/Response/URL/cookie objects cost more CPU
        per POST than the exchange itself; here the URL is parsed and checked once per distinct URL
        (``_target``), the head is one bytes join, and everything from the connection on is the code
        ``handle_async_request`` runs: the same policy, connections, cap and timeouts.
        """
        key, prefix = _target(url)
        lines = [prefix]
        for name, value in headers:
            encoded_name, encoded_value = name.encode("latin-1"), value.encode("latin-1")
            if _FORBIDDEN_IN_HEADERS.search(encoded_name) or _FORBIDDEN_IN_HEADERS.search(encoded_value):
                raise httpx.LocalProtocolError("illegal character in a request header")
            lines += (encoded_name, b": ", encoded_value, b"\r\n")
        lines += (b"Content-Length: ", str(len(body)).encode("ascii"), b"\r\n\r\n")
        return await self._exchange(key, b"".join(lines), body, timeout, timeout)

    async def _exchange(
        self,
        key: tuple[str, str, int],
        head: bytes,
        body: bytes,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        connection = self._checkout(key)
        if connection is not None:
            try:
                return await self._exchange_on(key, connection, head, body, read_timeout)
            except httpx.RemoteProtocolError:
                # A kept-alive connection the server closed while we picked it (the close was still
                # in flight): nothing of an answer arrived, so try once more on a new connection, as
                # HTTP clients do. A receiver that did get the request sees a duplicate, which the
                # contract requires it to absorb.
                if connection.heard:
                    raise
        connection = await self._connect(key, connect_timeout)
        return await self._exchange_on(key, connection, head, body, read_timeout)

    async def _exchange_on(
        self,
        key: tuple[str, str, int],
        connection: _Http1,
        head: bytes,
        body: bytes,
        read_timeout: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        try:
            answer = await connection.exchange(
                head, body, timeout=read_timeout, limit=self._max_response_bytes
            )
        except BaseException:
            connection.close()
            raise
        self._checkin(key, connection)
        return answer

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for stack in idle.values():
            for connection in stack:
                connection.close()

    def _checkout(self, key: tuple[str, str, int]) -> _Http1 | None:
        stack = self._idle.get(key)
        now = time.monotonic()
        while stack:
            connection = stack.pop()
            # The loop reports a server-side close or stray bytes as they happen (``reusable`` turns
            # False), so an idle connection needs no readability poll before reuse.
            if connection.reusable and now - connection.idle_since < self._keepalive_expiry:
                return connection
            connection.close()
        return None

    def _checkin(self, key: tuple[str, str, int], connection: _Http1) -> None:
        stack = self._idle.setdefault(key, [])
        if connection.reusable and len(stack) < self._max_idle:
            connection.idle_since = time.monotonic()
            stack.append(connection)
        else:
            connection.close()

    async def _connect(self, key: tuple[str, str, int], timeout: float | None) -> _Http1:
        """Resolve once, validate every answer, dial the validated IPs in turn; TLS uses the name."""
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            if self._policy.needs_resolution(host):
                addresses = await loop.run_in_executor(None, self._policy.validated_addresses, host, port)
            else:
                addresses = self._policy.validated_addresses(host, port)
        except httpcore.ConnectError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        tls = scheme == "https"
        last_error: Exception | None = None
        for address in addresses:
            remaining = None if timeout is None else timeout - (time.monotonic() - started)
            if remaining is not None and remaining <= 0:
                raise httpx.ConnectTimeout("connect timeout")
            try:
                async with asyncio.timeout(remaining):
                    _, protocol = await loop.create_connection(
                        _Http1,
                        host=address,
                        port=port,
                        ssl=self._ssl_context if tls else None,
                        server_hostname=host.strip("[]") if tls else None,
                    )
                return protocol
            except TimeoutError as exc:
                last_error = httpx.ConnectTimeout("connect timeout")
                last_error.__cause__ = exc
            except (OSError, ssl.SSLError, ssl.CertificateError) as exc:
                last_error = httpx.ConnectError(f"connect failed: {type(exc).__name__}")
                last_error.__cause__ = exc
        assert last_error is not None  # validated_addresses never returns an empty list
        raise last_error


def _key(url: httpx.URL) -> tuple[str, str, int]:
    return (url.scheme, url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80))


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> tuple[tuple[str, str, int], bytes]:
    """Connection key and request head up to the caller's headers, for one checked webhook URL.

    Cached: most deliveries go to one default receiver. Failures (``EgressBlocked``) are not cached.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise EgressBlocked("the URL is not valid") from None  # never retryable; no URL in the text
    _check_url(parsed)
    prefix = b"".join(
        (
            b"POST ",
            parsed.raw_path,
            b" HTTP/1.1\r\nHost: ",
            parsed.netloc,
            b"\r\nUser-Agent: campaign-engine\r\nAccept-Encoding: identity\r\n",
        )
    )
    return _key(parsed), prefix


_HOP_BY_HOP = frozenset({b"content-length", b"transfer-encoding", b"connection"})
_FORBIDDEN_IN_HEADERS = re.compile(rb"[\r\n\0]")


async def _serialize(request: httpx.Request) -> tuple[bytes, bytes]:
    """Request line and headers (one buffer), and the body; the body is always sent with a length."""
    body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
    lines = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        if name.lower() in _HOP_BY_HOP:
            continue
        if _FORBIDDEN_IN_HEADERS.search(name) or _FORBIDDEN_IN_HEADERS.search(value):
            raise httpx.LocalProtocolError("illegal character in a request header")
        lines += (name, b": ", value, b"\r\n")
    if body or request.method in ("POST", "PUT", "PATCH"):
        lines += (b"Content-Length: ", str(len(body)).encode("ascii"), b"\r\n")
    lines.append(b"\r\n")
    return b"".join(lines), body


class _Http1(asyncio.Protocol):
    """One HTTP/1.1 client connection: one request at a time, answer parsed by httptools."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body = bytearray()
        self._limit = MAX_RESPONSE_BYTES
        self._length_known = False
        self._complete = False
        self._error: Exception | None = None
        self._overflow = False
        self._keep_alive = False
        self.reusable = False
        self.idle_since = 0.0
        self.heard = False  # any byte of an answer arrived during the current exchange

    async def exchange(
        self, head: bytes, body: bytes, *, timeout: float | None, limit: int
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        transport = self._transport
        if transport is None or transport.is_closing():
            raise httpx.RemoteProtocolError("connection closed before the request was sent")
        self.reusable = False
        self._limit = limit
        self._status, self._headers, self._body = 0, [], bytearray()
        self._complete, self._length_known, self._error, self._overflow = False, False, None, False
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
        if self._overflow:
            self._finish(ResponseTooLarge(f"response body exceeds {self._limit} bytes"))

    def eof_received(self) -> bool | None:
        self._on_close()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_close()
        self._transport = None

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
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._keep_alive = self._parser.should_keep_alive()  # only reliable before the message ends
        self._length_known = any(
            k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self._headers
        ) or self._status in (204, 304)

    def on_body(self, body: bytes) -> None:
        if self._overflow or len(self._body) + len(body) > self._limit:
            self._overflow = True  # reported after feed_data returns; the rest is dropped
            return
        self._body += body

    def on_message_complete(self) -> None:
        if self._overflow:
            return
        if 100 <= self._status < 200:  # an interim answer (100 Continue, 103): the real one follows
            self._status, self._headers = 0, []
            return
        self._complete = True
        self._finish(None)


def make_webhook_client(
    *,
    allow_private: bool,
    timeout: float,
    resolver: Resolver | None = None,
    max_connections: int = 64,
) -> httpx.Client:
    """A pooled sync client for webhook POSTs. Never pass ``follow_redirects=True`` to its calls."""
    transport = SafeTransport(
        allow_private=allow_private,
        resolver=resolver,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )
    return httpx.Client(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False)


def make_webhook_transport(
    *,
    allow_private: bool,
    resolver: Resolver | None = None,
    max_connections: int = 64,
) -> AsyncSafeTransport:
    """The transport the notification worker posts through (``AsyncSafeTransport.post``)."""
    return AsyncSafeTransport(
        allow_private=allow_private,
        resolver=resolver,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )


def make_async_webhook_client(
    *,
    allow_private: bool,
    timeout: float,
    resolver: Resolver | None = None,
    max_connections: int = 64,
) -> httpx.AsyncClient:
    """An async client over ``AsyncSafeTransport``; same rules as ``make_webhook_client``."""
    transport = make_webhook_transport(
        allow_private=allow_private, resolver=resolver, max_connections=max_connections
    )
    return httpx.AsyncClient(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False)
