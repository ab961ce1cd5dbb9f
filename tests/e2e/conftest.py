"""Fixtures the end-to-end tests share: the browser of the console and unsubscribe-page tests, and
``make dev``'s processes with an admin client for the journeys driven through them, and a Neo4j of a
test's own for the tests that stop and start it.

A module's browser tests share one Chromium (its start is seconds on a loaded machine) and isolate
themselves in their own browser contexts. Module scope, not session: Playwright's sync API keeps an
event loop of its own, which must not stay open beside the other tests' ``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.local_neo4j import LocalNeo4j
from tests.conftest import free_port
from tests.support.browser import chromium
from tests.support.dev_stacks import on_session_graph

NEO4J_START_TIMEOUT = 240.0  # a JVM start on a loaded 2-core machine


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def dev_stack(
    tmp_path_factory: pytest.TempPathFactory, neo4j_uri: str, session_graph: Graph
) -> Iterator[Stack]:
    """``make dev``'s processes (inbox, SMTP catcher, worker, API) for one module, on the session's
    Neo4j (``tests/support/dev_stacks.py``)."""
    running = Stack(tmp_path_factory.mktemp("dev"), page_size=100, delay_seconds=0, graph_uri=neo4j_uri)
    with on_session_graph(running, session_graph):
        yield running


@pytest.fixture
def dev_admin(dev_stack: Stack) -> Iterator[Api]:
    """The dev stack's API as a platform admin calls it."""
    settings = Settings(_env_file=dev_stack.env_file)  # type: ignore[call-arg]
    api = Api(dev_stack.api_url, mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE), patience=60)
    with api.client:
        yield api


@pytest.fixture
def idle_neo4j(tmp_path: Path) -> Iterator[LocalNeo4j]:
    """A Neo4j of this test alone, not started yet (its port refuses): the test starts it when it
    wants the graph back. Stopped at the end if the test started it."""
    server = LocalNeo4j(data_dir=tmp_path / "neo4j", port=free_port(), heap="512m", pagecache="64m")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_neo4j(idle_neo4j: LocalNeo4j) -> LocalNeo4j:
    """A Neo4j of this test alone, started: killing it must not touch the session graph of other tests."""
    idle_neo4j.start(timeout=NEO4J_START_TIMEOUT)
    return idle_neo4j
