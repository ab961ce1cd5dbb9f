"""What the reference-inbox tests share: the inbox run as a real uvicorn server on a SQLite file, a
signed announcement posted to it, its answer read through the worker's acknowledgement grammar, and
the rows it stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from campaign_engine.domain.acknowledgement import classify_acknowledgement
from campaign_engine.domain.notification import AnnouncementPayload, payload_json
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.inbox.app import create_inbox_app
from campaign_engine.inbox.store import InboxStore
from tests.support.servers import serve_in_thread

SECRET = "whsec_" + "c2VjcmV0LWZvci10aGUtaW5ib3gtdGVzdHMtMDEyMzQ1Njc4OQ=="
CREATED_AT = "2026-01-02T03:04:05.000006Z"


@contextmanager
def running_inbox(db_path: Path) -> Iterator[str]:
    """Serve a fresh inbox app on a free loopback port; yield its base URL; stop it (and its store)."""
    with serve_in_thread(create_inbox_app(db_path=db_path, secret=SECRET)) as url:
        yield url


def announcement(**overrides: Any) -> dict[str, Any]:
    metadata = {
        "campaignId": "c-1",
        "campaignCreatedAt": CREATED_AT,
        "dispatchId": "disp-1",
        "deliveryId": "del-1",
        "campaignHasInApp": True,
        "campaignTestId": None,
        **overrides.pop("metadata", {}),
    }
    return {
        "type": "ANNOUNCEMENT",
        "recipient": "p-1",
        "sender": "Acme",
        "title": "Hello",
        "body": "World",
        "metadata": metadata,
        **overrides,
    }


def post(
    base_url: str,
    document: dict[str, Any],
    *,
    secret: str = SECRET,
    skew: int = 0,
    body: bytes | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    raw = body if body is not None else payload_json(AnnouncementPayload.model_validate(document))
    msg_id = document["metadata"]["deliveryId"]
    headers = signed_headers(secret, msg_id=msg_id, body=raw, now=int(time.time()) + skew)
    headers["content-type"] = "application/json"
    url = f"{base_url}/api/notifications/send"
    if client is not None:
        return client.post(url, content=raw, headers=headers)
    return httpx.post(url, content=raw, headers=headers, timeout=10)


def inbox_of(base_url: str, profile_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base_url}/api/notifications", params={"profileId": profile_id}, timeout=10)
    assert response.status_code == 200
    items: list[dict[str, Any]] = response.json()["notifications"]
    return items


def ack(response: httpx.Response) -> str:
    return classify_acknowledgement(
        response.status_code, response.content, response.headers.get("content-type")
    )


def stored_count(db_path: Path) -> int:
    with InboxStore(db_path) as store:
        return store.count()
