"""Postmark adapter for the email port: ``POST /email/batch`` on a *Broadcasts* message stream.

Why the shape:

- Postmark answers a batch with HTTP 200 and one result per message, in request order; each result has
  its own ``ErrorCode`` (0 = accepted). A 200 can therefore hold failures, and we classify each one.
- A whole-request answer (429, 401, 422, 5xx, a transport error) applies to every message of that
  request. Only answers that prove non-acceptance release anything; the rest is ``uncertain``.
- Batches above Postmark's 500-message limit are split. Once one request is throttled or ends in doubt,
  the later requests are not sent and their messages come back ``throttled`` (never sent, so safe to
  release): a struggling provider gets back-pressure, not more traffic.
- ``verify`` refuses any stream whose type is not ``Broadcasts``: announcements must never ride the
  transactional stream, whose reputation protects password resets. ``send_batch`` verifies first; a
  failure there sends nothing, so every message comes back ``throttled`` (``send_batch`` never raises).
- The longest Retry-After of the batch is the one every throttled message carries: the provider wants
  the whole sender to wait that long.

The API key and recipient addresses never reach logs or ``reason`` strings (Postmark messages quote
addresses, so reasons are built from codes only).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from campaign_engine.delivery.email.postmark_body import PageBody
from campaign_engine.delivery.email.provider import (
    Outcome,
    OutgoingEmail,
    ProviderConfigError,
    ProviderUnavailable,
    SendResult,
)
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.egress.tls import shared_tls_context

__all__ = ["MAX_BATCH", "REJECTING_CODES", "PostmarkProvider", "parse_retry_after"]

log = logging.getLogger(__name__)

MAX_BATCH = 500

RATE_LIMIT_CODE = 429
# Postmark API error codes that prove a message was refused before acceptance
# (https://postmarkapp.com/developer/api/overview#error-codes). Any other non-zero code is "uncertain".
REJECTING_CODES = frozenset(
    {
        10,  # bad or missing API token
        300,  # invalid email request (bad address, empty body, too many recipients)
        400,  # sender signature not found
        401,  # sender signature not confirmed
        402,  # invalid JSON
        403,  # incompatible JSON
        405,  # not allowed to send (account out of credits)
        406,  # inactive recipient (hard bounce, spam complaint, manual suppression)
        409,  # JSON required
        410,  # too many batch messages
        411,  # forbidden attachment type
        412,  # account is pending
        413,  # account may not send
    }
)

_TRANSPORT_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from Retry-After (delta-seconds or HTTP-date); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class PostmarkProvider:
    """Sends announcement batches through one Postmark server's Broadcasts stream.

    ``sender`` is the From address (a confirmed Postmark sender signature). ``transport`` lets tests and
    production inject an httpx transport; ``timeout`` bounds every request so a send cannot hang.
    """

    def __init__(
        self,
        *,
        api_key: str,
        stream: str,
        sender: str,
        base_url: str = "https://api.postmarkapp.com",
        transport: httpx.BaseTransport | None = None,
        timeout: float = 10.0,
    ) -> None:
        if not api_key.strip():
            raise ProviderConfigError("POSTMARK_API_KEY must be set to use the Postmark provider")
        if not stream.strip():
            raise ProviderConfigError("POSTMARK_BROADCAST_STREAM must name a Broadcasts message stream")
        self._stream = stream
        self._sender = sender
        self.name = "postmark"
        self._verified = False
        self._client = httpx.Client(
            base_url=base_url,
            transport=transport,
            verify=shared_tls_context(trust_env=True),
            timeout=timeout,
            follow_redirects=False,
            headers={
                "Accept": "application/json",
                "X-Postmark-Server-Token": api_key,
            },
        )

    def verify(self) -> None:
        """Check once that the stream exists and is a Broadcasts stream; later calls return at once."""
        if self._verified:
            return
        try:
            response = self._client.get(f"/message-streams/{quote(self._stream, safe='')}")
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"Postmark could not be reached to check the message stream ({type(exc).__name__})"
            ) from exc
        if response.status_code == 401:
            raise ProviderConfigError("Postmark rejected the server token (POSTMARK_API_KEY)")
        if response.status_code in (404, 422):
            raise ProviderConfigError(f"Postmark message stream {self._stream!r} does not exist")
        if response.status_code != 200:
            raise ProviderUnavailable(
                f"Postmark answered HTTP {response.status_code} when checking the message stream"
            )
        body = _json_or_none(response)
        stream_type = body.get("MessageStreamType") if isinstance(body, dict) else None
        if stream_type != "Broadcasts":
            raise ProviderConfigError(
                f"Postmark message stream {self._stream!r} is {stream_type!r}, not 'Broadcasts':"
                " announcements may only be sent on a broadcast stream"
            )
        if isinstance(body, dict) and body.get("ArchivedAt"):
            raise ProviderConfigError(f"Postmark message stream {self._stream!r} is archived")
        self._verified = True

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        if not messages:
            return []
        try:
            self.verify()
        except ServiceUnavailable as exc:  # nothing was sent
            return _all(messages, "throttled", reason=f"verify:{type(exc).__name__}")
        results: list[SendResult] = []
        stopped = False
        for start in range(0, len(messages), MAX_BATCH):
            chunk = messages[start : start + MAX_BATCH]
            if stopped:
                results.extend(_all(chunk, "throttled", reason="not_sent"))
                continue
            try:
                chunk_results, whole_request_failed = self._send_chunk(chunk)
            except Exception as exc:  # a bug after the request may have left: fate unknown
                log.error("postmark.unexpected_error", extra={"error": type(exc).__name__})
                chunk_results, whole_request_failed = _all(chunk, "uncertain", reason="error"), True
            results.extend(chunk_results)
            stopped = whole_request_failed or any(r.outcome == "throttled" for r in chunk_results)
        return _longest_wait(results)

    def close(self) -> None:
        self._client.close()

    # --- one request ------------------------------------------------------------------------------

    def _send_chunk(self, chunk: Sequence[OutgoingEmail]) -> tuple[list[SendResult], bool]:
        """The chunk's results, and whether the request failed as a whole (later chunks must wait)."""
        # A page's bodies escaped once, each message's links spliced in (postmark_body.py).
        request_body = PageBody(sender=self._sender, stream=self._stream).encode(chunk)
        try:
            response = self._client.post("/email/batch", content=request_body, headers=_JSON_BODY)
        except _TRANSPORT_NOT_SENT as exc:
            # No connection was made, so no byte of the request left: nothing can have been accepted.
            log.warning("postmark.unreachable", extra={"error": type(exc).__name__, "count": len(chunk)})
            return _all(chunk, "throttled", reason=f"transport:{type(exc).__name__}"), True
        except httpx.HTTPError as exc:
            # The request may have reached Postmark (read timeout, reset, protocol error): fate unknown.
            log.warning("postmark.uncertain", extra={"error": type(exc).__name__, "count": len(chunk)})
            return _all(chunk, "uncertain", reason=f"transport:{type(exc).__name__}"), True
        status = response.status_code
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if status == 429:
            log.info("postmark.throttled", extra={"count": len(chunk), "retry_after": retry_after})
            return _all(chunk, "throttled", reason="http:429", retry_after=retry_after), True
        body = _json_or_none(response)
        if status == 200:
            if not isinstance(body, list) or len(body) != len(chunk):
                # Results match messages by position: without a full list no message's fate is known.
                log.warning("postmark.unreadable_batch_answer", extra={"count": len(chunk)})
                return _all(chunk, "uncertain", reason="unreadable_answer"), True
            results = [_classify_one(m.key, item, retry_after) for m, item in zip(chunk, body, strict=True)]
            return results, False
        code = body.get("ErrorCode") if isinstance(body, dict) else None
        if status == 401 or (status == 422 and isinstance(code, int) and code in REJECTING_CODES):
            # Postmark refused the whole request before accepting any message in it.
            log.warning("postmark.request_rejected", extra={"http_status": status, "error_code": code})
            reason = f"postmark:{code}" if isinstance(code, int) else f"http:{status}"
            return _all(chunk, "rejected", reason=reason), True
        if status == 422 and code == RATE_LIMIT_CODE:
            return _all(chunk, "throttled", reason="postmark:429", retry_after=retry_after), True
        log.warning("postmark.uncertain", extra={"http_status": status, "count": len(chunk)})
        return _all(chunk, "uncertain", reason=f"http:{status}"), True


