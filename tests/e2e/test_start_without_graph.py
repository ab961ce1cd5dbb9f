"""Processes that start while the graph is away come up, say so, and serve once it returns.

A restart of Neo4j and of the API a few seconds apart (a chaos run, a host reboot) used to leave no
API: its start applied the schema, found the graph refusing, and the process exited for good. Here the
API (``campaign-engine serve``), the worker and the reference inbox are started as a user starts them
while this test's own Neo4j (``idle_neo4j``: its port refuses) is not running yet, and so is a Lambda
API container, in-process (``aws.api_handler`` with API Gateway's event). While the graph is away:

- the API process stays up: ``/readyz`` 503 and a procedure SERVICE_UNAVAILABLE, with a message that
  says why; the worker's ``/readyz`` 503; the inbox, which reads no graph, ready;
- the Lambda cold start answers 503 within a bound (never an invocation error or a hung invocation).

Then Neo4j starts (a fresh store) and, with no restart of anything: the API applies the schema and
serves (``/readyz`` 200, the procedure answers), the Lambda container's next invocation serves, and the
worker delivers a dispatch to the inbox.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from campaign_engine import aws
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.local_neo4j import LocalNeo4j
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, free_port
from tests.e2e.conftest import NEO4J_START_TIMEOUT
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import WEBHOOK_SECRET, make_campaign
from tests.support.lambda_emulator import http_answer, http_event
from tests.support.processes import CliProcess

pytestmark = pytest.mark.e2e

CAMPAIGN = "c-late-graph"
MEMBERS = [f"late{i}" for i in range(5)]
LAMBDA_BOUND = 10.0  # seconds: a cold start's answer while the graph is away (its attempt waits ~1 s)

wait_for = partial(wait_until, timeout=120.0, every=0.1)


def _status(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return None


def _up(process: CliProcess) -> bool:
    """True while ``process`` runs; fails the wait at once when it exited (its start-up failed)."""
    assert process.poll() is None, f"the process exited at start-up: {process.log.read_text()[-2000:]}"
    return True


def _env(neo4j: LocalNeo4j, tmp_path: Path, *, inbox_port: int, metrics_port: int) -> dict[str, str]:
    """What every process gets, as ``make dev`` wires its children (notify only: no email provider)."""
    prefixes = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_", "SMTP_", "EMAIL_", "METRICS_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return {
        **clean,
        "NEO4J_URI": neo4j.uri,
        "NEO4J_PASSWORD": "",
        "AUTH_JWT_SECRET": TEST_JWT_SECRET,
        "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN_ID,
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp_path / "queue.sqlite3"),
        "NOTIFICATIONS_WEBHOOK_URL": f"http://127.0.0.1:{inbox_port}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "METRICS_PORT": str(metrics_port),  # the worker's /metrics and /readyz
    }


class LambdaApi:
    """``aws.api_handler`` in this process, as one Lambda container runs it: the cached app of its
    first invocation serves every later one."""

    def __init__(self, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
        self.settings = settings
        monkeypatch.setattr(aws, "_settings", lambda: settings)  # not the process's env and logging
        aws._api.cache_clear()
        aws._queues.cache_clear()

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any, float]:
        started = time.monotonic()
        result = aws.api_handler(http_event(method, path, **kwargs), SimpleNamespace(aws_request_id="t"))
        answer = http_answer(result)
        return answer.status, answer.json(), time.monotonic() - started

    def close(self) -> None:
        """Ends the container: the app's shut-down closes what it opened (its graph among them)."""
        if not aws._api.cache_info().currsize:
            return
        app: FastAPI = aws._api().app

        async def shut_down() -> None:
            async with app.router.lifespan_context(app):
                pass

        loop = asyncio.get_event_loop()  # the one Mangum set for this thread, as Lambda's runtime keeps
        try:
            loop.run_until_complete(shut_down())
        finally:
            loop.close()
            asyncio.set_event_loop(None)
        aws._api.cache_clear()
        aws._queues.cache_clear()


@pytest.fixture
def lambda_api(
    idle_neo4j: LocalNeo4j, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LambdaApi]:
    settings = Settings(
        neo4j_uri=idle_neo4j.uri,
        neo4j_password=SecretStr(""),
        auth_jwt_secret=SecretStr(TEST_JWT_SECRET),
        campaign_admin_profile_ids=ADMIN_ID,
        campaign_queue_backend="local",
        campaign_local_queue_path=str(tmp_path / "lambda-queue.sqlite3"),
        _env_file=None,
    )
    container = LambdaApi(settings, monkeypatch)
    try:
        yield container
    finally:
        container.close()


