"""An API key revoked in one API process is refused by another within a second: two
``campaign-engine serve`` processes, as deployed, on the test Neo4j.

The key is created and revoked through process one; process two is asked with it in a tight loop from
just before the revocation. Nothing caches a key (``campaigns/tenants/api_keys.py`` reads its record on every
call), so the first call after the revoking commit is already refused; the test allows one second.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench._support import free_port, wait_until_ok
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.tenants.api_keys import KEY_PREFIX
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET
from tests.support.processes import CliProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_apis(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[list[str]]:
    """Two API processes on an emptied graph: the listing below is of this test's key alone."""
    password = base_settings.neo4j_password.get_secret_value() if base_settings.neo4j_password else ""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CAMPAIGN_", "NEO4J_", "AUTH_"))},
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": password,
        "AUTH_JWT_SECRET": TEST_JWT_SECRET,
        "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN_ID,
        "METRICS_PUBLIC": "true",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp_path / "queue.sqlite3"),
    }
    processes, urls = [], []
    try:
        for index in range(2):
            port = free_port()
            argv = ["serve", "--host", "127.0.0.1", "--port", str(port)]
            process = CliProcess(argv, env, tmp_path / f"api{index}.log")
            processes.append(process)
            urls.append(f"http://127.0.0.1:{port}")
            wait_until_ok(f"{urls[-1]}/readyz", process.popen, timeout=60, log=str(process.log))
        yield urls
    finally:
        for process in processes:
            process.stop()


def test_a_key_revoked_in_one_process_is_refused_by_another_within_a_second(
    base_settings: Settings, two_apis: list[str], tmp_path: Path
) -> None:
    one, two = two_apis
    platform = {
        "authorization": f"Bearer {mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"
    }
    created = httpx.post(
        f"{one}/trpc/apiKeys.create",
        json={"tenantId": "alpha", "name": "ci", "role": "viewer"},
        headers=platform,
    )
    assert created.status_code == 200, created.text
    key = created.json()["result"]["data"]
    as_key = {"authorization": f"Bearer {key['key']}"}
    with httpx.Client(base_url=two, headers=as_key) as client:
        assert client.get("/trpc/campaigns.list").status_code == 200  # the key works in process two
        revoked = httpx.post(f"{one}/trpc/apiKeys.revoke", json={"id": key["id"]}, headers=platform)
        assert revoked.status_code == 200, revoked.text
        committed = time.monotonic()
        while True:
            answer = client.get("/trpc/campaigns.list")
            if answer.status_code == 401:
                break
            assert answer.status_code == 200, answer.text
            assert time.monotonic() - committed < 1.0, "process two still accepts the revoked key after 1 s"
        refused_after = time.monotonic() - committed
    assert answer.json()["error"]["message"] == "api key revoked"
    assert refused_after < 1.0
    print(f"revoked key refused by the other process after {refused_after * 1000:.1f} ms")
    # The listing says when, and its last use is recorded (the key worked in process two).
    listed = httpx.get(
        f"{two}/trpc/apiKeys.list", params={"input": '{"tenantId": "alpha"}'}, headers=platform
    ).json()["result"]["data"]["records"]
    assert [(k["id"], k["revokedAt"] is not None, k["lastUsedAt"] is not None) for k in listed] == [
        (key["id"], True, True)
    ]
    secret = key["key"].removeprefix(KEY_PREFIX).partition("_")[2]  # itself may hold "_" (base64url)
    for log in tmp_path.glob("api*.log"):  # a key is a secret: never in a log
        assert secret not in log.read_text(errors="replace"), log
