"""What the notification-worker tests share: the delivery jobs a queue holds, parsed, and one page of
a dispatch walked onto the delivery queue."""

from __future__ import annotations

from collections.abc import Sequence

from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Received, ReceivedMessage
from campaign_engine.wiring import Queues, build_page_worker
from tests.support.delivery import (
    StepClock,
    start_dispatch,
)


def parsed(messages: Sequence[ReceivedMessage]) -> list[Received[DeliveryJob]]:
    """What the job table hands the worker: each body parsed once."""
    items = []
    for message in messages:
        job = parse_job(message.body)
        assert isinstance(job, DeliveryJob)
        items.append(Received(message, job))
    return items


def _page(settings: Settings, graph: Graph, queues: Queues) -> str:
    started = start_dispatch(graph, queues.dispatch)
    worker = build_page_worker(settings, graph, queues, clock=StepClock())
    for message in queues.dispatch.receive(max_messages=10):
        job = parse_job(message.body)
        worker.handle_page(job)  # type: ignore[arg-type]
        queues.dispatch.delete(message.receipt)
    return started.dispatch_id
