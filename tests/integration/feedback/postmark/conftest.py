"""The Postmark-webhook tests' clock, settings (the webhook's credentials) and client of the real app."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client
from tests.support.delivery import StepClock
from tests.support.email import ORIGINS
from tests.support.postmark_feedback import (
    PASSWORD,
    USER,
)


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return base_settings.model_copy(
        update={
            "postmark_webhook_username": USER,
            "postmark_webhook_password": SecretStr(PASSWORD),
            "campaign_soft_bounce_limit": 3,
            "campaign_soft_bounce_window_hours": 24,
            # The API seeds the tenant records at its start (graph/tenants.py): it gets the app origins
            # the workers of these tests send with, as a deployment gives every process one config.
            "campaign_app_origins": json.loads(ORIGINS),
        }
    )


@pytest.fixture
def api(settings: Settings, graph: Graph, clock: StepClock) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=clock) as client:
        yield client
