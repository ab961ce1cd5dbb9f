"""Audience and engagement figures (not a test): prints them and ends with one RESULT line.

    .venv/bin/python -m bench.audience [--profiles 100000] [--campaigns 200] [--concurrency 32]

Three processes, as in production: Neo4j (the local launcher, ``LocalNeo4j`` with a 2g heap and 1g
page cache, unless ``NEO4J_URI`` names a database, which is then wiped), the API served by
``campaign-engine serve`` (uvicorn) in its own process, and this process, which seeds the graph and
then generates load over loopback HTTP from ``--concurrency`` asyncio tasks, each with its own keep-alive
connection (``bench/_http.py``: a client that costs ~0.1 ms of CPU per request, so the load generator
does not eat the cores it measures). Latency is measured here, client-side, so every figure includes
HTTP, auth, the rate limiter (with a limit high enough never to refuse, so its count still happens on
every user call) and the graph.

Figures: previewAudience and addAudience of ``--profiles`` DIDs in batches of 10,000 (half stored
DIDs, half did:web aliases); getMyCampaigns latency for users who are members of 10 of
``--campaigns`` live campaigns; recordEvent throughput. Targets on 2 cores: add >= 10,000 profiles/s,
getMyCampaigns p99 < 50 ms, recordEvent >= 500/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench._http import Connection
from bench._support import free_port, neo4j_uri, wait_until_ok
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns import definitions, profiles
from campaign_engine.config import Settings
from campaign_engine.domain.audience import did_web_for
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.schema import apply_schema

ADMIN = "bench-admin"
DOMAIN = "bench.test"
SECRET = "bench-secret-0123456789abcdef-0123456789abcdef"
BATCH = 10_000
MEMBERSHIPS = 10  # live campaigns each benchmark user belongs to (of --campaigns live ones)

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def api_process(env: dict[str, str]) -> Iterator[str]:
    """``campaign-engine serve`` in its own process (its own GIL), ready when /readyz answers 200."""
    port = free_port()
    exe = shutil.which("campaign-engine", path=str(Path(sys.executable).parent))
    argv = [exe] if exe else [sys.executable, "-m", "campaign_engine.cli"]
    log = tempfile.NamedTemporaryFile(prefix="bench-api-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        [*argv, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ok(f"{base}/readyz", proc, timeout=60, log=log.name)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=5_000, help="per measured user procedure")
    args = parser.parse_args()

    with neo4j_uri() as uri:
        env = {
            "NEO4J_URI": uri,
            "NEO4J_USER": os.environ.get("NEO4J_USER", "neo4j"),
            "NEO4J_PASSWORD": os.environ.get("NEO4J_PASSWORD", ""),
            "AUTH_JWT_SECRET": SECRET,
            "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN,
            "DOMAIN_NAME": DOMAIN,
            # Measure the limiter's cost (its write happens on every user call), never refuse.
            "CAMPAIGN_USER_RATE_LIMIT_PER_MINUTE": "1000000000",
            "CAMPAIGN_ENV_FILE": "",
        }
        settings = Settings(
            neo4j_uri=uri,
            neo4j_user=env["NEO4J_USER"],
            neo4j_password=env["NEO4J_PASSWORD"],
            auth_jwt_secret=SECRET,
            campaign_admin_profile_ids=ADMIN,
            domain_name=DOMAIN,
            _env_file=None,
        )
        graph = open_graph(settings)
        try:
            with graph.driver.session(database=graph.database) as session:  # IN TRANSACTIONS: auto-commit
                session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
            apply_schema(graph)
            users = seed(graph, args)
        finally:
            graph.close()
        with api_process(env) as base:
            asyncio.run(measure(base, settings, users, args))


def seed(graph: Graph, args: argparse.Namespace) -> list[str]:
    """Profiles and live campaigns, written directly (setup, not measured); returns the bench users."""
    now = datetime.now(UTC)
    start = time.perf_counter()
    for first in range(0, args.profiles, 1_000):
        rows = [
            {"profileId": f"p{i:07d}", "did": f"did:plc:p{i:07d}" if i % 2 else None, "dob": "1990-01-01"}
            for i in range(first, min(first + 1_000, args.profiles))
        ]
        profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}))
    print(f"seeded {args.profiles} profiles in {time.perf_counter() - start:.1f}s", flush=True)
    users = [f"u{i:03d}" for i in range(args.concurrency)]
    rows = [{"profileId": u, "dob": "1990-01-01"} for u in [*users, ADMIN]]
    profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}))
    for i in range(args.campaigns + 1):
        cid = "audience" if i == args.campaigns else f"live-{i:03d}"
        data = {
            "id": cid,
            "name": f"Campaign {i}",
            "channels": ["inApp"],
            "message": {"title": f"Hello {i}", "body": "x" * 200, "priority": i % 7},
            # A real window, so getMyCampaigns evaluates it (and no "unknown property" notices).
            "startsAt": "2020-01-01T00:00:00Z",
            "endsAt": "2099-01-01T00:00:00Z",
        }
        definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="t", now=now)
        definitions.set_status(graph, campaign_id=cid, status="live", now=now)
    return users


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


async def _run_concurrently(
    n: int, connections: list[Connection], one: Callable[[Connection, int], Awaitable[float]]
) -> list[float]:
    """``n`` calls of ``one(connection, i)``, one task per connection; returns each call's latency (s)."""
    queue = iter(range(n))
    latencies: list[float] = []

    async def worker(connection: Connection) -> None:
        for i in queue:  # a shared iterator: each index is taken by exactly one task
            latencies.append(await one(connection, i))

    await asyncio.gather(*(worker(connection) for connection in connections))
    return latencies


