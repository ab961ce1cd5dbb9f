"""Dispatch benchmark (issue 4, §10): end-to-end notify throughput and the two raw ceilings it sits under.

N profiles (default 20,000), notify channel, page size 1000, wave delay 0, the durable local queue, the
worker and the reference inbox each in their own process. Measures, in one run:

- end to end: recipients/s from the dispatch call to the last ``notifiedAt``;
- write ceiling: the batched ``notifiedAt`` write alone (the worker's Cypher, batches of the worker's
  local receive size under sorted profile locks, as many threads as the worker polls with);
- POST ceiling: signed POSTs alone to the same inbox through the same ``WebhookPoster`` (async safe
  transport, same concurrency bound), submitted in the worker's batches from as many threads.

Before anything is timed, a warm-up dispatch (half of N, at most 10,000) runs the same path once, so
every figure is taken with warm JIT (Neo4j) and warm processes: a fresh JVM spends its first minute
compiling, which would bill the end-to-end run for work the ceilings, measured later, never pay.

efficiency = end-to-end / the lower ceiling. The last line is machine-readable. Starts its own local
Neo4j unless ``NEO4J_URI`` is set. Usage: ``.venv/bin/python -m bench.dispatch [--profiles N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench._support import free_port, neo4j_uri
from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.dispatch import dispatch, get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.local_queue import MAX_RECEIVE_BATCH, LocalQueue
from campaign_engine.delivery.notification_worker import (
    Answer,
    Outgoing,
    SendGate,
    WebhookPoster,
    record_notified,
)
from campaign_engine.delivery.safe_transport import make_webhook_transport
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.dispatch import delivery_id
from campaign_engine.domain.notification import (
    AnnouncementMetadata,
    AnnouncementPayload,
    payload_json,
)
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph, Tx, open_graph
from campaign_engine.graph.schema import apply_schema

REPO = Path(__file__).resolve().parents[1]
SECRET = "bench-webhook-secret-0123456789"
PAGE_SIZE = 1000
# Delivery-polling threads (CAMPAIGN_WORKER_THREADS), and the write/POST ceilings' threads. A batch
# spends most of its time waiting (recheck, POSTs, its turn to write), so 8 keep 2 cores busy where 4
# left them idle between batches (measured: ~1200/s with 8 against ~750-950/s with 4).
WORKER_THREADS = 8
# The worker's POST bound (CAMPAIGN_WEBHOOK_CONCURRENCY) and the POST ceiling's, always the same. The
# POSTs share one event loop, so a high bound costs no threads; it lets the inbox's group commit fill.
CONCURRENCY = 64
BATCH = MAX_RECEIVE_BATCH  # the worker's delivery batch on the local queue


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live child process (Linux /proc), to show where the time goes."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def neo4j_pid() -> int | None:
    """The local Neo4j this benchmark started (a child JVM of this process), if any."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and "java" in stat.read_text().split(")", 1)[0]:
            return int(stat.parent.name)
    return None


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


def run_dispatch(graph: Graph, queue: LocalQueue, campaign_id: str, n: int, give_up: float) -> str:
    """Dispatch ``campaign_id`` and wait until all ``n`` members have ``notifiedAt``.

    Progress is read from the Dispatch's ``acknowledged`` counter (one node; it moves in the same
    transaction as each first ``notifiedAt``): counting the campaign's CAMPAIGN_STATE relationships
    ten times a second would load the database under test with up to N reads per poll.
    """
    dispatch_id = dispatch(
        graph,
        queue,
        campaign_id=campaign_id,
        expected_token=None,
        now=datetime.now(UTC),
        adult_age=18,
        max_recipients=n + 1,
    ).dispatch_id
    while get_dispatch(graph, dispatch_id).acknowledged < n:
        if time.monotonic() > give_up:
            raise RuntimeError(f"{campaign_id}: not all {n} notified before the deadline")
        time.sleep(0.1)
    return dispatch_id


