"""What the SmtpProvider tests share: a real aiosmtpd relay scripted per recipient and per stage (with
or without PIPELINING, STARTTLS and login), the providers a test opened, and the messages it sent and
what became of them."""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import ipaddress
import ssl
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from campaign_engine.delivery.email.provider import OutgoingEmail, SendResult
from campaign_engine.delivery.email.smtp import SmtpProvider

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
