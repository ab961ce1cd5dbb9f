"""Safe egress: the policy matrix with a controllable resolver, and real loopback HTTP(S) servers.

Every test runs twice (``face``): through ``AsyncSafeTransport.post``, asserting the transport's own
errors (``EgressBlocked``, ``httpx.ConnectError``, ...), and through ``WebhookPoster``, the
``WebhookSender`` adapter the notification worker posts through, asserting the result each error
becomes (``Blocked``, ``Unreachable``, ...). Each test names both expectations (``fails``), so the
policy and its one translation into our result types are held to the whole matrix.

Blocked-destination tests use a short timeout, so that without the rule they would fail fast with a
connect error or timeout instead of the expected verdict. The last section plays a hostile receiver
: heads that never end (a raw loopback server), names that never resolve, and many hosts,
counting open sockets through the transport's bookkeeping and ``/proc/self/fd``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.sender import (
    Answered,
    Blocked,
    Outgoing,
    PostResult,
    TimedOut,
    Unreachable,
    Unreadable,
)
from campaign_engine.egress.policy import DestinationRules, EgressBlocked, system_resolver
from campaign_engine.egress.transport import (
    MAX_RESPONSE_BYTES,
    AsyncSafeTransport,
    HeadersTooLarge,
    ResponseTooLarge,
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


@pytest.fixture(params=["post", "sender"])
def face(request: pytest.FixtureRequest) -> str:
    return str(request.param)


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
    return _webhook_client(face, allow_private=allow_private, timeout=0.5, resolver=resolver), resolver


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


# --- the blocked-destination matrix -------------------------------------------------------------

BLOCKED_ADDRESSES = {
    "0.0.0.0/8": "0.0.0.0",
    "0.x": "0.1.2.3",
    "10/8": "10.1.2.3",
    "CGNAT 100.64/10": "100.64.0.1",
    "CGNAT top": "100.127.255.254",
    "loopback": "127.0.0.1",
    "loopback other": "127.8.9.10",
    "link-local metadata": "169.254.169.254",
    "172.16/12": "172.16.0.1",
    "172.31": "172.31.255.254",
    "192.0.0/24": "192.0.0.8",
    "TEST-NET-1": "192.0.2.1",
    "6to4 relay": "192.88.99.1",
    "192.168/16": "192.168.1.1",
    "benchmarking": "198.18.0.1",
    "TEST-NET-2": "198.51.100.7",
    "TEST-NET-3": "203.0.113.9",
    "multicast": "224.0.0.1",
    "multicast top": "239.255.255.250",
    "reserved": "240.0.0.1",
    "broadcast": "255.255.255.255",
    "v6 unspecified": "::",
    "v6 loopback": "::1",
    "v6 ipv4-mapped": "::ffff:8.8.8.8",
    "v6 ipv4-mapped loopback": "::ffff:127.0.0.1",
    "v6 ipv4-compatible": "::8.8.8.8",
    "v6 NAT64": "64:ff9b::808:808",
    "v6 local NAT64": "64:ff9b:1::1",
    "v6 discard": "100::1",
    "v6 ULA fc": "fc00::1",
    "v6 ULA fd": "fd12:3456::1",
    "v6 link-local": "fe80::1",
    "v6 site-local": "fec0::1",
    "v6 multicast": "ff02::1",
    "v6 Teredo": "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "v6 benchmarking": "2001:2::1",
    "v6 ORCHIDv2": "2001:20::1",
    "v6 documentation": "2001:db8::1",
    "v6 documentation 3fff": "3fff::1",
    "v6 6to4": "2002:c000:0201::1",
    "v6 outside 2000::/3": "4000::1",
}


@pytest.mark.parametrize("address", BLOCKED_ADDRESSES.values(), ids=BLOCKED_ADDRESSES.keys())
def test_every_blocked_range_is_refused(address: str, face: str) -> None:
    client, resolver = _client(face, {"hook.example": [address]})
    with client, blocked(face):
        client.post("http://hook.example:8080/inbox", json={})
    assert resolver.calls == [("hook.example", 8080)]


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.1:8080/", "http://127.0.0.1:8080/", "http://[::1]:8080/", "http://[fe80::1]:8080/"],
)
def test_ip_literal_urls_are_checked_without_resolving(url: str, face: str) -> None:
    client, resolver = _client(face, {})
    with client, blocked(face):
        client.post(url, json={})
    assert resolver.calls == []


@pytest.mark.parametrize(
    "answers",
    [["93.184.216.34", "10.0.0.1"], ["10.0.0.1", "93.184.216.34"], ["2606:4700::1", "fd00::1"]],
    ids=["public then private", "private then public", "v6 public then ULA"],
)
def test_one_private_answer_blocks_the_lot(answers: list[str], face: str) -> None:
    client, _ = _client(face, {"hook.example": answers})
    with client, blocked(face):
        client.post("http://hook.example/", json={})


@pytest.mark.parametrize(
    "answers",
    [{}, {"hook.example": []}, {"hook.example": ["not-an-ip"]}],
    ids=["nxdomain", "no answers", "garbage answer"],
)
def test_resolution_errors_fail_closed(answers: dict[str, list[str]], face: str) -> None:
    client, _ = _client(face, answers)
    with client, fails(face, raises=httpx.ConnectError, result=Unreachable) as caught:
        client.post("http://hook.example/", json={})
    assert not isinstance(caught.value, EgressBlocked | Blocked)  # retryable, not a policy verdict


@pytest.mark.parametrize(
    "url",
    [
        "http://user:secret@inbox.test/",
        "http://user@inbox.test/",
        "http://:secret@inbox.test/",
        "ftp://inbox.test/",
        "file:///etc/passwd",
    ],
)
def test_request_level_rules_apply_before_resolution(url: str, face: str) -> None:
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    with _transport_client(face, resolver=resolver, timeout=1) as client, blocked(face):
        client.post(url, json={})
    assert resolver.calls == []


def test_credentials_in_url_are_refused_through_the_client(face: str) -> None:
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client, blocked(face, match="credentials"):
        client.post("http://user:secret@inbox.test/", json={})
    assert resolver.calls == []


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "fd00:ec2::254", "::ffff:127.0.0.1", "100.64.0.1", "224.0.0.1", "0.0.0.0"],
)
def test_allow_private_never_opens_metadata_or_special_ranges(address: str, face: str) -> None:
    # fd00:ec2::254 is AWS's IPv6 metadata address, inside the ULA range the flag admits.
    client, _ = _client(face, {"hook.example": [address]}, allow_private=True)
    with client, blocked(face):
        client.post("http://hook.example/", json={})


@pytest.mark.parametrize(
    ("url", "extra_ports", "reason"),
    [
        ("http://hook.example/", (), "only https"),
        ("https://hook.example:8443/", (), "port"),
        ("https://hook.example:22/", (8443,), "port"),
        ("https://hook.example:8443/", (8443,), "loopback"),  # past the rules, refused by the address
        ("https://hook.example/", (), "loopback"),
        ("https://hook.example:80/", (), "loopback"),
    ],
)
def test_outside_local_development_only_https_to_allowed_ports(
    url: str, extra_ports: tuple[int, ...], reason: str, face: str
) -> None:
    rules = DestinationRules.of(local_development=False, extra_ports=extra_ports)
    resolver = DictResolver({"hook.example": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=False, timeout=0.5, resolver=resolver, rules=rules)
    with client, blocked(face, match=reason):
        client.post(url, json={})


def test_egress_errors_do_not_leak_the_url(face: str) -> None:
    client, _ = _client(face, {"hook.example": ["10.0.0.1"]})
    with client, blocked(face) as caught:
        client.post("http://hook.example/t/SECRET-TOKEN", json={})
    for text in (str(caught.value), repr(caught.value)):  # what reaches the logs
        assert "SECRET" not in text
        assert "hook.example" not in text


def test_an_invalid_url_is_blocked_not_retried(face: str) -> None:
    client = _webhook_client(face, allow_private=True, timeout=0.5, resolver=DictResolver({}))
    with client, blocked(face):
        client.post("http://[::1/hook", json={})


def test_system_resolver_returns_ip_strings() -> None:
    assert "127.0.0.1" in system_resolver("127.0.0.1", 80)


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


@pytest.fixture
def inbox() -> Iterator[_Server]:
    yield from _serve(_Server())


def _url(server: _Server, path: str, host: str = "inbox.test", scheme: str = "http") -> str:
    return f"{scheme}://{host}:{server.server_address[1]}{path}"


def test_allowed_private_destination_is_pinned_and_keeps_the_host_name(inbox: _Server, face: str) -> None:
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        response = client.post(_url(inbox, "/inbox"), json={"type": "ANNOUNCEMENT"})

    assert response.json() == {"ok": True}
    # "inbox.test" cannot be resolved by the system: the connection went to the validated literal IP,
    # while the request still named the original host.
    assert inbox.seen.hosts == [f"inbox.test:{inbox.server_address[1]}"]
    assert resolver.calls == [("inbox.test", inbox.server_address[1])]


def test_loopback_is_blocked_without_the_development_flag(inbox: _Server, face: str) -> None:
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]})
    with client, blocked(face):
        client.post(_url(inbox, "/inbox"), json={})
    assert inbox.seen.connections == 0


def test_resolver_is_called_once_per_new_connection(inbox: _Server, face: str) -> None:
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        client.post(_url(inbox, "/a"), json={})
        client.post(_url(inbox, "/b"), json={})  # kept-alive connection: no new resolution
        assert len(resolver.calls) == 1
        client.post(_url(inbox, "/close"), json={})
        client.post(_url(inbox, "/c"), json={})  # the server closed it: new connection, new resolution

    assert inbox.seen.connections == 2
    assert len(resolver.calls) == 2


def test_a_connection_the_server_dropped_while_idle_is_not_reused(inbox: _Server, face: str) -> None:
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        assert client.post(_url(inbox, "/quiet-close"), json={}).status_code == 200
        time.sleep(0.2)  # the server has closed its end by now
        assert client.post(_url(inbox, "/a"), json={}).json() == {"ok": True}
    assert inbox.seen.connections == 2
    assert len(resolver.calls) == 2


def test_a_request_the_server_drops_on_a_reused_connection_is_retried_once_anew(
    inbox: _Server, face: str
) -> None:
    """The server closes a kept-alive connection just as the next request goes out (no answer byte):
    the worker's transport sends it again once, on a new connection resolved anew."""
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        assert client.post(_url(inbox, "/then-drop"), json={}).status_code == 200
        assert client.post(_url(inbox, "/a"), json={}).json() == {"ok": True}
    assert inbox.seen.paths == ["/then-drop", "/a", "/a"]
    assert inbox.seen.connections == 2 and len(resolver.calls) == 2


