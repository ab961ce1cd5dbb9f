"""Safe egress: the one httpx transport every webhook POST goes through.

Webhook URLs are user-supplied, so a POST must never become a request into our own network (SSRF).
The decision is taken **at connect time**, inside httpcore's network backend, because that is the only
place that sees the address actually dialled: the host is resolved once per connection attempt with
an injectable ``Resolver``, *every* answer must be public (one private answer blocks the lot, so DNS
rebinding across answers cannot slip through), and the socket is opened to that validated literal IP.
httpcore still holds the original hostname, so ``Host``, TLS SNI and certificate verification use the
name, never the IP; nothing resolves the name a second time within the attempt.

Request-level rules run first: ``http``/``https`` only and no credentials in the URL. A transport never
follows redirects; the client must keep ``follow_redirects=False`` (``make_webhook_client`` does), so a
3xx is handed back as-is. Response bodies are capped at 64 KiB while streaming (``ResponseTooLarge``);
content encodings are not decoded because a decoded size cannot be capped (we ask for ``identity``).

``allow_private`` (``CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS``, development only) admits loopback, RFC 1918 and
IPv6 ULA destinations. Nothing else can opt out: link-local (cloud metadata), multicast, reserved and
translation ranges stay blocked whatever the flag says.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Iterator
from typing import Protocol

import httpcore
import httpx

__all__ = [
    "MAX_RESPONSE_BYTES",
    "EgressBlocked",
    "Resolver",
    "ResponseTooLarge",
    "SafeTransport",
    "blocked_reason",
    "make_webhook_client",
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


class _PinningBackend(httpcore.NetworkBackend):
    """Resolves, validates every answer, then dials the validated IP; httpcore keeps the name."""

    def __init__(self, *, resolver: Resolver, allow_private: bool) -> None:
        self._resolver = resolver
        self._allow_private = allow_private
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
        addresses = self._validated_addresses(host, port)
        last_error: Exception | None = None
        for address in addresses:
            remaining = None if timeout is None else timeout - (time.monotonic() - started)
            if remaining is not None and remaining <= 0:
                raise httpcore.ConnectTimeout("connect timeout")
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
        assert last_error is not None  # addresses is never empty
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

    def _validated_addresses(self, host: str, port: int) -> list[str]:
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


# --- the transport ----------------------------------------------------------------------------------


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
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=_PinningBackend(
                resolver=resolver or system_resolver, allow_private=allow_private
            ),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise EgressBlocked("only http and https destinations are allowed")
        if request.url.userinfo:
            raise EgressBlocked("credentials in the URL are not allowed")
        if not request.url.host:
            raise EgressBlocked("the URL has no host")
        request.headers["Accept-Encoding"] = "identity"
        response = super().handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        # Drop Content-Encoding so httpx hands back the capped raw bytes instead of decompressing
        # them without bound; an encoded answer then reads as unparseable, i.e. uncertain.
        headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-encoding"]
        return httpx.Response(
            status_code=response.status_code,
            headers=headers,
            stream=_CappedStream(response.stream, self._max_response_bytes),
            extensions=response.extensions,
        )


def make_webhook_client(
    *,
    allow_private: bool,
    timeout: float,
    resolver: Resolver | None = None,
    max_connections: int = 64,
) -> httpx.Client:
    """The pooled client for webhook POSTs. Never pass ``follow_redirects=True`` to its calls."""
    transport = SafeTransport(
        allow_private=allow_private,
        resolver=resolver,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )
    return httpx.Client(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False)
