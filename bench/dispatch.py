"""Dispatch benchmark (issue 4, §10): end-to-end notify throughput and the two raw ceilings it sits under.

N profiles (default 20,000), notify channel, page size 1000, wave delay 0, the durable local queue, the
worker and the reference inbox each in their own process. Measures, in one run:

- end to end: recipients/s from the dispatch call to the last ``notifiedAt``;
- write ceiling: the batched ``notifiedAt`` write alone (the worker's Cypher, batches of 10 under sorted
  profile locks, as many threads as the worker polls with);
- POST ceiling: signed POSTs alone to the same inbox through the same safe transport and pool size.

efficiency = end-to-end / the lower ceiling. The last line is machine-readable. Starts its own local
Neo4j unless ``NEO4J_URI`` is set. Usage: ``.venv/bin/python -m bench.dispatch [--profiles N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench._support import free_port, neo4j_uri
from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.dispatch import dispatch, get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.local_queue import LocalQueue
from campaign_engine.delivery.safe_transport import make_webhook_client
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.dispatch import delivery_id
from campaign_engine.domain.notification import (
    AnnouncementMetadata,
    AnnouncementPayload,
    payload_json,
)
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Tx, open_graph
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.schema import apply_schema

REPO = Path(__file__).resolve().parents[1]
SECRET = "bench-webhook-secret-0123456789"
PAGE_SIZE = 1000
WORKER_THREADS = 4
# The worker's POST pool (CAMPAIGN_WEBHOOK_CONCURRENCY) and the POST ceiling's, always the same. On a
# 2-core loopback run 8 beats 32: the client is CPU-bound (httpx ~1 ms/POST) and 32 threads thrash the GIL.
CONCURRENCY = 8
BATCH = 10


def child_env(uri: str, queue_path: Path, inbox_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CAMPAIGN_", "NOTIFICATIONS_"))}
    return {
        **keep,
        "NEO4J_URI": uri,
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
        "NOTIFICATIONS_WEBHOOK_URL": f"{inbox_url}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_DISPATCH_PAGE_SIZE": str(PAGE_SIZE),
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_WORKER_THREADS": str(WORKER_THREADS),
        "CAMPAIGN_WEBHOOK_CONCURRENCY": str(CONCURRENCY),
    }


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "campaign_engine.cli", *args],
        env=env,
        cwd=REPO,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def seed(graph: Graph, campaign_id: str, profiles: int) -> str:
    now = datetime.now(UTC)
    created = definitions.create_campaign(
        graph,
        data=CampaignCreate.model_validate(
            {
                "id": campaign_id,
                "name": "Bench",
                "channels": ["notify"],
                "notification": {"title": "Bench", "body": "Throughput"},
            }
        ),
        tenant_id="bench",
        now=now,
    )
    definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    ids = [f"bench-{i:07d}" for i in range(profiles)]
    for start in range(0, len(ids), 5000):
        graph.run(
            """
            UNWIND $ids AS id
            MERGE (p:Profile {profileId: id})
              ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false
            WITH p
            MATCH (c:Campaign {id: $campaignId})
            CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, addedAt: $now,
                                              source: 'bench', selfEnrolled: false}]->(c)
            """,
            ids=ids[start : start + 5000],
            campaignId=campaign_id,
            now=format_ts(now),
        )
    return created.created_at


def notified_count(graph: Graph, campaign_id: str) -> int:
    rows = graph.run(
        "MATCH (:Campaign {id: $id})<-[s:CAMPAIGN_STATE]-() WHERE s.notifiedAt IS NOT NULL "
        "RETURN count(s) AS n",
        id=campaign_id,
    )
    return int(rows[0]["n"])


def write_ceiling(graph: Graph, campaign_id: str, created_at: str, profiles: int) -> float:
    """The worker's notifiedAt write alone: batches of 10 under sorted locks, WORKER_THREADS at once."""
    record = query("notify_record")
    ids = [f"bench-{i:07d}" for i in range(profiles)]
    stamp = format_ts(datetime.now(UTC))

    def write(batch: list[str]) -> None:
        acks = [
            {"profileId": p, "campaignId": campaign_id, "campaignCreatedAt": created_at, "dispatchId": None}
            for p in batch
        ]

        def tx_fn(tx: Tx) -> None:
            lock_profiles(tx, batch)
            tx.run(record, acks=acks, now=stamp).consume()

        graph.write(tx_fn)

    batches = [ids[i : i + BATCH] for i in range(0, len(ids), BATCH)]
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKER_THREADS) as pool:
        list(pool.map(write, batches))
    return profiles / (time.perf_counter() - started)