@pytest.mark.parametrize("path", ["/chunked", "/until-close"])
def test_chunked_and_close_delimited_answers_are_read_whole(inbox: _Server, face: str, path: str) -> None:
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        assert client.post(_url(inbox, path), json={}).json() == {"sent": True}
        assert client.post(_url(inbox, "/a"), json={}).json() == {"ok": True}  # and the client goes on


def test_header_injection_is_refused_before_sending(inbox: _Server, face: str) -> None:
    """``webhook-id`` carries the delivery id from the queue message: CR/LF in it never reaches the wire."""
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client, fails(face, raises=httpx.LocalProtocolError, result=Unreachable):
        client.post(_url(inbox, "/a"), json={}, msg_id="d-1\r\nX-Injected: 1")
    assert inbox.seen.paths == []


def test_redirect_is_returned_not_followed(inbox: _Server, face: str) -> None:
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        response = client.post(_url(inbox, "/redirect"), json={})

    assert response.status_code == 302
    if response.headers is not None:
        assert response.headers["Location"] == "http://127.0.0.1:1/elsewhere"
    assert inbox.seen.paths == ["/redirect"]


def test_oversized_body_raises_response_too_large(inbox: _Server, face: str) -> None:
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        with fails(face, raises=ResponseTooLarge, result=Unreadable):
            client.post(_url(inbox, "/big"), json={})
        assert len(client.post(_url(inbox, "/exactly-cap"), json={}).content) == MAX_RESPONSE_BYTES


