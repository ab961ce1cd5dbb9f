"""The SNS envelope SES feedback arrives in: topic allow-list, signing-certificate URL rules, signature.

A valid SNS signature proves only that *some* AWS topic sent the message; anyone can create a topic and
subscribe our endpoint. So a message is believed only for a configured topic ARN
(``SES_FEEDBACK_TOPIC_ARNS``), and its signing certificate only from ``https://sns.<region>.amazonaws.com``
of that ARN's region, under a ``.pem`` path. The string to sign is SNS's canonical one ("Key\\nValue\\n"
for the type's fields in order); SignatureVersion 1 is SHA1withRSA, 2 is SHA256withRSA.

Certificates come from a ``CertificateSource`` (``sns_certs.CertificateCache`` over
``SnsHttp.fetch_certificate``: TLS to the real SNS host through the egress policy; tests pass the same
class trusting a test CA). Nothing here can switch verification off. The signed ``Timestamp`` is checked
first, before any fetch: a captured message cannot be replayed once its dedup record has expired.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from campaign_engine.domain.types import Clock

__all__ = [
    "CertificateFetcher",
    "CertificateSource",
    "SignatureInvalid",
    "SnsMessage",
    "SnsVerifier",
    "parse_topic_arns",
    "sns_host_url",
]

_ARN = re.compile(r"arn:aws:sns:([a-z]{2}(?:-[a-z]+)+-\d):(\d{12}):([A-Za-z0-9_-]{1,256}(?:\.fifo)?)")
_NOTIFICATION_FIELDS = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
_CONFIRMATION_FIELDS = ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type")
_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {"1": hashes.SHA1, "2": hashes.SHA256}

CertificateFetcher = Callable[[str], bytes]  # PEM bytes of an already checked certificate URL
FUTURE_SKEW = timedelta(minutes=5)  # a Timestamp ahead of our clock by more than this is refused


class CertificateSource(Protocol):
    async def certificate(self, url: str) -> x509.Certificate:
        """The certificate at an already checked URL, or what fetching it raised."""
        ...


MessageType = Literal["Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"]


class SignatureInvalid(Exception):
    """The envelope is not a message we can believe: unknown topic, certificate URL outside the rules,
    bad signature or certificate. Final (HTTP 403); the message never quotes the envelope."""


def parse_topic_arns(text: str) -> frozenset[str]:
    """``SES_FEEDBACK_TOPIC_ARNS``: comma-separated SNS topic ARNs; raises ValueError naming the bad one's
    position (never echoing other values)."""
    arns = [part.strip() for part in text.split(",") if part.strip()]
    for index, arn in enumerate(arns):
        if not _ARN.fullmatch(arn):
            raise ValueError(
                f"entry {index + 1} is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)"
            )
    return frozenset(arns)


def region_of(topic_arn: str) -> str:
    match = _ARN.fullmatch(topic_arn)
    if match is None:
        raise SignatureInvalid("TopicArn is not an SNS topic ARN")
    return match.group(1)


def sns_host_url(url: str, region: str, *, certificate: bool) -> httpx.URL:
    """``url`` parsed, if it is an https URL on ``sns.<region>.amazonaws.com`` (default port, no
    credentials); a certificate URL must also name a ``.pem`` path with no query."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise SignatureInvalid("an SNS URL is not valid") from None
    if parsed.scheme != "https":
        raise SignatureInvalid("an SNS URL must use https")
    if parsed.userinfo or parsed.port not in (None, 443) or parsed.host != f"sns.{region}.amazonaws.com":
        raise SignatureInvalid("an SNS URL must name the SNS host of the topic's region")
    if certificate and (not parsed.path.endswith(".pem") or parsed.query or parsed.fragment):
        raise SignatureInvalid("the signing certificate URL must name a .pem file")
    return parsed


@dataclass(frozen=True)
class SnsMessage:
    type: MessageType
    message_id: str
    topic_arn: str
    message: str
    subscribe_url: str | None = None

    @property
    def region(self) -> str:
        return region_of(self.topic_arn)