def _inbox_rows(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.OperationalError:  # the file is created with the first notification
        return 0
    try:
        query = "SELECT count(*) FROM notifications WHERE campaign_id = ? AND test_id = ''"
        return int(conn.execute(query, (CAMPAIGN,)).fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_processes_started_while_the_graph_is_away_serve_once_it_returns(
    idle_neo4j: LocalNeo4j, lambda_api: LambdaApi, tmp_path: Path
) -> None:
    api_port, inbox_port, metrics_port = free_port(), free_port(), free_port()
    env = _env(idle_neo4j, tmp_path, inbox_port=inbox_port, metrics_port=metrics_port)
    api_url, worker_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{metrics_port}"
    inbox_db = tmp_path / "inbox.sqlite3"
    admin = {
        "authorization": f"Bearer {mint_token(lambda_api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"
    }
    processes = [
        CliProcess(["inbox", "--port", str(inbox_port), "--db", str(inbox_db)], env, tmp_path / "inbox.log"),
        CliProcess(["serve", "--port", str(api_port)], env, tmp_path / "api.log"),
        CliProcess(["worker"], env, tmp_path / "worker.log"),
    ]
    api = processes[1]
    try:
        wait_for("the API up, not ready", lambda: _up(api) and _status(f"{api_url}/readyz") == 503)
        wait_for("the worker up, not ready", lambda: _status(f"{worker_url}/readyz") == 503)
        wait_for("the inbox ready", lambda: _status(f"http://127.0.0.1:{inbox_port}/readyz") == 200)
        listed = httpx.get(
            f"{api_url}/trpc/campaigns.list", params={"input": "{}"}, headers=admin, timeout=30
        )
        assert listed.status_code == 503, listed.text
        error = listed.json()["error"]
        assert error["data"]["code"] == "SERVICE_UNAVAILABLE", error
        assert "starting" in error["message"] and "graph database" in error["message"], error
        assert "api.start_waiting attempt=" in api.log.read_text()

        # A Lambda cold start while the graph is away: a 503 within the bound, twice over.
        status, body, elapsed = lambda_api.call("GET", "/readyz")
        assert (status, body) == (503, {"status": "unavailable"}) and elapsed < LAMBDA_BOUND, elapsed
        status, body, elapsed = lambda_api.call(
            "GET", "/trpc/campaigns.list", query={"input": "{}"}, headers=admin
        )
        assert status == 503 and body["error"]["data"]["code"] == "SERVICE_UNAVAILABLE", body
        assert elapsed < LAMBDA_BOUND, elapsed
        assert [p.poll() for p in processes] == [None, None, None], (
            "a process exited while the graph was away"
        )

        idle_neo4j.start(timeout=NEO4J_START_TIMEOUT)

        wait_for("the API ready without a restart", lambda: _status(f"{api_url}/readyz") == 200)
        wait_for("the worker ready without a restart", lambda: _status(f"{worker_url}/readyz") == 200)
        listed = httpx.get(
            f"{api_url}/trpc/campaigns.list", params={"input": "{}"}, headers=admin, timeout=30
        )
        assert listed.status_code == 200, listed.text
        # The container's next invocation starts the app and serves (its last attempt failed long ago).
        status, body, _ = lambda_api.call("GET", "/trpc/campaigns.list", query={"input": "{}"}, headers=admin)
        assert status == 200, body
        assert lambda_api.call("GET", "/readyz")[:2] == (200, {"status": "ready"})

        # The worker started while the graph was away delivers once it is back.
        settings = Settings(neo4j_uri=idle_neo4j.uri, neo4j_password=SecretStr(""), _env_file=None)
        graph = open_graph(settings)
        try:
            _seed(graph)
        finally:
            graph.close()
        started = httpx.post(
            f"{api_url}/trpc/campaigns.dispatch", json={"campaignId": CAMPAIGN}, headers=admin, timeout=30
        )
        assert started.status_code == 200, started.text
        wait_for("every member at the inbox", lambda: _inbox_rows(inbox_db) == len(MEMBERS))
        assert [p.poll() for p in processes] == [None, None, None], "a process exited"
    finally:
        for process in processes:
            process.stop()


def _seed(graph: Graph) -> None:
    """A live notify campaign whose audience is adults."""
    make_campaign(graph, CAMPAIGN, channels=["notify"], now=datetime.now(UTC))
    graph.run(
        """
        UNWIND $ids AS id
        CREATE (p:Profile {profileId: id, dob: '1990-01-01', isManaged: false, isServiceProfile: false,
                           announcementPushOptOut: false, announcementEmailOptOut: false})
        WITH p
        MATCH (c:Campaign {id: $campaignId})
        CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, source: 'test',
                                           addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}]->(c)
        """,
        ids=MEMBERS,
        campaignId=CAMPAIGN,
    )


def test_a_scheduled_sweep_while_the_graph_is_away_returns_within_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers' graph waits out an outage (300 s by default), past the sweep function's 60 s: the
    handler probes first and leaves the sweep to its next scheduled run."""
    settings = Settings(
        neo4j_uri=f"bolt://127.0.0.1:{free_port()}",  # nothing listens
        campaign_queue_backend="local",
        campaign_local_queue_path=str(tmp_path / "queue.sqlite3"),
        _env_file=None,
    )
    monkeypatch.setattr(aws, "_settings", lambda: settings)
    aws._graph.cache_clear()
    aws._queues.cache_clear()
    try:
        started = time.monotonic()
        assert aws.sweep_handler({}, SimpleNamespace(aws_request_id="t")) == {"skipped": 1}
        assert time.monotonic() - started < 10
    finally:
        aws._graph().close()
        aws._graph.cache_clear()
        aws._queues.cache_clear()
