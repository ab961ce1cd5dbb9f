"""The audit-trail tests' clock and API (the real app over HTTP, the real graph, a local queue)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.campaigns.self_test import ChannelTester
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client
from tests.support.audit import (
    RecordingTester,
)
from tests.support.delivery import StepClock, local_queues


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def api(base_settings: Settings, graph: Graph, clock: StepClock, tmp_path: Path) -> Iterator[TrpcClient]:
    testers: dict[str, ChannelTester] = {"notify": RecordingTester()}
    queues = local_queues(tmp_path / "queue.sqlite3")
    # The audit's test wave has a few readers: the evidence rule has its own test_test_wave_evidence.
    settings = base_settings.model_copy(update={"campaign_experiment_min_per_variant": 1})
    with api_client(
        settings, graph, clock=clock, dispatch_queue=queues.dispatch, self_test_testers=testers
    ) as client:
        yield client
