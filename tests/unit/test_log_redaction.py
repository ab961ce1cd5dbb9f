"""The log pipeline of every process (observability/logs.py): one JSON object per record, bound ids
merged in, and nothing secret left in any value, whichever logger wrote it."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.observability.logs import build_handler
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

WEBHOOK_SECRET = "whsec_dGVzdC13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWI="
SMTP_PASSWORD = "correct horse battery staple"  # no shape to recognise: masked as a configured secret
JWT_SECRET = "test-jwt-secret-0123456789abcdef-0123456789"


@pytest.fixture
def captured() -> Iterator[tuple[io.StringIO, logging.Logger]]:
    """A logger of the test's own with the production handler; the root logger is left alone."""
    stream = io.StringIO()
    logger = logging.getLogger("campaign_engine.test_log_redaction")
    handler = build_handler(secrets=[SMTP_PASSWORD, WEBHOOK_SECRET], stream=stream)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield stream, logger
    finally:
        logger.removeHandler(handler)
        structlog.contextvars.clear_contextvars()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_is_one_json_line_with_its_fields_and_bound_ids(
    captured: tuple[io.StringIO, logging.Logger],
) -> None:
    stream, logger = captured
    with structlog.contextvars.bound_contextvars(requestId="r-1", campaignId="c-1"):
        logger.info("jobs.page", extra={"outcome": "completed", "count": 3})
    logger.info("after %s", "unbinding")
    first, second = lines(stream)
    assert first["event"] == "jobs.page"
    assert (first["requestId"], first["campaignId"], first["outcome"], first["count"]) == (
        "r-1",
        "c-1",
        "completed",
        3,
    )
    assert (first["level"], first["logger"]) == ("info", "campaign_engine.test_log_redaction")
    assert "timestamp" in first
    assert second["event"] == "after unbinding" and "requestId" not in second


def test_no_secret_survives_in_any_value(captured: tuple[io.StringIO, logging.Logger]) -> None:
    stream, logger = captured
    settings = Settings(auth_jwt_secret=JWT_SECRET, _env_file=None)
    bearer = mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE)
    unsubscribe = UnsubscribeTokens("u" * 40).issue("3f1c9a6e-unsubscribe-id")
    secrets = [bearer, unsubscribe, WEBHOOK_SECRET, SMTP_PASSWORD, "josé@example.com", "m0@example.com"]
    logger.info(
        "sent to m0@example.com (%s) via http://h/u?token=%s",
        "m0%40example.com",
        unsubscribe,
        extra={
            "authorization": f"Bearer {bearer}",
            "headers": {"X-Postmark-Server-Token": "0000-1111", "webhook-signature": "v1,abc"},
            "note": f"login with {SMTP_PASSWORD}; signing with {WEBHOOK_SECRET}",
            "recipients": ["josé@example.com", {"to": "m0@example.com"}],
            "raw": f"Authorization: Bearer {bearer}",
        },
    )
    try:
        raise ValueError(f"refused {unsubscribe} for m0@example.com")
    except ValueError:
        logger.exception("unsubscribe.failed")
    text = stream.getvalue()
    for secret in [*secrets, "m0%40example.com", "0000-1111", "v1,abc"]:
        assert secret not in text, secret
    record = lines(stream)[0]
    assert record["authorization"] == "[redacted]"
    assert record["headers"] == {"X-Postmark-Server-Token": "[redacted]", "webhook-signature": "[redacted]"}
    assert record["recipients"] == ["[redacted-email]", {"to": "[redacted-email]"}]
    assert record["event"].endswith("?token=[redacted]")
    assert "ValueError" in lines(stream)[1]["exception"]  # the traceback stays, its secrets do not


def test_an_api_key_is_masked_wherever_it_stands(captured: tuple[io.StringIO, logging.Logger]) -> None:
    """An API key (``cek_<id>_<secret>``) named in a message, a field or an exception, without the
    ``Bearer`` that would otherwise give it away."""
    stream, logger = captured
    key = "cek_0123456789abcdef_" + "Zq-9_" * 8 + "xyz"
    logger.info("refused key %s", key, extra={"presented": key, "detail": {"keys": [f"({key})"]}})
    try:
        raise PermissionError(f"key {key} is revoked")
    except PermissionError:
        logger.exception("auth.failed")
    text = stream.getvalue()
    assert key not in text and key.rpartition("_")[2] not in text
    first = lines(stream)[0]
    assert first["event"] == "refused key [redacted]"
    assert first["detail"] == {"keys": ["([redacted])"]}


def test_the_access_line_keeps_method_path_and_status_but_no_query() -> None:
    stream = io.StringIO()
    access = logging.getLogger("uvicorn.access")
    handler = build_handler(stream=stream)
    saved = (access.handlers[:], access.propagate, access.level)
    access.handlers, access.propagate = [handler], False
    access.setLevel(logging.INFO)
    try:
        with structlog.contextvars.bound_contextvars(requestId="r-2"):
            access.info(
                '%s - "%s %s HTTP/%s" %d',
                "203.0.113.7:5123",
                "GET",
                '/trpc/suppressions.get?input={"address":"m0%40example.com"}',
                "1.1",
                200,
            )
    finally:
        access.handlers, access.propagate, _ = saved
        access.setLevel(saved[2])
    (line,) = lines(stream)
    assert line == {
        "event": "http.request",
        "method": "GET",
        "path": "/trpc/suppressions.get?[redacted]",
        "status": 200,
        "httpVersion": "1.1",
        "requestId": "r-2",
        "level": "info",
        "logger": "uvicorn.access",
        "timestamp": line["timestamp"],
    }
