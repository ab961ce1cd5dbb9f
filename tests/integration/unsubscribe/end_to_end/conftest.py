"""The end-to-end unsubscribe tests' settings (with the secret), client of the real app, and token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.support.api import TrpcClient, api_client
from tests.support.unsubscribe import (
    SECRET,
    UID,
    SteppingClock,
)


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return base_settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(SECRET)})


@pytest.fixture
def api(settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=SteppingClock()) as client:
        yield client


@pytest.fixture
def token() -> str:
    return UnsubscribeTokens(SECRET).issue(UID)
