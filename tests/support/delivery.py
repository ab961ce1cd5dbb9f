"""Helpers for the delivery tests: campaigns and members in the real graph, loopback receivers.

Receivers are real uvicorn servers on 127.0.0.1 in a thread (the reference inbox, or a scripted
receiver whose answers a test lists), so every POST crosses a real socket through the safe transport.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import SecretStr

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch import DispatchStarted, dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.graph.graph import Graph
from campaign_engine.inbox.app import create_inbox_app
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import Lane, Queue, QueueError, ReceivedMessage
from campaign_engine.wiring import Queues, build_worker
from tests.conftest import free_port

WEBHOOK_SECRET = "whsec_dGVzdC13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWI="  # Standard Webhooks: whsec_ + base64
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class StepClock:
    def __init__(self, start: datetime = NOW) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def delivery_settings(base: Settings, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "notifications_webhook_secret": SecretStr(WEBHOOK_SECRET),
        "campaign_allow_private_webhooks": True,
        # The receivers here are loopback servers: plain http on free ports, as in local development.
        "campaign_local_development": True,
        "campaign_dispatch_delay_seconds": 0,
        "campaign_dispatch_page_size": 1000,
        "campaign_delivery_retry_seconds": 0,
        "campaign_webhook_timeout_seconds": 2.0,
        "campaign_webhook_concurrency": 8,
    }
    values.update(overrides)
    return base.model_copy(update=values)


def make_campaign(
    graph: Graph,
    campaign_id: str = "c1",
    *,
    channels: list[str] | None = None,
    status: str = "live",
    now: datetime = NOW,
    tenant_id: str = "default",
    **extra: Any,
) -> str:
    """Create a campaign (live by default) in ``tenant_id``; returns its createdAt."""
    channels = channels or ["notify"]
    data: dict[str, Any] = {"id": campaign_id, "name": "Hello", "channels": channels, **extra}
    if "notify" in channels:
        data.setdefault("notification", {"title": "Big news", "body": "Something happened"})
    if "inApp" in channels:
        data.setdefault("message", {"title": "In app"})
    created = definitions.create_campaign(
        graph, data=CampaignCreate.model_validate(data), tenant_id=tenant_id, now=now
    )
    if status != "draft":
        definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    if status in ("paused", "archived"):
        definitions.set_status(graph, campaign_id=campaign_id, status=status, now=now)  # type: ignore[arg-type]
    return created.created_at


def add_members(
    graph: Graph, campaign_id: str, profile_ids: list[str], *, webhook: str | None = None, **props: Any
) -> None:
    """Members written 1,000 per transaction: a seed of thousands stays well inside the graph's
    statement deadline on a loaded machine."""
    for start in range(0, len(profile_ids), 1000):
        _add_members(graph, campaign_id, profile_ids[start : start + 1000], webhook=webhook, props=props)


def _add_members(
    graph: Graph, campaign_id: str, profile_ids: list[str], *, webhook: str | None, props: dict[str, Any]
) -> None:
    graph.run(
        """
        UNWIND $ids AS id
        MERGE (p:Profile {profileId: id})
          ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false
        SET p.notificationsWebhook = $webhook, p += $props
        WITH p
        MATCH (c:Campaign {id: $campaignId})
        // By the pair, its facts set on creation: with the facts in the pattern the planner may seek a
        // relationship index on them (every member of a seed shares them) with statistics of a tiny
        // graph, and the suite keeps plans for its whole run.
        MERGE (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
          ON CREATE SET m += {campaignId: c.id, profileId: p.profileId, source: 'test',
                              addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}
        """,
        ids=profile_ids,
        webhook=webhook,
        props=props,
        campaignId=campaign_id,
    )


def start_dispatch(
    graph: Graph, queue: Queue, campaign_id: str = "c1", *, now: datetime = NOW, max_recipients: int = 100
) -> DispatchStarted:
    """``campaigns.dispatch`` without a preview token (adult age 18), as most delivery tests need it."""
    return dispatch(graph, queue, campaign_id=campaign_id, expected_token=None, now=now,
                    settings=DispatchSettings(adult_age=18, max_recipients=max_recipients))  # fmt: skip


def notified(graph: Graph, campaign_id: str) -> list[str]:
    rows = graph.run(
        "MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {id: $id}) WHERE s.notifiedAt IS NOT NULL "
        "RETURN p.profileId AS id ORDER BY id",
        id=campaign_id,
    )
    return [row["id"] for row in rows]


def local_queues(path: Path, *, visibility: int = 30, max_receives: int = 5) -> Queues:
    return Queues(
        dispatch=LocalQueue(path, "dispatch", visibility_timeout=visibility, max_receives=max_receives),
        delivery=LocalQueue(path, "delivery", visibility_timeout=visibility, max_receives=max_receives),
    )


class ScriptedQueue:
    """A real queue whose sends can be refused, the port's one failure mode (nothing else is faked):
    while ``fail`` is set, or as the ``script`` says (False = refused; past its end every send works)."""

    def __init__(self, inner: Queue, script: Sequence[bool] = ()) -> None:
        self.inner = inner
        self.script = list(script)
        self.fail = False

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        scripted_refusal = bool(self.script) and not self.script.pop(0)
        if self.fail or scripted_refusal:
            raise QueueError("send refused (test)")
        self.inner.send_batch(bodies, delay_seconds=delay_seconds, lane=lane)

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        return self.inner.receive(max_messages=max_messages, wait_seconds=wait_seconds)

    def delete(self, receipt: str) -> None:
        self.inner.delete(receipt)

    def delete_batch(self, receipts: Sequence[str]) -> None:
        self.inner.delete_batch(receipts)

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        self.inner.change_visibility(receipt, timeout_seconds=timeout_seconds)


def refusing_deliveries(queues: Queues, script: Sequence[bool]) -> Queues:
    """``queues`` with the delivery queue's sends refused as ``script`` says; the relay's queue (by default
    the delivery queue) goes around the script: a relay kick of an endpoint an earlier test on this
    process touched would otherwise take a scripted answer meant for a page's sends."""
    return Queues(
        dispatch=queues.dispatch,
        delivery=ScriptedQueue(queues.delivery, script),
        webhooks_queue=queues.delivery,
    )


class ThreadServer:
    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> ThreadServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@contextmanager
def inbox_server(tmp_path: Path) -> Iterator[ThreadServer]:
    with ThreadServer(create_inbox_app(db_path=tmp_path / "inbox.sqlite3", secret=WEBHOOK_SECRET)) as server:
        yield server


def inbox_records(server_url: str, profile_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{server_url}/api/notifications", params={"profileId": profile_id}, timeout=5)
    answer.raise_for_status()
    return list(answer.json()["notifications"])


@dataclass
class ScriptedReceiver:
    """Answers POSTs from a script of (status, body, content type); the last entry repeats."""

    script: list[tuple[int, bytes, str | None] | float]
    received: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_post: Callable[[int], object] | None = None
    """Called with the number of POSTs received so far, before the answer goes out."""

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            body = await request.body()
            with self.lock:
                self.received.append({"headers": dict(request.headers), "body": body})
                step = self.script[min(len(self.received), len(self.script)) - 1]
                if self.on_post is not None:
                    self.on_post(len(self.received))
            if isinstance(step, float):  # a hang longer than the worker's timeout
                import asyncio

                await asyncio.sleep(step)
                return Response(b'{"sent": true}', media_type="application/json")
            status, content, media = step
            return Response(content, status_code=status, media_type=media)

        return app


def drain(handle: Callable[[Any, list[Any]], None], queues: Queues, *, rounds: int = 200) -> None:
    """Process both queues until neither has a visible message."""
    for _ in range(rounds):
        busy = False
        for queue in (queues.dispatch, queues.delivery):
            messages = queue.receive(max_messages=10)
            if messages:
                busy = True
                handle(queue, messages)
        if not busy:
            return
    raise AssertionError("queues did not drain")


def run_worker(settings: Settings, graph: Graph, queues: Queues) -> None:
    """One real worker (no sweeps) until both queues are drained, then closed."""
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
