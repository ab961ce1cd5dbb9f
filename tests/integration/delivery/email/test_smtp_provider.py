"""SmtpProvider against a real aiosmtpd server on loopback, scripted per recipient and per stage."""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import ipaddress
import logging
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from campaign_engine.delivery.email.provider import OutgoingEmail, ProviderConfigError, SendResult
from campaign_engine.delivery.email.smtp import SmtpProvider
from tests.conftest import free_port

SENDER = "Announcements <news@sender.test>"


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes
    connection: int
    tls: bool


@dataclass
class ScriptedHandler:
    """Answers like a mail server, with scripted refusals: per-RCPT replies, MAIL and end-of-data replies."""

    rcpt_replies: dict[str, str] = field(default_factory=dict)
    mail_reply: str | None = None
    data_reply: str = "250 OK: queued"
    drop_after_data: bool = False
    hang_after_data: float = 0.0
    received: list[Received] = field(default_factory=list)
    pipelining: bool = False

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname
        # aiosmtpd answers commands in order from its input buffer, so it can honestly offer RFC 2920.
        return [*responses[:-1], "250-PIPELINING", responses[-1]] if self.pipelining else responses

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        if self.mail_reply is not None:
            return self.mail_reply
        envelope.mail_from = address
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        reply = self.rcpt_replies.get(address.lower())
        if reply is not None:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        # Recorded first: whatever the client hears next, the server already holds the message.
        self.received.append(
            Received(
                envelope.mail_from,
                list(envelope.rcpt_tos),
                envelope.original_content,
                id(server),
                session.ssl is not None,
            )
        )
        if self.drop_after_data:
            server.transport.abort()
        if self.hang_after_data:
            await asyncio.sleep(self.hang_after_data)
        return self.data_reply


_OPEN: list[SmtpProvider] = []


def _close_providers() -> None:
    """Sessions outlive a batch: QUIT them before the test's server stops."""
    while _OPEN:
        _OPEN.pop().close()


@dataclass
class SmtpServer:
    handler: ScriptedHandler
    port: int
    ca_file: Path | None = None


@pytest.fixture(params=[False, True], ids=["lock-step", "pipelining"])
def smtp_server(request: pytest.FixtureRequest) -> Iterator[SmtpServer]:
    """Every scenario runs against a relay without PIPELINING and one that offers it."""
    handler = ScriptedHandler(pipelining=request.param)
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield SmtpServer(handler, controller.port)
    finally:
        _close_providers()
        controller.stop()


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"mailer",
        b"s3cret",
    )
    return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535 itself


