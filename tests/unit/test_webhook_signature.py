"""Standard Webhooks signing: the spec's published vector, and each way a verification must fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.webhook_signature import secret_bytes, sign, signed_headers, verify

# The test vector published with the Standard Webhooks / Svix reference libraries.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

PLAIN_SECRET = "a-plain-shared-secret-0123456789"
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


def test_whsec_secret_uses_decoded_bytes_and_plain_secret_its_utf8() -> None:
    raw = b"\x00\x01binary-key\xff"
    as_whsec = "whsec_" + base64.b64encode(raw).decode()
    assert secret_bytes(as_whsec) == raw
    assert secret_bytes(PLAIN_SECRET) == PLAIN_SECRET.encode()
    # The same key bytes, spelled both ways, give the same signature.
    utf8_key = "klé-partagée"
    spelled_whsec = "whsec_" + base64.b64encode(utf8_key.encode()).decode()
    assert sign(utf8_key, msg_id="m", timestamp=1, body=b"x") == sign(
        spelled_whsec, msg_id="m", timestamp=1, body=b"x"
    )
    # ...and a whsec_ secret is not signed with its literal text.
    signed = sign(as_whsec, msg_id="m", timestamp=1, body=b"x")
    assert signed == _raw_sign(raw, b"m.1.x")
    assert signed != _raw_sign(as_whsec.encode(), b"m.1.x")


def _raw_sign(key: bytes, content: bytes) -> str:
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


def test_malformed_whsec_secret_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="not valid base64") as info:
        secret_bytes("whsec_not*base64!")
    assert "not*base64" not in str(info.value)
    with pytest.raises(ValueError, match="empty"):
        secret_bytes("")


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
    headers = signed_headers(PLAIN_SECRET, msg_id="d-1", body=body, now=NOW)
    assert headers["webhook-id"] == "d-1"
    assert headers["webhook-timestamp"] == str(NOW)
    assert verify(
        PLAIN_SECRET,
        msg_id=headers["webhook-id"],
        timestamp=headers["webhook-timestamp"],
        signature_header=headers["webhook-signature"],
        body=body,
        now=NOW + 299,
    )


def test_tampered_body_fails() -> None:
    good = sign(PLAIN_SECRET, msg_id="d-1", timestamp=NOW, body=b'{"a":1}')
    assert _verify(PLAIN_SECRET, good, body=b'{"a":1}')
    assert not _verify(PLAIN_SECRET, good, body=b'{"a":2}')
    assert not _verify(PLAIN_SECRET, good, body=b'{"a":1} ')


def test_tampered_id_or_timestamp_fails() -> None:
    good = sign(PLAIN_SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    assert not verify(
        PLAIN_SECRET, msg_id="d-2", timestamp=str(NOW), signature_header=good, body=b"{}", now=NOW
    )
    assert not _verify(PLAIN_SECRET, good, ts=NOW + 1, now=NOW)


def test_wrong_secret_fails() -> None:
    good = sign(PLAIN_SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    assert not _verify("another-secret-0123456789abcdef", good)


@pytest.mark.parametrize("skew", [301, -301, 10_000])
def test_timestamp_outside_five_minutes_fails(skew: int) -> None:
    ts = NOW - skew
    good = sign(PLAIN_SECRET, msg_id="d-1", timestamp=ts, body=b"{}")
    assert not _verify(PLAIN_SECRET, good, ts=ts)


@pytest.mark.parametrize("skew", [300, -300, 0])
def test_timestamp_within_five_minutes_passes(skew: int) -> None:
    ts = NOW - skew
    assert _verify(PLAIN_SECRET, sign(PLAIN_SECRET, msg_id="d-1", timestamp=ts, body=b"{}"), ts=ts)


@pytest.mark.parametrize("timestamp", ["", " 1767225600", "+1767225600", "1_767_225_600", "1.7e9", "abc"])
def test_timestamp_must_be_plain_digits(timestamp: str) -> None:
    # Sign the exact string so only the timestamp's spelling can be the reason for refusal.
    header = _raw_sign(PLAIN_SECRET.encode(), f"d-1.{timestamp}.{{}}".encode())
    assert not verify(
        PLAIN_SECRET, msg_id="d-1", timestamp=timestamp, signature_header=header, body=b"{}", now=NOW
    )


def test_any_of_several_signatures_may_match() -> None:
    good = sign(PLAIN_SECRET, msg_id="d-1", timestamp=NOW, body=b"{}")
    old = sign("retired-secret-0123456789abcdef", msg_id="d-1", timestamp=NOW, body=b"{}")
    assert _verify(PLAIN_SECRET, f"{old} {good}")
    assert _verify(PLAIN_SECRET, f"{good} {old}")
    assert _verify(PLAIN_SECRET, f"v1a,somethingasymmetric {good}")
    assert not _verify(PLAIN_SECRET, old)


def test_unknown_versions_and_garbage_do_not_match() -> None:
    value = sign(PLAIN_SECRET, msg_id="d-1", timestamp=NOW, body=b"{}").removeprefix("v1,")
    assert not _verify(PLAIN_SECRET, f"v2,{value}")
    assert not _verify(PLAIN_SECRET, value)
    assert not _verify(PLAIN_SECRET, "")
    assert not _verify(PLAIN_SECRET, "v1,ümlaut")
