"""The fixtures of the delivery-process proofs: one reference inbox process per module (its tests use
distinct campaign ids) and, per test, the environment of the worker processes it starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import free_port
from tests.support.delivery import WEBHOOK_SECRET
from tests.support.delivery_processes import PAGE_SIZE, Stack, clean_env, wait_for
from tests.support.processes import CliProcess


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One reference inbox process for the module; tests use distinct campaign ids."""
    tmp = tmp_path_factory.mktemp("inbox")
    port = free_port()
    db = tmp / "inbox.sqlite3"
    env = {**clean_env(), "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET}
    proc = CliProcess(["inbox", "--port", str(port), "--db", str(db)], env, tmp / "inbox.log")
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for("the inbox process", healthy, timeout=30)
        yield url, db
    finally:
        proc.stop()


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path, inbox: tuple[str, Path]) -> Iterator[Stack]:
    inbox_url, inbox_db = inbox
    env = {
        **clean_env(),
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp_path / "queue.sqlite3"),
        "NOTIFICATIONS_WEBHOOK_URL": f"{inbox_url}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_DISPATCH_PAGE_SIZE": str(PAGE_SIZE),
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "2",
        "CAMPAIGN_QUEUE_MAX_RECEIVES": "20",
        "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
        "CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS": "2",
        "CAMPAIGN_WORKER_THREADS": "2",
    }
    the_stack = Stack(graph=graph, tmp=tmp_path, env=env, inbox_url=inbox_url, inbox_db=inbox_db)
    try:
        yield the_stack
    finally:
        for proc in the_stack.procs:
            proc.stop()