def write_ceiling(graph: Graph, campaign_id: str, created_at: str, profiles: int) -> float:
    """The worker's notifiedAt write alone (``record_notified``): its batches, WORKER_THREADS threads."""
    ids = [f"bench-{i:07d}" for i in range(profiles)]
    stamp = format_ts(datetime.now(UTC))
    turn = threading.Lock()

    def write(batch: list[str]) -> None:
        acks = [
            {"profileId": p, "campaignId": campaign_id, "campaignCreatedAt": created_at, "dispatchId": None}
            for p in batch
        ]

        def tx_fn(tx: Tx) -> None:
            record_notified(tx, acks, now=stamp)

        with turn:  # the worker's threads take turns on their outcome writes too
            graph.write(tx_fn)

    batches = [ids[i : i + BATCH] for i in range(0, len(ids), BATCH)]
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKER_THREADS) as pool:
        list(pool.map(write, batches))
    return profiles / (time.perf_counter() - started)


def post_ceiling(graph: Graph, inbox_url: str, count: int, gate_campaign: tuple[str, str]) -> float:
    """Signed POSTs alone: the worker's poster, client and pause gate, its batches, WORKER_THREADS threads."""
    transport = make_webhook_transport(allow_private=True, max_connections=CONCURRENCY)
    poster = WebhookPoster(
        transport, secret=SECRET, concurrency=CONCURRENCY, timeout=10.0, gate=SendGate(graph)
    )
    url = f"{inbox_url}/api/notifications/send"
    created_at = format_ts(datetime.now(UTC))

    def outgoing(i: int) -> Outgoing:
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
        return Outgoing(url=url, body=body, msg_id=did, campaign=gate_campaign)

    def post(batch: range) -> None:
        for answer in poster.post_all([outgoing(i) for i in batch]):
            if not isinstance(answer, Answer) or answer.status_code != 200:
                raise RuntimeError(f"ceiling POST failed: {answer!r}")

    batches = [range(i, min(i + BATCH, count)) for i in range(0, count, BATCH)]
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKER_THREADS) as pool:
        list(pool.map(post, batches))
    elapsed = time.perf_counter() - started
    poster.close()
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
        graph.run(
            "MATCH (c:Campaign) WHERE c.id IN ['bench', 'bench-ceiling', 'bench-warmup'] DETACH DELETE c"
        )
        graph.run("MATCH (d:Dispatch) WHERE NOT (d)-[:DISPATCH_OF]->() DETACH DELETE d")
        print(f"seeding {n} profiles ...", flush=True)
        seed(graph, "bench", n)
        warmup = max(1, min(n // 2, 10_000))
        seed(graph, "bench-warmup", warmup)
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
            queue = LocalQueue(queue_path, "dispatch")
            print(f"warm-up: {warmup} recipients (untimed) ...", flush=True)
            run_dispatch(graph, queue, "bench-warmup", warmup, time.monotonic() + args.deadline)
            database = neo4j_pid()
            cpu_before = (
                cpu_seconds(worker.pid),
                cpu_seconds(inbox.pid),
                cpu_seconds(database) if database else float("nan"),
            )
            started = time.perf_counter()
            dispatch_id = run_dispatch(graph, queue, "bench", n, time.monotonic() + args.deadline)
            elapsed = time.perf_counter() - started
            worker_cpu = cpu_seconds(worker.pid) - cpu_before[0]
            inbox_cpu = cpu_seconds(inbox.pid) - cpu_before[1]
            neo4j_cpu = (cpu_seconds(database) if database else float("nan")) - cpu_before[2]
            end_to_end = n / elapsed
            record = get_dispatch(graph, dispatch_id)
            if notified_count(graph, "bench") != n:  # the counter and the relationships must agree
                raise RuntimeError("acknowledged counter and notifiedAt disagree")
            print(
                f"end to end: {n} recipients in {elapsed:.1f}s = {end_to_end:.0f}/s "
                f"(acknowledged={record.acknowledged} pages={record.pages}); CPU per recipient: "
                f"worker {1000 * worker_cpu / n:.2f} ms, inbox {1000 * inbox_cpu / n:.2f} ms, "
                f"neo4j {1000 * neo4j_cpu / n:.2f} ms",
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
            posts = post_ceiling(graph, inbox_url, ceiling_n, ("bench-ceiling", ceiling_created_at))
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
