"""``campaign-engine dispatch watch`` against the real API, worker and graph.

The API (uvicorn, in a thread) and the reference inbox run here; the worker is an OS process on the
session's real Neo4j and one durable local queue file. A campaign of 15 members is dispatched through the
API in pages of 5 with a wave delay, so it is still sending when the watch starts; the watch runs as a
subprocess with its output piped (not a TTY), so it prints plain lines, and must end by itself.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, free_port
from tests.support.delivery import WEBHOOK_SECRET, add_members, inbox_server, make_campaign
from tests.support.processes import REPO_ROOT, CliProcess
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e

MEMBERS = [f"w{i:03d}" for i in range(15)]
WAVE_DELAY_SECONDS = 2  # three pages of 5: the dispatch is sending for at least two waves
WATCH_TIMEOUT = 120  # a bound on a shared, slow machine; the watch normally ends within seconds


@dataclass
class Api:
    url: str
    token: str
    env: dict[str, str]


def _clean_env() -> dict[str, str]:
    prefixes = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_", "SMTP_", "EMAIL_")
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


@pytest.fixture
def api(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[Api]:
    queue_path = tmp_path / "queue.sqlite3"
    with inbox_server(tmp_path) as inbox:
        webhook = f"{inbox.url}/api/notifications/send"
        settings = base_settings.model_copy(
            update={
                "campaign_local_queue_path": str(queue_path),
                "notifications_webhook_url": webhook,
                "notifications_webhook_secret": SecretStr(WEBHOOK_SECRET),
                "campaign_allow_private_webhooks": True,
                "campaign_local_development": True,
                "campaign_dispatch_page_size": 5,
                "campaign_dispatch_delay_seconds": WAVE_DELAY_SECONDS,
            }
        )
        env = {
            **_clean_env(),
            "NEO4J_URI": settings.neo4j_uri,
            "NEO4J_USER": settings.neo4j_user,
            "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
            "CAMPAIGN_QUEUE_BACKEND": "local",
            "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
            "NOTIFICATIONS_WEBHOOK_URL": webhook,
            "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
            "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
            "CAMPAIGN_DISPATCH_PAGE_SIZE": "5",
            "CAMPAIGN_DISPATCH_DELAY_SECONDS": str(WAVE_DELAY_SECONDS),
            # Long enough that a slow machine never redelivers a batch in hand (a redelivered delivery is
            # rechecked away and counted `suppressed`, which would blur the exact counts asserted here).
            "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "60",
            "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
            "CAMPAIGN_WORKER_THREADS": "2",
        }
        worker = CliProcess(["worker"], env, tmp_path / "worker.log")
        try:
            with serve_in_thread(create_app(settings, graph=graph)) as url:
                token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
                yield Api(url=url, token=token, env={**_clean_env(), "CAMPAIGN_API_URL": url})
        finally:
            worker.stop()


def watch(api: Api, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """``campaign-engine dispatch watch`` as a user runs it, piped; the token from the environment."""
    env = {**api.env, "CAMPAIGN_API_TOKEN": api.token if token is None else token}
    return subprocess.run(
        [sys.executable, "-m", "campaign_engine.cli", "dispatch", "watch", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=WATCH_TIMEOUT,
        check=False,
    )


def trpc(api: Api, path: str, data: dict[str, Any]) -> Any:
    headers = {"authorization": f"Bearer {api.token}"}
    answer = httpx.post(f"{api.url}/trpc/{path}", json=data, headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["data"]


def test_watch_follows_a_paced_dispatch_until_it_completes(api: Api, graph: Graph) -> None:
    make_campaign(graph, "watched", now=datetime.now(UTC))
    add_members(graph, "watched", MEMBERS, webhook=None)
    started = trpc(api, "campaigns.dispatch", {"campaignId": "watched"})

    done = watch(api, started["dispatchId"], "--interval", "0.2")

    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if started["dispatchId"] in line]
    settled = [int(m[1]) for line in lines if (m := re.search(r" (\d+)/\d+ settled", line))]
    assert len(settled) == len(lines) >= 2
    assert settled == sorted(settled) and len(set(settled)) >= 2  # progress lines, counts increasing
    assert settled[-1] == len(MEMBERS), done.stdout
    assert re.search(r" completed 15/15 settled pages=[34] enqueued=15 acknowledged=15 ", lines[-1])
    assert any(" sending " in line for line in lines)  # it was watched while in progress
    assert done.stdout.splitlines()[-1] == "completed: notify 15 settled"
    assert api.token not in done.stdout + done.stderr


def test_watch_names_an_unknown_dispatch_a_bad_token_and_an_unreachable_api(api: Api) -> None:
    unknown = watch(api, "dsp_does_not_exist")
    assert unknown.returncode == 3
    assert "NOT_FOUND" in unknown.stderr and "dsp_does_not_exist" in unknown.stderr

    bad_token = "not-a-valid-token"
    refused = watch(api, "dsp_does_not_exist", token=bad_token)
    assert refused.returncode == 3
    assert "refused the token (UNAUTHORIZED" in refused.stderr
    assert bad_token not in refused.stdout + refused.stderr

    closed = f"http://127.0.0.1:{free_port()}"
    away = watch(api, "dsp_x", "--api", closed, "--retries", "2", "--interval", "0.05")
    assert away.returncode == 3
    assert f"cannot reach the API at {closed}" in away.stderr and "gave up after 3 attempts" in away.stderr
