"""The health-guard tests' clock, settings, queues, API and worker (function scope each)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker
from tests.support.api import TrpcClient, api_client
from tests.support.delivery import (
    StepClock,
    local_queues,
)
from tests.support.email import email_settings
from tests.support.health_guard import (
    PAGE,
    PASSWORD,
    USER,
)
from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(
        base_settings, postmark.url, postmark.token,
        campaign_email_page_size=PAGE, campaign_dispatch_page_size=PAGE, campaign_email_run_seconds=0.0,
        postmark_webhook_username=USER, postmark_webhook_password=SecretStr(PASSWORD),
    )  # fmt: skip


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


@pytest.fixture
def api(settings: Settings, graph: Graph, clock: StepClock, queues: Queues) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as client:
        yield client


@pytest.fixture
def worker(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> Iterator[LocalWorker]:
    running = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    yield running
    running.close()
