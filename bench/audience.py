"""Audience and engagement figures (not a test): prints them and ends with one RESULT line.

    .venv/bin/python -m bench.audience [--profiles 100000] [--campaigns 200] [--concurrency 32]

Starts its own local Neo4j (``LocalNeo4j``) unless ``NEO4J_URI`` is set (that database is wiped), and
serves the real app with uvicorn on loopback so every figure includes HTTP, auth, the rate limiter
(with a limit high enough not to refuse) and the graph.

Figures: addAudience of ``--profiles`` DIDs in batches of 10,000 (half stored DIDs, half did:web
aliases); previewAudience over the same batches; getMyCampaigns latency for users who are members of
``--campaigns`` live campaigns; recordEvent throughput. Targets on 2 cores: add >= 10,000 profiles/s,
getMyCampaigns p99 < 50 ms, recordEvent >= 500/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns import definitions, profiles
from campaign_engine.config import Settings
from campaign_engine.domain.audience import did_web_for
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.local_neo4j import LocalNeo4j
from campaign_engine.graph.schema import apply_schema

ADMIN = "bench-admin"
DOMAIN = "bench.test"
BATCH = 10_000
MEMBERSHIPS = 10  # live campaigns each benchmark user belongs to (of --campaigns live ones)


@contextmanager
def neo4j_uri() -> Iterator[str]:
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    with tempfile.TemporaryDirectory(prefix="bench-neo4j-") as data:
        port = _free_port()
        server = LocalNeo4j(data_dir=Path(data), port=port, heap="1g", pagecache="512m")
        server.start()
        try:
            yield server.uri
        finally:
            server.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(settings: Settings) -> Iterator[str]:
    port = _free_port()
    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=3_000, help="per measured procedure")
    args = parser.parse_args()

    with neo4j_uri() as uri:
        settings = Settings(
            neo4j_uri=uri,
            neo4j_user=os.environ.get("NEO4J_USER", "neo4j"),
            neo4j_password=os.environ.get("NEO4J_PASSWORD", ""),
            auth_jwt_secret="bench-secret-0123456789abcdef-0123456789abcdef",
            campaign_admin_profile_ids=ADMIN,
            domain_name=DOMAIN,
            campaign_user_rate_limit_per_minute=1_000_000_000,  # measure the limiter's cost, never refuse
            _env_file=None,
        )
        graph = open_graph(settings)
        with graph.driver.session(database=graph.database) as session:  # IN TRANSACTIONS needs auto-commit
            session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
        apply_schema(graph)
        run(settings, graph, args)
        graph.close()


def run(settings: Settings, graph: Any, args: argparse.Namespace) -> None:
    now = datetime.now(UTC)
    n = args.profiles
    ids = [f"p{i:07d}" for i in range(n)]
    seed = timed(
        lambda: [
            profiles.upsert_profiles(
                graph,
                ProfileUpsert.model_validate(
                    {
                        "profiles": [
                            {
                                "profileId": pid,
                                "did": f"did:plc:{pid}" if i % 2 else None,
                                "dob": "1990-01-01",
                            }
                            for i, pid in enumerate(ids[start : start + 1000], start=start)
                        ]
                    }
                ),
            )
            for start in range(0, n, 1000)
        ]
    )
    print(f"seeded {n} profiles in {seed:.1f}s")
    users = [f"u{i:03d}" for i in range(args.concurrency)]
    profiles.upsert_profiles(
        graph, ProfileUpsert.model_validate({"profiles": [{"profileId": u} for u in [*users, ADMIN]]})
    )
    for i in range(args.campaigns + 1):
        cid = "audience" if i == args.campaigns else f"live-{i:03d}"
        data = {
            "id": cid,
            "name": f"Campaign {i}",
            "channels": ["inApp"],
            "message": {"title": f"Hello {i}", "body": "x" * 200, "priority": i % 7},
        }
        definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="t", now=now)
        definitions.set_status(graph, campaign_id=cid, status="live", now=now)
    admin_headers = {"authorization": f"Bearer {mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE)}"}
    dids = [f"did:plc:{pid}" if i % 2 else did_web_for(pid, DOMAIN) for i, pid in enumerate(ids)]
    batches = [dids[i : i + BATCH] for i in range(0, n, BATCH)]

    with serve(settings) as base, httpx.Client(base_url=base, timeout=120, headers=admin_headers) as admin:

        def call(proc: str, data: dict[str, Any], *, query: bool = False) -> Any:
            if query:
                response = admin.get(f"/trpc/{proc}", params={"input": json.dumps(data)})
            else:
                response = admin.post(f"/trpc/{proc}", json=data)
            response.raise_for_status()
            return response.json()["result"]["data"]

        preview_total = 0
        start = time.perf_counter()
        for batch in batches:
            source = {"type": "dids", "dids": batch}
            preview_total += call(
                "campaigns.previewAudience", {"campaignId": "audience", "source": source}, query=False
            )["count"]
        preview_s = time.perf_counter() - start
        assert preview_total == n, preview_total
        print(f"previewAudience: {n} dids in {len(batches)} calls, {preview_s:.2f}s ({n / preview_s:,.0f}/s)")
        added = 0
        start = time.perf_counter()
        for batch in batches:
            source = {"type": "dids", "dids": batch}
            added += call("campaigns.addAudience", {"campaignId": "audience", "source": source})["added"]
        add_s = time.perf_counter() - start
        add_rate = n / add_s
        print(f"addAudience: {added} added of {n} dids in {add_s:.2f}s ({add_rate:,.0f} profiles/s)")
        # Every user belongs to MEMBERSHIPS of the live campaigns; getMyCampaigns must not scan the rest.
        for i in range(0, args.campaigns, args.campaigns // MEMBERSHIPS):
            call(
                "campaigns.addAudience",
                {"campaignId": f"live-{i:03d}", "source": {"type": "profileIds", "profileIds": users}},
            )

        tokens = {u: f"Bearer {mint_token(settings, profile_id=u)}" for u in users}
        local = threading.local()

        def client() -> httpx.Client:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=base, timeout=60)
            return local.client  # type: ignore[no-any-return]

        def my_campaigns(i: int) -> float:
            user = users[i % len(users)]
            t0 = time.perf_counter()
            response = client().get("/trpc/campaigns.getMyCampaigns", headers={"authorization": tokens[user]})
            elapsed = time.perf_counter() - t0
            assert response.status_code == 200, response.text
            assert len(response.json()["result"]["data"]["campaigns"]) == MEMBERSHIPS
            return elapsed

        def record(i: int) -> None:
            user = users[i % len(users)]
            response = client().post(
                "/trpc/campaigns.recordEvent",
                headers={"authorization": tokens[user]},
                json={
                    "campaignId": f"live-{(i % MEMBERSHIPS) * (args.campaigns // MEMBERSHIPS):03d}",
                    "event": "shown",
                },
            )
            assert response.status_code == 200, response.text

        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(my_campaigns, range(args.concurrency * 2)))  # warm up connections and plans
            latencies = sorted(pool.map(my_campaigns, range(args.requests)))
            p50 = statistics.median(latencies) * 1000
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
            print(
                f"getMyCampaigns ({args.campaigns} live campaigns, c={args.concurrency}): "
                f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            )
            list(pool.map(record, range(args.concurrency)))
            record_s = timed(lambda: list(pool.map(record, range(args.requests))))
            record_rate = args.requests / record_s
            print(
                f"recordEvent (c={args.concurrency}): {args.requests} in {record_s:.2f}s "
                f"({record_rate:,.0f}/s)"
            )

    print(
        f"RESULT audience_add_per_s={add_rate:.0f} my_campaigns_p99_ms={p99:.1f} "
        f"record_event_per_s={record_rate:.0f}"
    )


if __name__ == "__main__":
    main()