def _field(envelope: dict[str, Any], name: str) -> str:
    value = envelope.get(name)
    if not isinstance(value, str) or not value:
        raise SignatureInvalid(f"the SNS envelope has no {name}")
    return value


def string_to_sign(envelope: dict[str, Any]) -> bytes:
    """SNS's canonical text: each signed field present, as ``name\\nvalue\\n``, in SNS's order."""
    fields = _NOTIFICATION_FIELDS if envelope.get("Type") == "Notification" else _CONFIRMATION_FIELDS
    parts = []
    for name in fields:
        if name == "Subject" and envelope.get(name) is None:
            continue  # the only optional signed field
        parts.append(f"{name}\n{_field(envelope, name)}\n")
    return "".join(parts).encode()


class SnsVerifier:
    """Verifies SNS envelopes for the configured topics, no older than ``max_age``."""

    def __init__(
        self,
        *,
        topic_arns: frozenset[str],
        certificates: CertificateSource,
        clock: Clock,
        max_age: timedelta,
    ) -> None:
        self._topics = topic_arns
        self._certificates = certificates
        self._clock = clock
        self._max_age = max_age

    async def verify(self, envelope: Any) -> SnsMessage:
        """The verified message. Raises ``SignatureInvalid`` (final), or whatever the certificate source
        raises when it cannot have the certificate now (the caller answers "retry later")."""
        if not isinstance(envelope, dict):
            raise SignatureInvalid("the SNS envelope is not a JSON object")
        self._check_timestamp(_field(envelope, "Timestamp"))
        kind = _field(envelope, "Type")
        if kind not in ("Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"):
            raise SignatureInvalid("unknown SNS message type")
        topic = _field(envelope, "TopicArn")
        if topic not in self._topics:
            raise SignatureInvalid("the topic is not one this endpoint accepts")
        region = region_of(topic)
        version = envelope.get("SignatureVersion")
        if version not in _HASHES:
            raise SignatureInvalid("unsupported SignatureVersion")
        cert_url = _field(envelope, "SigningCertURL")
        sns_host_url(cert_url, region, certificate=True)
        try:
            signature = base64.b64decode(_field(envelope, "Signature"), validate=True)
        except (binascii.Error, ValueError):
            raise SignatureInvalid("the signature is not base64") from None
        signed = string_to_sign(envelope)
        key = self._public_key(await self._certificates.certificate(cert_url))
        try:
            key.verify(signature, signed, padding.PKCS1v15(), _HASHES[version]())
        except InvalidSignature:
            raise SignatureInvalid("the signature does not match") from None
        subscribe_url = envelope.get("SubscribeURL") if kind != "Notification" else None
        return SnsMessage(
            type=kind,  # type: ignore[arg-type]  # checked against the three types above
            message_id=_field(envelope, "MessageId"),
            topic_arn=topic,
            message=_field(envelope, "Message"),
            subscribe_url=subscribe_url if isinstance(subscribe_url, str) else None,
        )

    def _check_timestamp(self, text: str) -> None:
        """The signed ``Timestamp`` within the window: older (or far ahead of us) is refused, final."""
        try:
            sent = datetime.fromisoformat(text)
        except ValueError:
            raise SignatureInvalid("the SNS Timestamp is not an ISO 8601 time") from None
        if sent.tzinfo is None:
            raise SignatureInvalid("the SNS Timestamp has no time zone")
        now = self._clock()
        if sent < now - self._max_age or sent > now + FUTURE_SKEW:
            raise SignatureInvalid("the SNS message is outside the accepted time window")

    def _public_key(self, certificate: x509.Certificate) -> rsa.RSAPublicKey:
        now = self._clock()
        if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
            raise SignatureInvalid("the signing certificate is not valid now")
        key = certificate.public_key()
        if not isinstance(key, rsa.RSAPublicKey):
            raise SignatureInvalid("the signing certificate has no RSA key")
        return key