_JSON_BODY = {"Content-Type": "application/json"}


def _classify_one(key: str, item: Any, retry_after: float | None) -> SendResult:
    code = item.get("ErrorCode") if isinstance(item, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return SendResult(key, "uncertain", reason="unreadable_result")
    if code == 0:
        message_id = item.get("MessageID")
        return SendResult(
            key, "accepted", provider_message_id=message_id if isinstance(message_id, str) else None
        )
    if code == RATE_LIMIT_CODE:
        return SendResult(key, "throttled", reason="postmark:429", retry_after_seconds=retry_after)
    if code in REJECTING_CODES:
        return SendResult(key, "rejected", reason=f"postmark:{code}")
    return SendResult(key, "uncertain", reason=f"postmark:{code}")


def _longest_wait(results: list[SendResult]) -> list[SendResult]:
    """Every throttled result carries the longest Retry-After the batch heard."""
    hints = [r.retry_after_seconds for r in results if r.retry_after_seconds is not None]
    if not hints:
        return results
    longest = max(hints)
    return [replace(r, retry_after_seconds=longest) if r.outcome == "throttled" else r for r in results]


def _all(
    chunk: Sequence[OutgoingEmail], outcome: Outcome, *, reason: str, retry_after: float | None = None
) -> list[SendResult]:
    return [SendResult(m.key, outcome, reason=reason, retry_after_seconds=retry_after) for m in chunk]


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:  # a ValueError, as json's
        return None
