"""Safe egress against a real loopback HTTP(S) server, through both faces: pinning and the host name,
connection reuse and retries, bodies and their caps, TLS with the original name, and the worker's
poster (one event loop, bounded concurrency, kept-alive connections)."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

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
    TimedOut,
    Unreachable,
    Unreadable,
)
from campaign_engine.egress.transport import (
    MAX_RESPONSE_BYTES,
    ResponseTooLarge,
    make_webhook_transport,
)
from tests.support.egress import (
    LOOPBACK,
    SECRET,
    DictResolver,
    _client,
    _serve,
    _Server,
    _transport_client,
    _url,
    _webhook_client,
    blocked,
    fails,
)


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
