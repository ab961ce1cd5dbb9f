"""The event-webhook tests' stack: the real worker over a local queue, on a ``StepClock``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import subscribers_for
from campaign_engine.wiring import build_worker
from tests.support.delivery import (
    StepClock,
    delivery_settings,
    local_queues,
)
from tests.support.event_webhooks import Stack


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[Stack]:
    settings = delivery_settings(
        base_settings, campaign_dispatch_page_size=500, campaign_webhook_concurrency=32
    )
    clock = StepClock()
    queues = local_queues(tmp_path / "q.sqlite3")
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    subscribers_for(graph).invalidate()
    try:
        yield Stack(settings, graph, queues, clock, worker)
    finally:
        worker.close()
