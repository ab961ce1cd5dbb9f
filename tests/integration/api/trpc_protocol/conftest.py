"""The wire-protocol tests' client of the real app over the session's Neo4j, and an admin's headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


@pytest.fixture
def admin(api: TrpcClient) -> dict[str, str]:
    return api.headers_for(ADMIN_ID, admin=True)
