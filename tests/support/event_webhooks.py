"""What the event-webhook tests share: a loopback receiver verifying every POST with the official
Standard Webhooks library, the stack (settings, graph, queues, a ``StepClock``, the real worker), and an
endpoint created for a receiver."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from standardwebhooks import Webhook, WebhookVerificationError

from campaign_engine.campaigns.tenants.webhook_endpoints import create_endpoint
from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, run_sweep
from tests.support.delivery import (
    StepClock,
    ThreadServer,
    drain,
)


@dataclass
class EventReceiver:
    """An endpoint that verifies each POST with the official library against its secrets (any one
    verifying is enough, as for a receiver mid-rotation) and answers 503 while ``down``; each arrival
    keeps its ``time.monotonic()`` as ``at``."""

    secrets: list[str] = field(default_factory=list)
    down: bool = False
    received: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/events")
        async def events(request: Request) -> Response:
            body = await request.body()
            headers = dict(request.headers)
            with self.lock:
                if self.down:
                    self.refused += 1
                    return Response(status_code=503)
                verified_by = []
                for secret in self.secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        verified_by.append(secret)
                    except WebhookVerificationError:
                        pass
                if not verified_by:
                    return Response(status_code=401)
                event = json.loads(body)
                arrival = {"id": headers["webhook-id"], "event": event, "verifiedBy": verified_by}
                self.received.append({**arrival, "at": time.monotonic()})
            return Response(status_code=204)

        return app

    def unique(self) -> dict[str, dict[str, Any]]:
        """Events by ``webhook-id``: what a receiver deduplicating by it keeps."""
        return {r["id"]: r["event"] for r in self.received}


@dataclass
class Stack:
    settings: Settings
    graph: Graph
    queues: Queues
    clock: StepClock
    worker: Worker

    def run(self) -> None:
        """Serve every queued job, then the sweep (which enqueues due endpoints), until all is quiet."""
        for _ in range(50):
            drain(self.worker.handle, self.queues, rounds=2000)
            enqueued = run_sweep(
                self.settings,
                self.graph,
                self.queues.dispatch,
                clock=self.clock,
                webhooks_queue=self.queues.webhooks,
            ).webhooks
            if not enqueued:
                return
        raise AssertionError("the relay never went quiet")

    def later(self, seconds: float) -> None:
        self.clock.now += timedelta(seconds=seconds)


def _endpoint(
    stack: Stack, receiver: ThreadServer, *, tenant: str = "default", events: list[str] | None = None
) -> tuple[str, str]:
    created = create_endpoint(
        stack.graph, stack.settings.secret_box(), tenant_id=tenant, url=f"{receiver.url}/events",
        events=events or ["*"], description=None, now=stack.clock(), audit=None,
    )  # fmt: skip
    return created.id, created.secret