def test_encoded_body_is_neither_decoded_nor_uncapped(inbox: _Server, face: str) -> None:
    client, _ = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client:
        response = client.post(_url(inbox, "/gzip"), json={})

    assert len(response.content) < MAX_RESPONSE_BYTES  # the raw gzip bytes, not 10 MB of zeros
    if response.headers is not None:
        assert "content-encoding" not in response.headers


# --- TLS: SNI and certificate verification use the original name --------------------------------


def _self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_inbox(tmp_path: Path) -> Iterator[tuple[_Server, ssl.SSLContext]]:
    cert_path, key_path = _self_signed(tmp_path, "inbox.test")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_path, key_path)
    server = _Server(tls=server_ctx)

    def record_sni(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        server.seen.sni.append(name)

    server_ctx.sni_callback = record_sni
    client_ctx = ssl.create_default_context(cafile=str(cert_path))
    for running in _serve(server):
        yield running, client_ctx


def test_tls_uses_the_original_name_for_sni_and_verification(
    tls_inbox: tuple[_Server, ssl.SSLContext], face: str
) -> None:
    server, client_ctx = tls_inbox
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    with _transport_client(face, resolver=resolver, verify=client_ctx) as client:
        response = client.post(_url(server, "/inbox", scheme="https"), json={})

    assert response.json() == {"ok": True}  # verified against a cert valid for "inbox.test" only
    assert server.seen.sni == ["inbox.test"]


def test_tls_certificate_for_another_name_is_rejected(
    tls_inbox: tuple[_Server, ssl.SSLContext], face: str
) -> None:
    server, client_ctx = tls_inbox
    resolver = DictResolver({"other.test": ["127.0.0.1"]})
    client = _transport_client(face, resolver=resolver, verify=client_ctx)
    with client, fails(face, raises=httpx.ConnectError, result=Unreachable):
        client.post(_url(server, "/inbox", host="other.test", scheme="https"), json={})


def test_timeout_is_passed_through_to_the_connection(face: str) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        client = _webhook_client(
            face, allow_private=True, timeout=0.3, resolver=DictResolver({"inbox.test": ["127.0.0.1"]})
        )
        started = time.monotonic()
        with client, fails(face, raises=httpx.ReadTimeout, result=TimedOut):
            client.post(f"http://inbox.test:{port}/", json={})
    assert time.monotonic() - started < 2


# --- the worker's poster: one event loop, bounded concurrency, kept-alive connections -------------


def test_poster_bounds_concurrency_and_reuses_connections(inbox: _Server) -> None:
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    transport = make_webhook_transport(
        allow_private=True, rules=LOOPBACK, resolver=resolver, max_connections=4
    )
    poster = WebhookPoster(transport, secret=SECRET, concurrency=4, timeout=2)
    try:
        items = [Outgoing(url=_url(inbox, f"/p{i}"), body=b"{}", msg_id=f"d-{i}") for i in range(40)]
        first = poster.post_all(items[:20])
        second = poster.post_all(items[20:])
    finally:
        poster.close()

    answers = first + second
    assert all(isinstance(a, Answered) and a.status_code == 200 for a in answers)
    assert sorted(inbox.seen.paths) == sorted(f"/p{i}" for i in range(40))
    # Never more connections than POSTs in flight, each resolved at most once (connections opened at
    # the same time share the resolution in flight for their name); the second batch reuses them.
    assert 1 <= inbox.seen.connections <= 4
    assert 1 <= len(resolver.calls) <= inbox.seen.connections


def test_poster_answers_one_result_per_item_in_order_failures_as_values(inbox: _Server) -> None:
    resolver = DictResolver({"inbox.test": ["127.0.0.1"], "hook.example": ["169.254.169.254"]})
    transport = make_webhook_transport(allow_private=True, rules=LOOPBACK, resolver=resolver)
    poster = WebhookPoster(transport, secret=SECRET, concurrency=2, timeout=0.5)
    try:
        results = poster.post_all(
            [
                Outgoing(url="http://hook.example/", body=b"{}", msg_id="d-1"),
                Outgoing(url=_url(inbox, "/a"), body=b"{}", msg_id="d-2"),
                Outgoing(url="ftp://inbox.test/", body=b"{}", msg_id="d-3"),
            ]
        )
    finally:
        poster.close()
    assert [type(r) for r in results] == [Blocked, Answered, Blocked]
    assert inbox.seen.paths == ["/a"]


# --- a hostile receiver: endless heads, names that never resolve, thousands of hosts ---


class _RawInbox:
    """A loopback receiver speaking raw bytes: each request is answered with the parts of ``answer()``,
    as fast as the client takes them, until they run out, the client leaves, or ten seconds pass.
    ``client_left`` is set once a client has closed its connection."""

    def __init__(self, answer: Callable[[], Iterable[bytes]]) -> None:
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self.client_left = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> _RawInbox:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        deadline = time.monotonic() + 10
        with connection:
            connection.settimeout(5)
            try:
                request = b""
                while b"\r\n\r\n" not in request:
                    received = connection.recv(65536)
                    if not received:
                        return
                    request += received
                for part in self._answer():
                    if self._stop.is_set() or time.monotonic() > deadline:
                        return
                    connection.sendall(part)
                while connection.recv(65536):  # kept alive until the client closes it
                    pass
            except TimeoutError:
                return
            except OSError:  # the client closed while we were still sending
                pass
            self.client_left.set()


def _endless(first: bytes, then: bytes) -> Callable[[], Iterator[bytes]]:
    def parts() -> Iterator[bytes]:
        yield first
        while True:
            yield then

    return parts


def _head(status: bytes, headers: list[bytes]) -> Callable[[], list[bytes]]:
    answer = b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
    return lambda: [answer + b"Content-Type: application/json\r\nContent-Length: 4\r\n\r\ntrue"]


HOSTILE_HEADS = {
    "endless headers": _endless(b"HTTP/1.1 200 OK\r\n", b"X-Filler: " + b"a" * 40 + b"\r\n"),
    "one endless header value": _endless(b"HTTP/1.1 200 OK\r\nX-Endless: ", b"a" * 4096),
    "endless interim answers": _endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    "too many headers": _head(b"200 OK", [b"X-H%d: 1" % i for i in range(150)]),
    "an oversized head in one piece": _head(b"200 OK", [b"X-B%d: " % i + b"b" * 1500 for i in range(12)]),
}


@pytest.mark.parametrize("answer", HOSTILE_HEADS.values(), ids=HOSTILE_HEADS.keys())
def test_a_head_over_the_caps_is_unreadable_and_the_connection_closed(
    answer: Callable[[], Iterable[bytes]], face: str
) -> None:
    """Like common servers: 16 KiB of head, 100 headers. Without the caps an endless head holds the
    connection (and memory) until the timeout, and an oversized one is read as an answer."""
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=True, timeout=3, resolver=resolver)
    with _RawInbox(answer) as hostile, client:
        started = time.monotonic()
        with fails(face, raises=HeadersTooLarge, result=Unreadable) as caught:
            client.post(f"http://inbox.test:{hostile.port}/", json={})
        assert time.monotonic() - started < 1.5  # the cap ended it, not the timeout
        assert hostile.client_left.wait(2)  # closed at once, not kept alive
    if face == "sender":
        assert caught.value == Unreadable("HeadersTooLarge")  # uncertain: retried, never acknowledged