@pytest.fixture(params=[False, True], ids=["lock-step", "pipelining"])
def tls_smtp_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SmtpServer]:
    cert_file, key_file = _self_signed(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    handler = ScriptedHandler(pipelining=request.param)
    controller = Controller(
        handler,
        hostname="127.0.0.1",
        port=free_port(),
        tls_context=server_ctx,
        authenticator=_authenticate,
        auth_require_tls=True,
    )
    controller.start()
    try:
        yield SmtpServer(handler, controller.port, ca_file=cert_file)
    finally:
        _close_providers()
        controller.stop()


def provider_for(server: SmtpServer, **kwargs: Any) -> SmtpProvider:
    options: dict[str, Any] = {"timeout": 5.0, **kwargs}
    if server.ca_file is not None:
        options.setdefault("ssl_context", ssl.create_default_context(cafile=str(server.ca_file)))
    provider = SmtpProvider(host="127.0.0.1", port=server.port, sender=SENDER, **options)
    _OPEN.append(provider)
    return provider


def outgoing(n: int, *, to: str | None = None, **overrides: Any) -> OutgoingEmail:
    fields: dict[str, Any] = {
        "key": f"p{n}",
        "to": to or f"user{n}@rcpt.test",
        "subject": f"Subject {n} — café",
        "html": f"<p>Hello {n}</p>",
        "text": f"Hello {n}",
        "headers": {
            "List-Unsubscribe": f"<https://c.test/u/{n}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
        **overrides,
    }
    return OutgoingEmail(**fields)


def outcomes(results: list[SendResult]) -> list[tuple[str, str, str | None]]:
    return [(r.key, r.outcome, r.reason) for r in results]


def parse(received: Received) -> Message:
    return email.message_from_bytes(received.content)


# --- accepted -------------------------------------------------------------------------------------------


def test_batch_goes_over_one_connection_as_multipart_alternative(smtp_server: SmtpServer) -> None:
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert outcomes(results) == [("p1", "accepted", None), ("p2", "accepted", None)]
    received = smtp_server.handler.received
    assert len({r.connection for r in received}) == 1
    assert [r.rcpt_tos for r in received] == [["user1@rcpt.test"], ["user2@rcpt.test"]]
    assert received[0].mail_from == "news@sender.test"
    msg = parse(received[0])
    assert msg["From"] == SENDER
    assert msg["To"] == "user1@rcpt.test"
    assert str(email.header.make_header(email.header.decode_header(msg["Subject"]))) == "Subject 1 — café"
    assert msg["Message-ID"] == results[0].provider_message_id
    assert msg["List-Unsubscribe"] == "<https://c.test/u/1>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg.get_content_type() == "multipart/alternative"
    parts = {p.get_content_type(): p.get_payload(decode=True) for p in msg.walk() if not p.is_multipart()}
    assert parts["text/plain"].strip() == b"Hello 1"  # type: ignore[union-attr]
    assert parts["text/html"].strip() == b"<p>Hello 1</p>"  # type: ignore[union-attr]


def test_a_long_list_unsubscribe_url_is_sent_verbatim(smtp_server: SmtpServer) -> None:
    """Mail clients parse ``List-Unsubscribe: <url>`` literally; a folded RFC 2047 word breaks one-click."""
    url = "<https://campaigns.example.org/campaigns/unsubscribe?token=" + "x" * 150 + ">"
    message = outgoing(
        1, headers={"List-Unsubscribe": url, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    )
    provider_for(smtp_server).send_batch([message])
    raw = smtp_server.handler.received[0].content
    assert f"List-Unsubscribe: {url}".encode() in raw


def test_leading_dots_survive_transparency(smtp_server: SmtpServer) -> None:
    text = "line\n.\n..two\n.end"
    results = provider_for(smtp_server).send_batch([outgoing(1, text=text)])
    assert results[0].outcome == "accepted"
    plain = next(
        p for p in parse(smtp_server.handler.received[0]).walk() if p.get_content_type() == "text/plain"
    )
    assert plain.get_payload(decode=True).replace(b"\r\n", b"\n").rstrip(b"\n") == text.encode()  # type: ignore[union-attr]


# --- refusals before DATA -------------------------------------------------------------------------------


def test_rcpt_refusals_are_rejected_or_throttled_and_the_rest_still_goes(smtp_server: SmtpServer) -> None:
    smtp_server.handler.rcpt_replies = {
        "gone@rcpt.test": "550 5.1.1 No such user",
        "busy@rcpt.test": "451 4.7.1 Try again later",
        "full@rcpt.test": "452 4.2.2 Mailbox full",
    }
    batch = [
        outgoing(1, to="gone@rcpt.test"),
        outgoing(2, to="busy@rcpt.test"),
        outgoing(3),
        outgoing(4, to="full@rcpt.test"),
        outgoing(5),
    ]
    results = provider_for(smtp_server).send_batch(batch)
    assert outcomes(results) == [
        ("p1", "rejected", "rcpt:550"),
        ("p2", "throttled", "rcpt:451"),
        ("p3", "accepted", None),
        ("p4", "throttled", "rcpt:452"),
        ("p5", "accepted", None),
    ]
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["user3@rcpt.test"], ["user5@rcpt.test"]]


def test_421_at_mail_throttles_this_and_every_later_message(smtp_server: SmtpServer) -> None:
    smtp_server.handler.mail_reply = "421 4.3.2 Service shutting down"
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert outcomes(results) == [("p1", "throttled", "mail:421"), ("p2", "throttled", "not_sent")]
    assert smtp_server.handler.received == []


# --- after DATA: uncertain ------------------------------------------------------------------------------


def test_drop_after_data_is_uncertain_and_later_messages_are_not_sent(smtp_server: SmtpServer) -> None:
    smtp_server.handler.drop_after_data = True
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert [(r.key, r.outcome) for r in results] == [("p1", "uncertain"), ("p2", "throttled")]
    assert results[0].reason is not None
    assert results[0].reason.startswith("after_data:")
    assert results[1].reason == "not_sent"
    assert len(smtp_server.handler.received) == 1  # the server had it: a retry could duplicate it


@pytest.mark.parametrize("reply", ["451 4.3.0 Queue trouble", "554 5.7.1 Content rejected"])
def test_failure_reply_after_data_is_uncertain(smtp_server: SmtpServer, reply: str) -> None:
    smtp_server.handler.data_reply = reply
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    code = reply.split()[0]
    assert outcomes(results) == [
        ("p1", "uncertain", f"after_data:{code}"),
        ("p2", "uncertain", f"after_data:{code}"),
    ]


def test_timeout_waiting_for_the_final_reply_is_uncertain(smtp_server: SmtpServer) -> None:
    smtp_server.handler.hang_after_data = 1.0
    results = provider_for(smtp_server, timeout=0.3).send_batch([outgoing(1), outgoing(2)])
    assert [(r.key, r.outcome) for r in results] == [("p1", "uncertain"), ("p2", "throttled")]
    assert len(smtp_server.handler.received) == 1


# --- nothing sent ---------------------------------------------------------------------------------------


def test_connection_refused_throttles_everything() -> None:
    provider = SmtpProvider(host="127.0.0.1", port=free_port(), sender=SENDER, timeout=2.0)
    results = provider.send_batch([outgoing(1), outgoing(2)])
    assert {r.outcome for r in results} == {"throttled"}
    assert all(r.reason is not None and r.reason.startswith("connect:") for r in results)


def test_unsafe_messages_are_rejected_before_sending(smtp_server: SmtpServer) -> None:
    batch = [
        outgoing(1, to="x@rcpt.test>\r\nRCPT TO:<y@rcpt.test"),
        outgoing(2, headers={"Subject": "override"}),
        outgoing(3, headers={"X-Evil": "a\r\nBcc: y@rcpt.test"}),
        outgoing(4),
    ]
    results = provider_for(smtp_server).send_batch(batch)
    assert outcomes(results) == [
        ("p1", "rejected", "invalid_message"),
        ("p2", "rejected", "invalid_message"),
        ("p3", "rejected", "invalid_message"),
        ("p4", "accepted", None),
    ]
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["user4@rcpt.test"]]


# --- TLS ------------------------------------------------------------------------------------------------


def test_starttls_required_but_not_offered_is_a_config_error(smtp_server: SmtpServer) -> None:
    provider = provider_for(smtp_server, starttls="require")
    with pytest.raises(ProviderConfigError, match="STARTTLS"):
        provider.verify()
    # send_batch never raises (the port contract): nothing was sent, so every message is throttled.
    [result] = provider.send_batch([outgoing(1)])
    assert (result.outcome, result.reason) == ("throttled", "connect:ProviderConfigError")
    assert smtp_server.handler.received == []


def test_starttls_is_used_when_offered_and_login_happens_over_tls(tls_smtp_server: SmtpServer) -> None:
    provider = provider_for(tls_smtp_server, username="mailer", password="s3cret")
    provider.verify()
    results = provider.send_batch([outgoing(1)])
    assert outcomes(results) == [("p1", "accepted", None)]
    assert tls_smtp_server.handler.received[0].tls


def test_starttls_off_sends_in_clear(tls_smtp_server: SmtpServer) -> None:
    results = provider_for(tls_smtp_server, starttls="off").send_batch([outgoing(1)])
    assert results[0].outcome == "accepted"
    assert not tls_smtp_server.handler.received[0].tls


def test_bad_credentials_are_a_config_error(tls_smtp_server: SmtpServer) -> None:
    with pytest.raises(ProviderConfigError, match="credentials"):
        provider_for(tls_smtp_server, username="mailer", password="wrong").verify()


def test_untrusted_certificate_is_not_accepted(tls_smtp_server: SmtpServer) -> None:
    provider = provider_for(tls_smtp_server, ssl_context=ssl.create_default_context())
    results = provider.send_batch([outgoing(1)])
    assert results[0].outcome == "throttled"  # nothing sent: the TLS handshake failed first
    assert tls_smtp_server.handler.received == []


def test_addresses_never_reach_logs_or_reasons(
    smtp_server: SmtpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    smtp_server.handler.rcpt_replies = {"gone@rcpt.test": "550 5.1.1 No such user gone@rcpt.test"}
    results = provider_for(smtp_server).send_batch([outgoing(1, to="gone@rcpt.test"), outgoing(2)])
    smtp_server.handler.drop_after_data = True
    results += provider_for(smtp_server).send_batch([outgoing(3)])
    ours = [r for r in caplog.records if r.name.startswith("campaign_engine")]
    assert ours  # the connection loss was logged
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in ours) + " ".join(str(r) for r in results)
    assert "@rcpt.test" not in logged