def post_ceiling(inbox_url: str, count: int) -> float:
    """Signed POSTs alone, through the safe transport, CONCURRENCY at once, to the same inbox."""
    client = make_webhook_client(allow_private=True, timeout=10.0, max_connections=CONCURRENCY)
    url = f"{inbox_url}/api/notifications/send"
    created_at = format_ts(datetime.now(UTC))

    def post(i: int) -> None:
        profile = f"ceiling-{i:07d}"
        did = delivery_id(campaign_id="ceiling", campaign_created_at=created_at, profile_id=profile)
        body = payload_json(
            AnnouncementPayload(
                recipient=profile,
                sender="campaign-engine",
                title="t",
                body="b",
                metadata=AnnouncementMetadata(
                    campaign_id="ceiling",
                    campaign_created_at=created_at,
                    dispatch_id=None,
                    delivery_id=did,
                    campaign_has_in_app=False,
                ),
            )
        )
        headers = signed_headers(SECRET, msg_id=did, body=body, now=int(time.time()))
        headers["content-type"] = "application/json"
        answer = client.post(url, content=body, headers=headers)
        answer.raise_for_status()

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(post, range(count)))
    elapsed = time.perf_counter() - started
    client.close()
    return count / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=20_000)
    parser.add_argument("--deadline", type=float, default=900.0, help="give up after this many seconds")
    args = parser.parse_args()
    n = args.profiles

    with (
        tempfile.TemporaryDirectory(prefix="bench-dispatch-") as tmp_name,
        neo4j_uri(heap="1g", pagecache="256m") as uri,
    ):
        tmp = Path(tmp_name)
        settings = Settings(neo4j_uri=uri, _env_file=None)
        graph = open_graph(settings)
        apply_schema(graph)
        graph.run("MATCH (c:Campaign) WHERE c.id IN ['bench', 'bench-ceiling'] DETACH DELETE c")
        graph.run("MATCH (d:Dispatch) WHERE NOT (d)-[:DISPATCH_OF]->() DETACH DELETE d")
        print(f"seeding {n} profiles ...", flush=True)
        seed(graph, "bench", n)
        ceiling_created_at = seed(graph, "bench-ceiling", 0)

        inbox_port = free_port()
        inbox_url = f"http://127.0.0.1:{inbox_port}"
        queue_path = tmp / "queue.sqlite3"
        env = child_env(uri, queue_path, inbox_url)
        inbox = spawn(
            ["inbox", "--port", str(inbox_port), "--db", str(tmp / "inbox.sqlite3")], env, tmp / "inbox.log"
        )
        worker = None
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{inbox_url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("inbox did not start")
                time.sleep(0.1)

            worker = spawn(["worker"], env, tmp / "worker.log")
            time.sleep(3)  # let the worker import and connect before the clock starts
            queue = LocalQueue(queue_path, "dispatch")
            started = time.perf_counter()
            dispatch_id = dispatch(
                graph,
                queue,
                campaign_id="bench",
                expected_token=None,
                now=datetime.now(UTC),
                adult_age=18,
                max_recipients=n + 1,
            ).dispatch_id
            give_up = time.monotonic() + args.deadline
            done = 0
            while done < n:
                if time.monotonic() > give_up:
                    raise RuntimeError(f"only {done}/{n} notified before the deadline")
                time.sleep(0.2)
                done = notified_count(graph, "bench")
            elapsed = time.perf_counter() - started
            end_to_end = n / elapsed
            record = get_dispatch(graph, dispatch_id)
            print(
                f"end to end: {n} recipients in {elapsed:.1f}s = {end_to_end:.0f}/s "
                f"(acknowledged={record.acknowledged} pages={record.pages})",
                flush=True,
            )
            stop(worker)
            worker = None

            # The ceilings, on the same machine right after: the worker is stopped so they run alone.
            ceiling_n = min(n, 10_000)
            graph.run(
                "UNWIND range(0, $n - 1) AS i WITH 'bench-' + right('000000' + toString(i), 7) AS id "
                "MATCH (p:Profile {profileId: id}), (c:Campaign {id: 'bench-ceiling'}) "
                "CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, addedAt: 'x', "
                "source: 'bench', selfEnrolled: false}]->(c)",
                n=ceiling_n,
            )
            writes = write_ceiling(graph, "bench-ceiling", ceiling_created_at, ceiling_n)
            print(f"write ceiling: {writes:.0f} notifiedAt/s (batches of {BATCH}, {WORKER_THREADS} threads)")
            posts = post_ceiling(inbox_url, ceiling_n)
            print(f"post ceiling: {posts:.0f} signed POSTs/s ({CONCURRENCY} concurrent)")
            efficiency = end_to_end / min(writes, posts)
            print(
                f"RESULT recipients_per_s={end_to_end:.0f} efficiency={efficiency:.2f} "
                f"write_ceiling_per_s={writes:.0f} post_ceiling_per_s={posts:.0f}",
                flush=True,
            )
        finally:
            if worker is not None:
                stop(worker)
            stop(inbox)
            graph.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
