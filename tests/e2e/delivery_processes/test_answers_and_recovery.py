"""Proof with real processes, continued: what the worker makes of a receiver's uncertain answers, of
jobs left behind by a deleted campaign, and of a first page whose enqueue was lost (the sweeper).

The stack is ``conftest.py``'s: a worker process and the reference inbox process against the session's
Neo4j and a durable local queue file; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch, list_dispatches
from campaign_engine.delivery.notify.page_walk import PageWorker
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.types import format_ts
from campaign_engine.queue.port import Lane, QueueError, ReceivedMessage
from tests.support.delivery import ThreadServer, add_members, make_campaign, notified
from tests.support.delivery_processes import (
    PAGE_SIZE,
    Stack,
    assert_exactly_once,
    campaign,
    profile_ids,
    utc_now,
    wait_for,
)

# pytest-xdist: one inbox process serves the module (distinct campaign ids): its tests stay on one worker.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("delivery_processes_answers")]


# --- (e) uncertain answers before the acknowledgement --------------------------------------------------


@dataclass
class TimingReceiver:
    """Answers from a script (the last entry repeats) and records when each POST arrived."""

    script: list[tuple[int, bytes, str | None] | float]
    arrivals: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            await request.body()
            with self.lock:
                self.arrivals.append(format_ts(utc_now()))
                step = self.script[min(len(self.arrivals), len(self.script)) - 1]
            if isinstance(step, float):
                await asyncio.sleep(step)  # longer than the worker's timeout: the worker gives up
                return Response(b'{"sent": true}', media_type="application/json")
            status, content, media = step
            return Response(content, status_code=status, media_type=media)

        return app


def test_only_the_positive_answer_sets_notified(stack: Stack) -> None:
    receiver = TimingReceiver(
        [
            (204, b"", None),
            (200, b"ok", "text/plain"),
            (200, b'{"status":"ok"}', "application/json"),
            (500, b'{"sent":true}', "application/json"),
            2.5,
            (200, b'{"result":{"data":{"success":true}}}', "application/json"),
        ],
    )
    make_campaign(stack.graph, "ce", now=utc_now())
    with ThreadServer(receiver.app()) as server:
        add_members(stack.graph, "ce", ["e1"], webhook=f"{server.url}/hook")
        # A visibility timeout well above one batch, so every retry below is the worker's own choice.
        stack.worker(CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS="1", CAMPAIGN_QUEUE_VISIBILITY_SECONDS="15")
        dispatch_id = stack.dispatch("ce")
        wait_for("the acknowledgement", lambda: notified(stack.graph, "ce") == ["e1"])
        wait_for("the queues to drain", stack.queues_empty)
    [row] = stack.graph.run(
        "MATCH (:Profile {profileId: 'e1'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'ce'}) "
        "RETURN s.notifiedAt AS at"
    )
    # Five uncertain answers, each retried; notifiedAt is written only after the sixth, positive one.
    assert len(receiver.arrivals) == 6, receiver.arrivals
    assert row["at"] >= receiver.arrivals[-1] > max(receiver.arrivals[:-1])
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.rejected) == (1, 0)


# --- (f) delete and recreate while jobs are queued ------------------------------------------------------


def test_jobs_of_a_deleted_campaign_do_nothing_for_its_successor(stack: Stack) -> None:
    members = profile_ids("f", 30)
    campaign(stack.graph, "cf", members)
    old_dispatch = stack.dispatch("cf")
    # Play the first page here (same code as the worker) so deliveries and the next page sit queued.
    dispatch_queue, delivery_queue = stack.queue("dispatch"), stack.queue("delivery")
    pages = PageWorker(
        graph=stack.graph,
        delivery_queue=delivery_queue,
        dispatch_queue=dispatch_queue,
        clock=utc_now,
        page_size=PAGE_SIZE,
        delay_seconds=0,
        adult_age=18,
    )
    [message] = dispatch_queue.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    assert pages.handle_page(job).outcome == "next"
    dispatch_queue.delete(message.receipt)
    assert (dispatch_queue.depth(), delivery_queue.depth()) == (1, PAGE_SIZE)

    deletion.delete_campaign(stack.graph, campaign_id="cf")
    time.sleep(0.01)  # a distinct createdAt for the new incarnation
    new_created_at = campaign(stack.graph, "cf", members)  # same id, same members, not dispatched
    stack.worker()
    wait_for("the old jobs to be consumed", stack.queues_empty)
    assert stack.inbox_rows("cf") == []
    assert notified(stack.graph, "cf") == []
    assert list_dispatches(stack.graph, "cf") == []
    with pytest.raises(Exception, match="not found"):
        get_dispatch(stack.graph, old_dispatch)
    assert definitions.get_campaign(stack.graph, "cf").created_at == new_created_at


# --- (g) a lost first-page enqueue is recovered by the sweeper -------------------------------------------


class _FailingQueue:
    """A queue port whose sends fail: the dispatch commits, its first page job never arrives."""

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        raise QueueError("queue unreachable (test)")

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        return []

    def delete(self, receipt: str) -> None:
        raise QueueError("queue unreachable (test)")

    def delete_batch(self, receipts: Sequence[str]) -> None:
        raise QueueError("queue unreachable (test)")

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        raise QueueError("queue unreachable (test)")


def test_lost_first_page_is_recovered_by_the_sweeper(stack: Stack) -> None:
    members = profile_ids("g", 45)
    created_at = campaign(stack.graph, "cg", members)
    stack.worker()
    dispatch_id = stack.dispatch("cg", queue=_FailingQueue())
    assert get_dispatch(stack.graph, dispatch_id).status == "sending"
    time.sleep(1.5)  # older than the 1 s stuck window below; nothing was queued meanwhile
    assert stack.inbox_rows("cg") == [] and stack.queues_empty()

    output = stack.run_cli("sweep", CAMPAIGN_DISPATCH_STUCK_SECONDS="1")
    assert dispatch_id in output
    wait_for("the dispatch to complete", lambda: get_dispatch(stack.graph, dispatch_id).status == "completed")
    wait_for("every recipient", lambda: len(notified(stack.graph, "cg")) == len(members))
    wait_for("the queues to drain", stack.queues_empty)
    assert_exactly_once(stack, "cg", members, created_at)
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.enqueued) == (len(members), len(members))
    assert json.loads(json.dumps(record.model_dump(by_alias=True)))["dispatchId"] == dispatch_id