def test_a_head_within_the_caps_is_read(face: str) -> None:
    headers = [b"X-H%d: " % i + b"h" * 100 for i in range(95)]  # about 11 KiB in 97 headers
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=True, timeout=3, resolver=resolver)
    with _RawInbox(_head(b"200 OK", headers)) as receiver, client:
        assert client.post(f"http://inbox.test:{receiver.port}/", json={}).json() is True


class StuckResolver(DictResolver):
    """``DictResolver`` whose ``stuck`` names never answer (a DNS server dropping the queries) until
    ``release`` is set or ten seconds pass; then they fail like SERVFAIL."""

    def __init__(self, answers: dict[str, list[str]], *, stuck: set[str]) -> None:
        super().__init__(answers)
        self.stuck = stuck
        self.release = threading.Event()

    def __call__(self, host: str, port: int) -> list[str]:
        if host not in self.stuck:
            return super().__call__(host, port)
        self.calls.append((host, port))
        self.release.wait(10)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


def test_a_name_that_never_resolves_is_unreachable_within_the_timeout(face: str) -> None:
    resolver = StuckResolver({}, stuck={"stuck.test"})
    try:
        with _webhook_client(face, allow_private=False, timeout=0.5, resolver=resolver) as client:
            started = time.monotonic()
            with fails(face, raises=httpx.ConnectError, result=Unreachable) as caught:
                client.post("http://stuck.test/", json={})
            assert time.monotonic() - started < 2
    finally:
        resolver.release.set()
    assert not isinstance(caught.value, EgressBlocked | Blocked)  # retryable, not a policy verdict


