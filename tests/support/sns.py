"""A test SNS: a certificate authority, a signing certificate it issued, envelopes signed the way SNS signs
them (SignatureVersion 1 = SHA1withRSA, 2 = SHA256withRSA), and a loopback HTTPS stand-in for
``sns.<region>.amazonaws.com`` that serves the signing certificate and records subscription confirmations.

Only tests trust this CA: they hand the API an ``SnsHttp`` whose TLS context trusts it and whose resolver
points the SNS host name at the stand-in. Production code has no switch for any of it.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from campaign_engine.feedback.sns import string_to_sign
from campaign_engine.feedback.sns_http import SnsHttp

REGION = "us-east-1"
TOPIC_ARN = f"arn:aws:sns:{REGION}:123456789012:ses-feedback"
SNS_HOST = f"sns.{REGION}.amazonaws.com"
CERT_URL = f"https://{SNS_HOST}/SimpleNotificationService-0000000000000000000000.pem"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(
    subject: str,
    key: rsa.RSAPrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: rsa.RSAPrivateKey,
    *,
    ca: bool,
    dns: str | None = None,
) -> x509.Certificate:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer.subject if issuer is not None else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=365 * 30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if dns is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True)
class SnsAuthority:
    ca: x509.Certificate
    signing_key: rsa.RSAPrivateKey
    signing_cert: x509.Certificate
    tls_key: rsa.RSAPrivateKey
    tls_cert: x509.Certificate

    def client_context(self) -> ssl.SSLContext:
        """A TLS client context trusting only the test CA."""
        return ssl.create_default_context(cadata=self.ca.public_bytes(serialization.Encoding.PEM).decode())

    def signing_pem(self) -> bytes:
        return self.signing_cert.public_bytes(serialization.Encoding.PEM)

    def sign(
        self, envelope: dict[str, Any], *, version: str = "2", key: rsa.RSAPrivateKey | None = None
    ) -> dict[str, Any]:
        """``envelope`` with SignatureVersion and Signature, signed over SNS's canonical string."""
        signed = {**envelope, "SignatureVersion": version}
        digest = hashes.SHA1() if version == "1" else hashes.SHA256()
        signature = (key or self.signing_key).sign(string_to_sign(signed), padding.PKCS1v15(), digest)
        signed["Signature"] = base64.b64encode(signature).decode()
        return signed


@cache
def authority() -> SnsAuthority:
    """One test CA per test process (RSA key generation costs ~0.1 s a key)."""
    ca_key = _key()
    ca = _issue("campaign-engine test CA", ca_key, None, ca_key, ca=True)
    signing_key = _key()
    signing_cert = _issue("sns.amazonaws.com", signing_key, ca, ca_key, ca=False)
    tls_key = _key()
    tls_cert = _issue(SNS_HOST, tls_key, ca, ca_key, ca=False, dns=SNS_HOST)
    return SnsAuthority(ca, signing_key, signing_cert, tls_key, tls_cert)


