"""What the email page-walk tests share: one dispatch run through the real worker until it completes."""

from __future__ import annotations

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker
from tests.support.delivery import StepClock, drain


def _run(settings: Settings, graph: Graph, queues: Queues) -> None:
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
