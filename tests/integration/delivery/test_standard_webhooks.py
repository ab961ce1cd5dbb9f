"""Interoperability with the official Standard Webhooks library (``standardwebhooks`` from PyPI).

Our worker's poster signs a real POST over a loopback socket and a receiver built on the official
library verifies it; the other way round, the reference inbox stores what the official library signs.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.sender import Answered, Outgoing
from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.transport import make_webhook_transport
from campaign_engine.inbox.app import create_inbox_app
from tests.support.delivery import WEBHOOK_SECRET
from tests.support.servers import serve_in_thread

OTHER_SECRET = "whsec_" + "b3RoZXIta2V5LW9mLTMyLWJ5dGVzLTAxMjM0NTY3ODk="


LOOPBACK = DestinationRules.of(local_development=True)  # http to loopback receivers on any port


def _receiver(verified: list[object]) -> Starlette:
    """A receiver written the way the library's documentation shows: raw body and headers in."""

    async def hook(request: Request) -> JSONResponse:
        body = await request.body()
        try:
            verified.append(Webhook(WEBHOOK_SECRET).verify(body, dict(request.headers)))
        except WebhookVerificationError:
            return JSONResponse({"sent": False}, status_code=400)
        return JSONResponse({"sent": True})

    return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


def _post(secret: str, url: str, body: bytes) -> object:
    poster = WebhookPoster(
        make_webhook_transport(allow_private=True, rules=LOOPBACK, max_connections=2),
        secret=secret,
        concurrency=2,
        timeout=5,
    )
    try:
        [result] = poster.post_all([Outgoing(url=url, body=body, msg_id="dlv-1")])
    finally:
        poster.close()
    return result


def _announcement() -> bytes:
    return payload_json(
        AnnouncementPayload.model_validate(
            {
                "recipient": "p-1",
                "sender": "Acme",
                "title": "Hello",
                "body": "World",
                "metadata": {
                    "campaignId": "c-1",
                    "campaignCreatedAt": "2026-01-02T03:04:05.000006Z",
                    "dispatchId": "disp-1",
                    "deliveryId": "dlv-1",
                    "campaignHasInApp": False,
                    "campaignTestId": None,
                },
            }
        )
    )


def test_the_official_library_verifies_a_real_post_from_our_poster() -> None:
    verified: list[object] = []
    body = _announcement()
    with serve_in_thread(_receiver(verified)) as url:
        accepted = _post(WEBHOOK_SECRET, f"{url}/hook", body)
        refused = _post(OTHER_SECRET, f"{url}/hook", body)
    assert isinstance(accepted, Answered) and accepted.status_code == 200, accepted
    assert isinstance(refused, Answered) and refused.status_code == 400, refused
    assert verified == [json.loads(body)]  # exactly the request signed with the shared secret


def test_the_reference_inbox_stores_what_the_official_library_signs(tmp_path: Path) -> None:
    body = _announcement()
    now = int(time.time())
    signature = Webhook(WEBHOOK_SECRET).sign("dlv-1", datetime.fromtimestamp(now, tz=UTC), body.decode())
    headers = {
        "webhook-id": "dlv-1",
        "webhook-timestamp": str(now),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    app = create_inbox_app(db_path=tmp_path / "inbox.sqlite3", secret=WEBHOOK_SECRET)
    with serve_in_thread(app) as url:
        answer = httpx.post(f"{url}/api/notifications/send", content=body, headers=headers, timeout=10)
        stored = httpx.get(f"{url}/api/notifications", params={"profileId": "p-1"}, timeout=10).json()
    assert (answer.status_code, answer.json()) == (200, {"sent": True})
    assert [item["title"] for item in stored["notifications"]] == ["Hello"]


def test_the_reference_inbox_refuses_a_plain_secret_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="whsec_"):
        create_inbox_app(db_path=tmp_path / "inbox.sqlite3", secret="a-plain-shared-secret-0123456789")
    assert not (tmp_path / "inbox.sqlite3").exists()  # refused before the store was opened