def sns_timestamp(at: datetime | None = None) -> str:
    """SNS's Timestamp format (``2026-03-01T12:00:00.000Z``) of ``at``, by default now."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def notification(message: dict[str, Any] | str, *, topic: str = TOPIC_ARN, cert_url: str = CERT_URL,
                 subject: str | None = None, message_id: str | None = None,
                 timestamp: str | None = None) -> dict[str, Any]:  # fmt: skip
    """An unsigned SNS Notification envelope around an SES notification, sent now unless ``timestamp``."""
    envelope: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": message_id or str(uuid.uuid4()),
        "TopicArn": topic,
        "Message": message if isinstance(message, str) else json.dumps(message),
        "Timestamp": timestamp or sns_timestamp(),
        "SigningCertURL": cert_url,
        "UnsubscribeURL": f"https://{SNS_HOST}/?Action=Unsubscribe&SubscriptionArn={topic}:sub",
    }
    if subject is not None:
        envelope["Subject"] = subject
    return envelope


def subscription_confirmation(*, topic: str = TOPIC_ARN, subscribe_host: str = SNS_HOST) -> dict[str, Any]:
    token = uuid.uuid4().hex * 2
    return {
        "Type": "SubscriptionConfirmation",
        "MessageId": str(uuid.uuid4()),
        "Token": token,
        "TopicArn": topic,
        "Message": (
            f"You have chosen to subscribe to the topic {topic}.\n"
            "To confirm the subscription, visit the SubscribeURL included in this message."
        ),
        "SubscribeURL": f"https://{subscribe_host}/?Action=ConfirmSubscription&TopicArn={topic}&Token={token}",
        "Timestamp": sns_timestamp(),
        "SigningCertURL": CERT_URL,
    }


def ses_bounce(address: str, *, bounce_type: str = "Permanent", feedback_id: str | None = None,
               message_id: str = "0100018e-ses-message-id") -> dict[str, Any]:  # fmt: skip
    """An SES bounce notification, shaped as AWS documents it."""
    return {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": bounce_type,
            "bounceSubType": "General",
            "bouncedRecipients": [
                {
                    "emailAddress": address,
                    "action": "failed",
                    "status": "5.1.1",
                    "diagnosticCode": "smtp; 550 5.1.1 user unknown",
                }
            ],
            "timestamp": "2026-03-01T12:00:00.000Z",
            "feedbackId": feedback_id or f"0100018e-{uuid.uuid4()}-000000",
            "remoteMtaIp": "192.0.2.10",
            "reportingMTA": "dsn; a8-70.smtp-out.amazonses.com",
        },
        "mail": {
            "timestamp": "2026-03-01T11:59:58.000Z",
            "source": "news@campaigns.test",
            "sourceArn": "arn:aws:ses:us-east-1:123456789012:identity/campaigns.test",
            "sendingAccountId": "123456789012",
            "messageId": message_id,
            "destination": [address],
        },
    }


def ses_complaint(
    address: str,
    *,
    feedback_id: str | None = None,
    message_id: str = "0100018e-ses-message-id",
    header_message_id: str | None = None,
) -> dict[str, Any]:
    mail: dict[str, Any] = {
        "timestamp": "2026-03-01T11:59:58.000Z",
        "source": "news@campaigns.test",
        "sendingAccountId": "123456789012",
        "messageId": message_id,
        "destination": [address],
    }
    if header_message_id is not None:
        mail["headersTruncated"] = False
        mail["commonHeaders"] = {
            "from": ["news@campaigns.test"],
            "to": [address],
            "messageId": header_message_id,
        }
    return {
        "notificationType": "Complaint",
        "complaint": {
            "userAgent": "ExampleCorp Feedback Loop (V0.01)",
            "complainedRecipients": [{"emailAddress": address}],
            "complaintFeedbackType": "abuse",
            "arrivalDate": "2026-03-01T12:00:00.000Z",
            "timestamp": "2026-03-01T12:00:01.000Z",
            "feedbackId": feedback_id or f"0100018e-{uuid.uuid4()}-000000",
        },
        "mail": mail,
    }


@dataclass
class SnsHostStandin:
    """The loopback ``sns.<region>.amazonaws.com``: what it was asked, and the client that reaches it."""

    port: int
    requests: list[str] = field(default_factory=list)
    certificate_served: bytes = b""
    certificate_delay: float = 0.0  # seconds before each certificate answer: a slow SNS host

    def client(self, *, timeout: float = 2.0) -> SnsHttp:
        return SnsHttp(
            timeout=timeout,
            verify=authority().client_context(),
            resolver=lambda host, port: ["127.0.0.1"],
            allow_private=True,
            port=self.port,
        )

    @property
    def confirmations(self) -> list[str]:
        return [path for path in self.requests if "Action=ConfirmSubscription" in path]

    @property
    def certificate_fetches(self) -> list[str]:
        return [path for path in self.requests if path.endswith(".pem")]


@contextmanager
def sns_host_standin() -> Iterator[SnsHostStandin]:
    auth = authority()
    standin = SnsHostStandin(port=0, certificate_served=auth.signing_pem())

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            standin.requests.append(f"{self.headers.get('Host')}{self.path}")
            if self.path.endswith("-missing.pem"):
                self.send_error(404)
                return
            if self.path.endswith(".pem"):
                time.sleep(standin.certificate_delay)
                body, kind = standin.certificate_served, "application/x-pem-file"
            elif "Action=ConfirmSubscription" in self.path:
                body, kind = b"<ConfirmSubscriptionResponse/>", "text/xml"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = Path(folder) / "tls.pem", Path(folder) / "tls.key"
        cert_file.write_bytes(auth.tls_cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem_key(auth.tls_key))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        standin.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name="sns-standin", daemon=True)
        thread.start()
        try:
            yield standin
        finally:
            server.shutdown()
            server.server_close()
