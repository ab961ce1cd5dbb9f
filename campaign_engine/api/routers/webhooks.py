"""``POST /webhooks/postmark`` and ``POST /webhooks/ses``: provider feedback in, suppressions out.

Plain HTTP endpoints, not tRPC: providers post their own formats. Each is disabled (404, as an unknown
path) until its credentials or topics are configured. Answers follow what the providers retry on: 2xx
once applied, ignored or already applied (a retry); 4xx for what retrying cannot fix (bad credentials,
a body we cannot read, a signature we do not believe); 503 when the graph or the SNS host is unreachable,
so the provider tries again. Addresses, credentials and bodies never reach a log or an answer.

The SES endpoint is anonymous, so its signing certificates come through ``CertificateCache``: verifying
runs on the event loop and a certificate fetch on the cache's few threads, never in the thread pool the
synchronous tRPC procedures share (a burst of envelopes naming new certificate URLs cannot stall them).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.domain.types import Clock
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.feedback.config import FeedbackConfig
from campaign_engine.feedback.events import Feedback, MalformedFeedback
from campaign_engine.feedback.postmark import basic_auth_matches, parse_postmark
from campaign_engine.feedback.ses import parse_ses
from campaign_engine.feedback.sns import SignatureInvalid, SnsMessage, SnsVerifier, sns_host_url
from campaign_engine.feedback.sns_certs import CertificateCache
from campaign_engine.feedback.sns_http import SnsFetchFailed, SnsHttp
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.graph import Graph

__all__ = ["MAX_BODY_BYTES", "webhooks_router"]

log = logging.getLogger(__name__)

# Postmark's bounce records may carry the bounce's full dump; SNS messages stop at 256 KiB.
MAX_BODY_BYTES = 1024 * 1024


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _answer(status: int, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status)


async def _json_body(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise _Refused(413, "body too large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _Refused(413, "body too large")
    try:
        # The tRPC parser's bounds (depth 200, 4,300 digits, no NaN): json.loads recursed into a 500.
        value = from_json(bytes(body), allow_inf_nan=False)
    except ValueError:
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(value, dict):  # both providers post one object; anything else is malformed
        raise _Refused(400, "the body is not a JSON object")
    return value


def webhooks_router(
    *, settings: Settings, graph: Graph, clock: Clock, sns_http: SnsHttp | None = None
) -> APIRouter:
    """The feedback endpoints. ``sns_http`` is for tests (a loopback SNS host trusted through a test CA);
    production builds the strict one here."""
    config = FeedbackConfig.from_settings(settings)
    store = FeedbackStore(
        graph,
        soft_bounce_limit=config.soft_bounce_limit,
        soft_bounce_window=config.soft_bounce_window,
        clock=clock,
    )
    http = sns_http if sns_http is not None else SnsHttp(timeout=settings.campaign_webhook_timeout_seconds)
    verifier = SnsVerifier(
        topic_arns=config.ses_topic_arns,
        certificates=CertificateCache(http.fetch_certificate, clock=clock),
        clock=clock,
        max_age=timedelta(seconds=settings.campaign_sns_max_age_seconds),
    )
    router = APIRouter(prefix="/webhooks", include_in_schema=False)

    async def apply(feedback: Feedback | None, source: str) -> JSONResponse:
        if feedback is None:
            log.info("feedback.ignored source=%s", source)
            return _answer(200, ok=True, result="ignored")
        try:
            applied = await run_in_threadpool(store.apply, feedback)
        except ServiceUnavailable:
            return _answer(503, error="the graph database is unavailable; retry later")
        result = "duplicate" if applied.duplicate else "applied"
        log.info(
            "feedback.%s source=%s events=%d suppressed=%d reactivated=%d",
            result, source, len(feedback.events), applied.suppressed, applied.reactivated,
        )  # fmt: skip
        return _answer(200, ok=True, result=result)

    @router.post("/postmark")
    async def postmark(request: Request) -> JSONResponse:
        if config.postmark_credentials is None:
            return _answer(404, detail="Not Found")
        username, password = config.postmark_credentials
        if not basic_auth_matches(request.headers.get("authorization"), username=username, password=password):
            log.warning("feedback.postmark.unauthorized")
            return JSONResponse(
                {"error": "unauthorized"},
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="webhooks"'},
            )
        try:
            feedback = parse_postmark(await _json_body(request))
        except _Refused as refused:
            return _answer(refused.status, error=refused.message)
        except MalformedFeedback as exc:
            return _answer(400, error=str(exc))
        return await apply(feedback, "postmark")

    @router.post("/ses")
    async def ses(request: Request) -> JSONResponse:
        if not config.ses_topic_arns:
            return _answer(404, detail="Not Found")
        try:
            message = await verifier.verify(await _json_body(request))
            if message.type == "SubscriptionConfirmation":
                await run_in_threadpool(_confirm, http, message)
                log.info("feedback.ses.subscription_confirmed")
                return _answer(200, ok=True, result="confirmed")
            if message.type == "UnsubscribeConfirmation":
                return _answer(200, ok=True, result="ignored")
            feedback = parse_ses(message.message, sns_message_id=message.message_id)
        except _Refused as refused:
            return _answer(refused.status, error=refused.message)
        except (SignatureInvalid, EgressBlocked) as exc:
            log.warning("feedback.ses.refused reason=%s", exc)
            return _answer(403, error=str(exc))
        except SnsFetchFailed as exc:
            log.warning("feedback.ses.sns_unreachable reason=%s", exc)
            return _answer(503, error="the SNS host could not be reached; retry later")
        except MalformedFeedback as exc:
            return _answer(400, error=str(exc))
        return await apply(feedback, "ses")

    return router


def _confirm(http: SnsHttp, message: SnsMessage) -> None:
    """Confirm a subscription to one of our topics: GET its SubscribeURL, only on the topic's SNS host."""
    if message.subscribe_url is None:
        raise SignatureInvalid("the SNS envelope has no SubscribeURL")
    sns_host_url(message.subscribe_url, message.region, certificate=False)
    http.confirm_subscription(message.subscribe_url)