def test_stuck_names_starve_neither_other_posts_nor_the_default_executor(inbox: _Server, face: str) -> None:
    """Forty POSTs to four names that never resolve, beside POSTs to a live receiver. The stuck names
    hold one resolver thread each (not one per POST) and never the loop's default executor, where the
    pause gate reads the graph; without that the live POSTs and the gate would wait behind them."""
    stuck = {f"stuck-{i}.test" for i in range(4)}
    resolver = StuckResolver({"inbox.test": ["127.0.0.1"]}, stuck=stuck)
    urls = [f"http://{name}/" for name in sorted(stuck) for _ in range(10)]
    urls += [_url(inbox, f"/live-{i}") for i in range(4)]
    transport = make_webhook_transport(allow_private=True, rules=LOOPBACK, resolver=resolver)
    try:
        if face == "post":
            outcomes: list[object] = list(_post_concurrently_probing_the_default_executor(transport, urls))
        else:
            outcomes = list(_post_all_within(transport, urls, seconds=5, release=resolver.release))
    finally:
        resolver.release.set()

    expected_stuck = httpx.ConnectError if face == "post" else Unreachable
    assert all(isinstance(outcome, expected_stuck) for outcome in outcomes[:40]), outcomes[:40]
    for outcome in outcomes[40:]:
        assert outcome == (200 if face == "post" else Answered(200, b'{"ok": true}', "application/json"))
    assert sorted(inbox.seen.paths) == [f"/live-{i}" for i in range(4)]
    assert sorted(host for host, _ in resolver.calls if host in stuck) == sorted(stuck)  # one each


