"""Standard Webhooks signing: the spec's published vector, the secret format, the official library
agreeing with us both ways, and each way a verification must fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr
from standardwebhooks import Webhook, WebhookVerificationError

from campaign_engine.config import ConfigError, Settings
from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.webhook_signature import secret_bytes, sign, signed_headers, verify

# The test vector published with the Standard Webhooks / Svix reference libraries.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

KEY = b"a-shared-key-of-32-bytes-0123456"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
RETIRED = "whsec_" + base64.b64encode(b"retired-key-of-32-bytes-01234567").decode()
NOW = 1_767_225_600


def _verify(secret: str, signature: str, *, body: bytes = b"{}", ts: int = NOW, now: int = NOW) -> bool:
    return verify(secret, msg_id="d-1", timestamp=str(ts), signature_header=signature, body=body, now=now)


def test_spec_vector_signs_and_verifies() -> None:
    assert sign(SPEC_SECRET, msg_id=SPEC_ID, timestamp=SPEC_TS, body=SPEC_BODY) == SPEC_SIGNATURE
    assert verify(
        SPEC_SECRET,
        msg_id=SPEC_ID,
        timestamp=str(SPEC_TS),
        signature_header=SPEC_SIGNATURE,
        body=SPEC_BODY,
        now=SPEC_TS + 10,
    )


def test_whsec_secret_signs_with_its_decoded_bytes() -> None:
    raw = b"\x00\x01binary-key\xff" + bytes(range(16))
    as_whsec = "whsec_" + base64.b64encode(raw).decode()
    assert secret_bytes(as_whsec) == raw
    signed = sign(as_whsec, msg_id="m", timestamp=1, body=b"x")
    assert signed == _raw_sign(raw, b"m.1.x")
    assert signed != _raw_sign(as_whsec.encode(), b"m.1.x")  # never its literal text


def _raw_sign(key: bytes, content: bytes) -> str:
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


@pytest.mark.parametrize(
    ("case", "secret", "reason"),
    [
        ("empty", "", "empty"),
        ("plain text", "a-plain-shared-secret-0123456789", "whsec_"),
        ("not base64", "whsec_not*base64!-0123456789abcdefgh", "not valid base64"),
        ("16 bytes", "whsec_" + base64.b64encode(b"k" * 16).decode(), "at least 24"),
        ("no key bytes", "whsec_", "at least 24"),
    ],
)
def test_unusable_secrets_are_refused_without_echoing_them(case: str, secret: str, reason: str) -> None:
    body = secret.removeprefix("whsec_")[:8]  # what an echo of the secret would show
    with pytest.raises(ValueError, match=reason) as info:
        secret_bytes(secret)
    if body:
        assert body not in str(info.value), case
    # ...and at start, with the variable named: the worker and the inbox never sign or verify with it.
    settings = Settings(_env_file=None, notifications_webhook_secret=SecretStr(secret))
    with pytest.raises(ConfigError, match="NOTIFICATIONS_WEBHOOK_SECRET") as started:
        settings.require_webhooks()
    if body:
        assert body not in str(started.value), case


def test_a_24_byte_secret_is_the_smallest_accepted() -> None:
    smallest = "whsec_" + base64.b64encode(b"k" * 24).decode()
    assert secret_bytes(smallest) == b"k" * 24
    Settings(_env_file=None, notifications_webhook_secret=SecretStr(smallest)).require_webhooks()
    Settings(_env_file=None, notifications_webhook_secret=SecretStr(SPEC_SECRET)).require_webhooks()


def test_the_official_library_verifies_our_signature_and_we_verify_its() -> None:
    body = b'{"recipient":"p-1","title":"Hello"}'
    now = int(time.time())  # the library checks the timestamp against the real clock
    headers = signed_headers(SECRET, msg_id="d-1", body=body, now=now)
    assert Webhook(SECRET).verify(body, headers) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(body + b" ", headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(RETIRED).verify(body, headers)
    theirs = Webhook(SECRET).sign("d-2", _utc(now), body.decode())
    assert verify(SECRET, msg_id="d-2", timestamp=str(now), signature_header=theirs, body=body, now=now)


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def test_round_trip_with_signed_headers_and_real_payload_bytes() -> None:
    payload = AnnouncementPayload.model_validate(
        {
            "recipient": "p-1",
            "sender": "Acme",
            "title": "Hello",
            "body": "World",
            "metadata": {
                "campaignId": "c-1",
                "campaignCreatedAt": "2026-01-02T03:04:05.000006Z",
                "dispatchId": None,
                "deliveryId": "d-1",
                "campaignHasInApp": True,
                "campaignTestId": None,
            },
        }
    )
    body = payload_json(payload)
    assert json.loads(body)["metadata"]["dispatchId"] is None  # nulls stay on the wire
    headers = signed_headers(SECRET, msg_id="d-1", body=body, now=NOW)
    assert headers["webhook-id"] == "d-1"
    assert headers["webhook-timestamp"] == str(NOW)
    assert verify(
        SECRET,
        msg_id=headers["webhook-id"],
        timestamp=headers["webhook-timestamp"],
        signature_header=headers["webhook-signature"],
        body=body,
        now=NOW + 299,
    )


def test_tampered_body_fails() -> None:
    good = sign(SECRET, msg_id="d-1", timestamp=NOW, body=b'{"a":1}')
    assert _verify(SECRET, good, body=b'{"a":1}')
    assert not _verify(SECRET, good, body=b'{"a":2}')
    assert not _verify(SECRET, good, body=b'{"a":1} ')


def test_tampered_id_or_timestamp_fails() -> None:
    good = sign(SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    assert not verify(SECRET, msg_id="d-2", timestamp=str(NOW), signature_header=good, body=b"{}", now=NOW)
    assert not _verify(SECRET, good, ts=NOW + 1, now=NOW)


def test_wrong_secret_fails() -> None:
    good = sign(SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    assert not _verify(RETIRED, good)


@pytest.mark.parametrize("skew", [301, -301, 10_000])
def test_timestamp_outside_five_minutes_fails(skew: int) -> None:
    ts = NOW - skew
    good = sign(SECRET, msg_id="d-1", timestamp=ts, body=b"{}")
    assert not _verify(SECRET, good, ts=ts)


@pytest.mark.parametrize("skew", [300, -300, 0])
def test_timestamp_within_five_minutes_passes(skew: int) -> None:
    ts = NOW - skew
    assert _verify(SECRET, sign(SECRET, msg_id="d-1", timestamp=ts, body=b"{}"), ts=ts)


@pytest.mark.parametrize("timestamp", ["", " 1767225600", "+1767225600", "1_767_225_600", "1.7e9", "abc"])
def test_timestamp_must_be_plain_digits(timestamp: str) -> None:
    # Sign the exact string so only the timestamp's spelling can be the reason for refusal.
    header = _raw_sign(KEY, f"d-1.{timestamp}.{{}}".encode())
    assert not verify(SECRET, msg_id="d-1", timestamp=timestamp, signature_header=header, body=b"{}", now=NOW)


def test_any_of_several_signatures_may_match() -> None:
    good = sign(SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    old = sign(RETIRED, msg_id="d-1", timestamp=NOW, body=b"{}")
    assert _verify(SECRET, f"{old} {good}")
    assert _verify(SECRET, f"{good} {old}")
    assert _verify(SECRET, f"v1a,somethingasymmetric {good}")
    assert not _verify(SECRET, old)


def test_unknown_versions_and_garbage_do_not_match() -> None:
    value = sign(SECRET, msg_id="d-1", timestamp=NOW, body=b"{}").removeprefix("v1,")
    assert not _verify(SECRET, f"v2,{value}")
    assert not _verify(SECRET, value)
    assert not _verify(SECRET, "")
    assert not _verify(SECRET, "v1,ümlaut")