async def measure(base: str, settings: Settings, users: list[str], args: argparse.Namespace) -> None:
    n = args.profiles
    dids = [f"did:plc:p{i:07d}" if i % 2 else did_web_for(f"p{i:07d}", DOMAIN) for i in range(n)]
    batches = [dids[i : i + BATCH] for i in range(0, n, BATCH)]
    admin_headers = {"authorization": f"Bearer {mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE)}"}
    url = urlsplit(base)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    connections = [await Connection.open(host, port) for _ in range(args.concurrency)]
    try:
        await _measure(connections, settings, users, args, batches, admin_headers)
    finally:
        for connection in connections:
            await connection.close()


async def _measure(
    connections: list[Connection],
    settings: Settings,
    users: list[str],
    args: argparse.Namespace,
    batches: list[list[str]],
    admin_headers: dict[str, str],
) -> None:
    n = args.profiles
    client = connections[0]

    async def admin(proc: str, data: dict[str, Any]) -> Any:
        reply = await client.post_json(f"/trpc/{proc}", data, admin_headers)
        assert reply.status == 200, reply.body
        return reply.json()["result"]["data"]

    start = time.perf_counter()
    preview_total = 0
    for batch in batches:
        source = {"type": "dids", "dids": batch}
        answer = await admin("campaigns.previewAudience", {"campaignId": "audience", "source": source})
        preview_total += answer["count"]
    preview_s = time.perf_counter() - start
    assert preview_total == n, preview_total
    print(f"previewAudience: {n} dids in {len(batches)} calls, {preview_s:.2f}s ({n / preview_s:,.0f}/s)")

    start = time.perf_counter()
    added = 0
    for batch in batches:
        source = {"type": "dids", "dids": batch}
        added += (await admin("campaigns.addAudience", {"campaignId": "audience", "source": source}))["added"]
    add_s = time.perf_counter() - start
    add_rate = n / add_s
    assert added == n, added
    print(f"addAudience: {added} added of {n} dids in {add_s:.2f}s ({add_rate:,.0f} profiles/s)")

    # Every user belongs to MEMBERSHIPS of the live campaigns; getMyCampaigns must not scan the rest.
    step = args.campaigns // MEMBERSHIPS
    member_of = [f"live-{i:03d}" for i in range(0, step * MEMBERSHIPS, step)]
    for cid in member_of:
        source = {"type": "profileIds", "profileIds": users}
        await admin("campaigns.addAudience", {"campaignId": cid, "source": source})

    tokens = {u: {"authorization": f"Bearer {mint_token(settings, profile_id=u)}"} for u in users}

    async def my_campaigns(connection: Connection, i: int) -> float:
        t0 = time.perf_counter()
        reply = await connection.get("/trpc/campaigns.getMyCampaigns", tokens[users[i % len(users)]])
        elapsed = time.perf_counter() - t0
        assert reply.status == 200, reply.body
        assert len(reply.json()["result"]["data"]["campaigns"]) == MEMBERSHIPS
        return elapsed

    async def record(connection: Connection, i: int) -> float:
        body = {"campaignId": member_of[i % MEMBERSHIPS], "event": "shown"}
        t0 = time.perf_counter()
        reply = await connection.post_json("/trpc/campaigns.recordEvent", body, tokens[users[i % len(users)]])
        elapsed = time.perf_counter() - t0
        assert reply.status == 200, reply.body
        return elapsed

    c = args.concurrency
    await _run_concurrently(c * 4, connections, my_campaigns)  # warm up connections and query plans
    latencies = sorted(await _run_concurrently(args.requests, connections, my_campaigns))
    p50, p99 = _percentile(latencies, 0.5) * 1000, _percentile(latencies, 0.99) * 1000
    print(f"getMyCampaigns ({args.campaigns} live campaigns, c={c}): p50 {p50:.1f} ms, p99 {p99:.1f} ms")

    await _run_concurrently(c * 4, connections, record)
    start = time.perf_counter()
    record_latencies = sorted(await _run_concurrently(args.requests, connections, record))
    record_s = time.perf_counter() - start
    record_rate = args.requests / record_s
    print(
        f"recordEvent (c={c}): {args.requests} in {record_s:.2f}s ({record_rate:,.0f}/s), "
        f"p50 {statistics.median(record_latencies) * 1000:.1f} ms, "
        f"p99 {_percentile(record_latencies, 0.99) * 1000:.1f} ms"
    )

    # Figures from a 2-core machine mean little if something else was running: say so.
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        f"RESULT audience_add_per_s={add_rate:.0f} my_campaigns_p99_ms={p99:.1f} "
        f"record_event_per_s={record_rate:.0f}"
    )


if __name__ == "__main__":
    main()