def _post_concurrently_probing_the_default_executor(
    transport: AsyncSafeTransport, urls: list[str]
) -> list[object]:
    """Every URL posted at once; meanwhile the loop's default executor must answer within a second."""

    async def run() -> list[object]:
        loop = asyncio.get_running_loop()
        posts = [asyncio.ensure_future(transport.post(url, b"{}", [], timeout=0.5)) for url in urls]
        await asyncio.sleep(0.1)  # every resolution has started by now
        async with asyncio.timeout(1):  # what SendGate.allows does to read the graph
            assert await loop.run_in_executor(None, lambda: "read") == "read"
        async with asyncio.timeout(3):
            answers = await asyncio.gather(*posts, return_exceptions=True)
        await transport.aclose()
        return [answer[0] if isinstance(answer, tuple) else answer for answer in answers]

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def _post_all_within(
    transport: AsyncSafeTransport, urls: list[str], *, seconds: float, release: threading.Event
) -> list[PostResult]:
    """``WebhookPoster.post_all`` of every URL at once, which must return within ``seconds``; then
    ``release`` frees the stuck resolutions, so a run that failed ends too."""
    poster = WebhookPoster(transport, secret=SECRET, concurrency=64, timeout=0.5)
    items = [Outgoing(url=url, body=b"{}", msg_id=f"d-{i}") for i, url in enumerate(urls)]
    results: list[PostResult] = []
    caller = threading.Thread(target=lambda: results.extend(poster.post_all(items)), daemon=True)
    caller.start()
    caller.join(seconds)
    returned = not caller.is_alive()
    release.set()
    caller.join()
    poster.close()
    assert returned, "post_all waited for names that never resolve"
    return results


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


FD_SLACK = 2  # descriptors an event loop may open lazily on its first connection


def _within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_idle_connections_stay_bounded_across_many_hosts(inbox: _Server, face: str) -> None:
    """Sixty destinations in turn, each leaving a kept-alive connection: at most ``max_connections`` of
    them stay open in total (ours and the server's ends of the sockets), the oldest closed first."""
    hosts = {f"h{i}.test": ["127.0.0.1"] for i in range(60)}
    transport = make_webhook_transport(
        allow_private=True, rules=LOOPBACK, resolver=DictResolver(hosts), max_connections=4
    )
    with _over(face, transport, timeout=2) as client:
        fds_before = _open_fds()
        for host in hosts:
            assert client.post(_url(inbox, "/a", host=host), json={}).json() == {"ok": True}
            assert transport.open_connections <= 4 + 1  # the one just pushed out may still be closing
        client.idle(0.05)
        assert transport.open_connections <= 4
        assert _within(2, lambda: _open_fds() - fds_before <= 2 * 4 + FD_SLACK)  # both ends of each
        assert client.post(_url(inbox, "/again", host="h59.test"), json={}).json() == {"ok": True}
    assert inbox.seen.connections == 60  # the most recent destination's connection was reused


def test_idle_connections_are_closed_at_keepalive_expiry_without_further_posts(
    inbox: _Server, face: str
) -> None:
    hosts = {f"h{i}.test": ["127.0.0.1"] for i in range(3)}
    transport = AsyncSafeTransport(
        allow_private=True, rules=LOOPBACK, resolver=DictResolver(hosts), keepalive_expiry=0.5
    )
    with _over(face, transport, timeout=2) as client:
        fds_before = _open_fds()
        for host in hosts:
            client.post(_url(inbox, "/a", host=host), json={})
        assert transport.open_connections == 3
        client.idle(1.2)
        assert transport.open_connections == 0
        assert _within(2, lambda: _open_fds() <= fds_before + FD_SLACK)  # the server's ends closed too
