"""The real npm ``@trpc/client`` (v10 and v11, httpLink and httpBatchLink, no transformer) against the API.

The app runs under uvicorn on a loopback port against the test Neo4j; ``tests/e2e/trpc_client/run.mjs``
drives it from Node and prints what each client saw plus the raw requests it sent. Node and npm are
required: without them this test fails (CI installs them), it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.servers import serve_in_thread

# pytest-xdist: npm ci into tests/e2e/trpc_client (one folder for every worker): one worker runs it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_trpc_client")]

CLIENT_DIR = Path(__file__).parent / "trpc_client"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"'{name}' is required for the tRPC client end-to-end test (install Node.js and npm)")
    return path


@pytest.fixture(scope="session")
def node_client() -> Path:
    """Installs the pinned client packages the way CI does: ``npm ci`` from the committed lock."""
    node, npm = _tool("node"), _tool("npm")
    probe = [node, "--input-type=module", "-e", "await import('trpc10'); await import('trpc11');"]
    if subprocess.run(probe, cwd=CLIENT_DIR, capture_output=True, timeout=60).returncode != 0:
        command = "ci" if (CLIENT_DIR / "package-lock.json").exists() else "install"
        subprocess.run(
            [npm, command, "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CLIENT_DIR,
            check=True,
            timeout=300,
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    assert int(version.strip().lstrip("v").split(".")[0]) >= 18, f"Node {version} has no global fetch"
    return CLIENT_DIR / "run.mjs"


@pytest.fixture
def server_url(base_settings: Settings, graph: Graph) -> Iterator[str]:
    """The real app on a loopback port, served by uvicorn in a thread, stopped after the test."""
    with serve_in_thread(create_app(base_settings, graph=graph)) as url:
        yield url


def _run_clients(script: Path, url: str, token: str) -> list[dict[str, Any]]:
    env = {**os.environ, "TRPC_ADMIN_TOKEN": token}
    done = subprocess.run(
        [_tool("node"), str(script), url],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results


def _query_input(url: str) -> Any:
    values = parse_qs(urlsplit(url).query).get("input")
    return json.loads(values[0]) if values else None


def test_trpc_client_v10_and_v11_with_both_links(
    node_client: Path, server_url: str, base_settings: Settings
) -> None:
    token = mint_token(base_settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    results = _run_clients(node_client, server_url, token)
    assert [(r["version"], r["link"]) for r in results] == [
        ("v10", "httpLink"),
        ("v10", "httpBatchLink"),
        ("v11", "httpLink"),
        ("v11", "httpBatchLink"),
    ]
    for r in results:
        label = f"{r['version']}/{r['link']}"
        campaign_id = f"e2e-{r['version']}-{r['link'].lower()}"

        # A query without input, a mutation with a JSON body, a query with input.
        assert r["list"]["ok"], (label, r["list"])
        assert set(r["list"]["data"]) == {"records", "cursor", "hasMore"}, (label, r["list"])
        assert r["create"]["ok"], (label, r["create"])
        assert r["create"]["data"]["id"] == campaign_id
        assert r["create"]["data"]["status"] == "draft"
        assert r["get"] == {"ok": True, "data": r["create"]["data"]}, label

        # Two queries in one tick, then a pair where one member fails (the server answers 207).
        first, second = r["pair"]
        assert first == {"ok": True, "data": r["create"]["data"]}, label
        assert second["ok"] and len(second["data"]["records"]) == 1, (label, second)
        found, missing = r["mixed"]
        assert found["ok"] and found["data"]["id"] == campaign_id, (label, found)
        assert not missing["ok"] and missing["error"]["code"] == "NOT_FOUND", (label, missing)

        # Errors reach the caller as TRPCClientError with the tRPC error data.
        err = r["missing"]["error"]
        assert err["isTRPCClientError"], (label, err)
        assert (err["code"], err["httpStatus"], err["path"], err["shapeCode"]) == (
            "NOT_FOUND",
            404,
            "campaigns.get",
            -32004,
        ), label
        bad = r["invalid"]["error"]
        assert bad["isTRPCClientError"] and bad["code"] == "BAD_REQUEST", (label, bad)
        assert {tuple(issue["path"]) for issue in bad["issues"]} >= {("name",), ("channels",)}, (label, bad)
        anonymous = r["anonymous"]["error"]
        assert anonymous["isTRPCClientError"] and anonymous["code"] == "UNAUTHORIZED", (label, anonymous)

        # updatedAt echoed through a JavaScript Date matches; the same echo after that update is stale.
        stored = r["create"]["data"]["updatedAt"]
        assert r["echoed"] == stored[:23] + "Z" and r["echoed"] != stored, (label, r["echoed"], stored)
        assert r["echo"]["ok"] and r["echo"]["data"]["description"] == "echoed", (label, r["echo"])
        assert r["echo"]["data"]["revision"] == r["create"]["data"]["revision"] + 1, label
        stale = r["stale"]["error"]
        assert stale["isTRPCClientError"], (label, stale)
        assert (stale["code"], stale["httpStatus"]) == ("CONFLICT", 409), (label, stale)

        _check_wire(label, r["link"], r["requests"], campaign_id)


def _check_wire(label: str, link: str, requests: list[dict[str, Any]], campaign_id: str) -> None:
    """What the unmodified clients put on the wire is exactly what DESIGN.md describes."""
    paths = [unquote(urlsplit(req["url"]).path) for req in requests]
    if link == "httpLink":
        assert all("batch=1" not in req["url"] for req in requests), label
        assert len(requests) == 13, (label, paths)
        create = requests[1]
        assert (create["method"], paths[1], create["contentType"]) == (
            "POST",
            "/trpc/campaigns.create",
            "application/json",
        ), label
        assert json.loads(create["body"])["id"] == campaign_id
        assert (requests[2]["method"], paths[2]) == ("GET", "/trpc/campaigns.get"), label
        assert _query_input(requests[2]["url"]) == {"campaignId": campaign_id}, label
        assert [req["status"] for req in requests[3:7]] == [200, 200, 200, 404], label
        return
    # httpBatchLink: every call goes out as a batch; the two pairs share one request each.
    assert all("batch=1" in req["url"] for req in requests), label
    assert paths[:3] == ["/trpc/campaigns.list", "/trpc/campaigns.create", "/trpc/campaigns.get"], label
    assert requests[1]["method"] == "POST" and json.loads(requests[1]["body"])["0"]["id"] == campaign_id
    assert paths[3] == "/trpc/campaigns.get,campaigns.list", (label, paths)
    assert _query_input(requests[3]["url"]) == {"0": {"campaignId": campaign_id}, "1": {"limit": 1}}, label
    assert requests[3]["status"] == 200, label
    assert paths[4] == "/trpc/campaigns.get,campaigns.get", (label, paths)
    assert requests[4]["status"] == 207, label
    assert len(requests) == 11, (label, paths)
