"""Safe egress policy: which webhook destinations a POST may reach (docs/architecture.md "Safe egress").

Webhook URLs are user-supplied, so a POST must never become a request into our own network (SSRF).
This module holds the rules and nothing that touches a socket, so they can be read (and tested) in one
place; ``transport.py`` applies them **at connect time**, the only place that sees the address
actually dialled.

- URL rules (``checked_url``): ``http``/``https`` only, no credentials, a host. The URL is parsed with
  httpx's parser, the same one the transport builds its request line and ``Host`` header from, so the
  name checked here is the name sent (no parser differential).
- Address rules (``AddressPolicy``): a host is resolved **once** per connection attempt with an
  injectable ``Resolver``, and *every* answer must be allowed (one private answer blocks the lot, so DNS
  rebinding across answers cannot slip through). The transport then dials those validated literal IPs
  and nothing resolves the name a second time within the attempt (attempts that overlap in time may
  share one resolution; the transport also bounds how long an attempt waits for it).
- ``allow_private`` (``CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS``, development only) admits loopback, RFC 1918
  and IPv6 ULA destinations. Nothing else can opt out: link-local (cloud metadata), multicast, reserved
  and translation ranges stay blocked whatever the flag says, and so do the metadata addresses inside
  the ranges it admits (AWS's IPv6 ``fd00:ec2::254`` sits in ULA ``fc00::/7``).
- Destination rules (``DestinationRules``): outside local development only ``https``, and only to ports
  443 and 80 plus those ``CAMPAIGN_EGRESS_PORTS`` lists; ``CAMPAIGN_LOCAL_DEVELOPMENT`` admits ``http``
  and any port (``make dev``'s inbox on 8025, test receivers on free ports).

Errors are our own: ``EgressBlocked`` is a final policy verdict, ``ResolutionFailed`` a retryable DNS
failure (fail closed, but not a verdict). Neither message includes the URL or host, because webhook
URLs may carry secrets and these messages reach the logs.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import httpx

__all__ = [
    "DEFAULT_PORTS",
    "AddressPolicy",
    "DestinationRules",
    "EgressBlocked",
    "IPAddress",
    "ResolutionFailed",
    "Resolver",
    "blocked_reason",
    "checked_url",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressBlocked(Exception):
    """The destination breaks the egress policy. Final: retrying the same URL cannot succeed."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"webhook egress blocked: {reason}")
        self.reason = reason


class ResolutionFailed(Exception):
    """The host name did not resolve to any usable address: a DNS hiccup is retryable, not a verdict."""


class Resolver(Protocol):
    def __call__(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, as IP strings; raise ``OSError`` when it cannot."""
        ...


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# --- address rules ----------------------------------------------------------------------------------

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
# Instance metadata services, blocked whatever ``allow_private`` says: AWS, GCP and Azure answer on
# 169.254.169.254 (link-local, never admitted anyway), AWS also on fd00:ec2::254 (inside ULA), Alibaba on
# 100.100.100.200 (carrier-grade NAT, never admitted either). Checked first so no range rule can admit one.
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)


def blocked_reason(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why a connection to ``address`` is refused, or ``None`` when it is allowed."""
    if address in _METADATA:
        return "a cloud metadata address"
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


class AddressPolicy:
    """The one place that turns a host into the addresses a connection attempt may dial."""

    def __init__(self, *, resolver: Resolver, allow_private: bool) -> None:
        self._resolver = resolver
        self._allow_private = allow_private

    @staticmethod
    def needs_resolution(host: str) -> bool:
        """False for IP literals: the caller may then validate without leaving its event loop."""
        return _parse_literal(host) is None

    def validated_addresses(self, host: str, port: int) -> list[str]:
        """Resolve once (IP literals are not resolved) and require every answer to be allowed.

        Raises ``EgressBlocked`` if any answer is refused, ``ResolutionFailed`` if there is none.
        Never returns an empty list.
        """
        literal = _parse_literal(host)
        if literal is not None:
            candidates = [literal]
        else:
            try:
                answers = self._resolver(host, port)
                candidates = [ipaddress.ip_address(answer) for answer in answers]
            except (OSError, ValueError) as exc:
                raise ResolutionFailed("webhook host name resolution failed") from exc
            if not candidates:
                raise ResolutionFailed("webhook host name resolved to no address")
        for address in candidates:
            reason = blocked_reason(address, allow_private=self._allow_private)
            if reason is not None:
                raise EgressBlocked(f"destination address is {reason}")
        return [str(address) for address in candidates]


# --- URL rules --------------------------------------------------------------------------------------


def checked_url(url: str) -> httpx.URL:
    """``url`` parsed, after the URL-level rules; runs before any resolution or connection."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise EgressBlocked("the URL is not valid") from None  # never retryable; no URL in the text
    if parsed.scheme not in ("http", "https"):
        raise EgressBlocked("only http and https destinations are allowed")
    if parsed.userinfo:
        raise EgressBlocked("credentials in the URL are not allowed")
    if not parsed.host:
        raise EgressBlocked("the URL has no host")
    return parsed


DEFAULT_PORTS = frozenset({443, 80})


@dataclass(frozen=True)
class DestinationRules:
    """Which schemes and ports a receiver URL may name; strict unless built for local development."""

    allow_http: bool = False
    ports: frozenset[int] | None = DEFAULT_PORTS  # None: any port

    @classmethod
    def of(cls, *, local_development: bool, extra_ports: Iterable[int] = ()) -> DestinationRules:
        """``CAMPAIGN_LOCAL_DEVELOPMENT`` and ``CAMPAIGN_EGRESS_PORTS``: local runs reach loopback
        receivers over http on any port; elsewhere https to 443, 80 or a listed port."""
        if local_development:
            return cls(allow_http=True, ports=None)
        return cls(allow_http=False, ports=DEFAULT_PORTS | frozenset(extra_ports))

    def check(self, url: str) -> httpx.URL:
        """``url`` parsed after ``checked_url`` and these rules; raises ``EgressBlocked`` (final)."""
        parsed = checked_url(url)
        self.check_destination(parsed.scheme, parsed.port or (443 if parsed.scheme == "https" else 80))
        return parsed

    def check_destination(self, scheme: str, port: int) -> None:
        if scheme != "https" and not self.allow_http:
            raise EgressBlocked("only https receivers are allowed outside local development")
        if self.ports is not None and port not in self.ports:
            raise EgressBlocked("the receiver's port is not one egress allows (CAMPAIGN_EGRESS_PORTS)")
