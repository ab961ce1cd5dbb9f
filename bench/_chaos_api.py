"""The chaos run's client: tRPC over HTTP as an admin, patient through restarts, and its campaigns."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

EMAIL_COPY = {"subject": "Chaos news", "title": "Hello", "body": "One\nTwo", "ctaLabel": "Open"}
_RETRIED = {502, 503, 504}


class Conflict(RuntimeError):
    """A tRPC CONFLICT (409): e.g. a preview token that went stale before its confirm."""


class Api:
    """tRPC over HTTP with an admin token. Calls are retried while the API or Neo4j restarts (connection
    refused, 502/503/504) for up to ``patience`` seconds; any other error is raised."""

    def __init__(self, base: str, token: str, *, patience: float = 300) -> None:
        self.client = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=60)
        self.patience = patience

    def _call(self, send: Callable[[], httpx.Response]) -> Any:
        deadline = time.monotonic() + self.patience
        while True:
            try:
                answer = send()
                if answer.status_code not in _RETRIED:
                    if answer.status_code == 409:
                        raise Conflict(f"{answer.request.url.path}: {answer.text[:500]}")
                    if answer.status_code >= 400:
                        raise RuntimeError(
                            f"{answer.request.url.path}: {answer.status_code} {answer.text[:500]}"
                        )
                    return answer.json()["result"]["data"]
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.TimeoutException):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the API did not answer within {self.patience:.0f} s")
            time.sleep(0.5)

    def query(self, name: str, data: dict[str, Any]) -> Any:
        return self._call(lambda: self.client.get(f"/trpc/{name}", params={"input": json.dumps(data)}))

    def mutate(self, name: str, data: dict[str, Any]) -> Any:
        return self._call(lambda: self.client.post(f"/trpc/{name}", json=data))


class Campaign:
    """One of the run's campaigns, through the API: created, filled, made live and dispatched."""

    def __init__(self, api: Api, campaign_id: str, *, priority: str, subject: str) -> None:
        self.api = api
        self.id = campaign_id
        self.priority = priority
        self.subject = subject  # its emails' subject: how the catcher's mailbox tells the campaigns apart

    def create(self, profile_ids: list[str] | None = None) -> None:
        """Every profile of the tenant, or ``profile_ids``."""
        self.api.mutate(
            "campaigns.create",
            {
                "id": self.id, "name": f"Chaos {self.priority}", "channels": ["notify", "email"],
                "priority": self.priority, "notification": {"title": "Chaos", "body": "Still here"},
                "email": {**EMAIL_COPY, "subject": self.subject},
            },
        )  # fmt: skip
        source = {"type": "all"} if profile_ids is None else {"type": "profileIds", "profileIds": profile_ids}
        self.api.mutate("campaigns.addAudience", {"campaignId": self.id, "source": source})

    def send(self) -> str:
        """Live, previewed and dispatched; the new dispatch ids. A preview gone stale before its confirm
        (CONFLICT: a running email walk changes who is left to email) is previewed again, as a user
        would, for up to a minute."""
        self.api.mutate("campaigns.setStatus", {"campaignId": self.id, "status": "live"})
        for attempt in range(60):
            preview = self.api.query("campaigns.previewDispatch", {"campaignId": self.id})
            if preview["blockedReason"] is not None:
                raise RuntimeError(f"the dispatch is blocked: {preview['blockedReason']}")
            try:
                started = self.api.mutate(
                    "campaigns.dispatch",
                    {"campaignId": self.id, "expectedPreviewToken": preview["previewToken"]},
                )
            except Conflict:
                if attempt == 59:
                    raise
                time.sleep(1)
                continue
            return ",".join(f"{k}={v}" for k, v in sorted(started["dispatchIds"].items()))
        raise AssertionError("unreachable")

    def pause(self) -> None:
        self.api.mutate("campaigns.setStatus", {"campaignId": self.id, "status": "paused"})

    def status(self) -> str:
        return str(self.api.query("campaigns.get", {"campaignId": self.id})["status"])

    def dispatches(self) -> list[dict[str, Any]]:
        return list(self.api.query("campaigns.listDispatches", {"campaignId": self.id}))

    def stats(self) -> dict[str, Any]:
        return dict(self.api.query("campaigns.getStats", {"campaignId": self.id}))
