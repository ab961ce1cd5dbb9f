"""``bench.dispatch``'s measured rounds: an end-to-end dispatch with the write and POST ceilings right
after it, the median of several, and the rounds alternated with a baseline release."""

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench._dispatch_send import run_dispatch, warm_up
from bench._dispatch_stack import (
    BATCH,
    CONCURRENCY,
    SECRET,
    WORKER_THREADS,
    Admin,
    Processes,
    Release,
    cpu_seconds,
    notified_count,
    paused,
    seed,
    spawn,
    stop,
)
from bench._support import (
    api_process,
    profile_id,
    release_tree,
    side_by_side,
)
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.delivery.notify.gate import SendGate
from campaign_engine.delivery.notify.outcomes import record_notified
from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.sender import Answered, Outgoing
from campaign_engine.domain.dispatch import delivery_id
from campaign_engine.domain.notification import (
    AnnouncementMetadata,
    AnnouncementPayload,
    payload_json,
)
from campaign_engine.domain.types import format_ts
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.transport import make_webhook_transport
from campaign_engine.graph.graph import Graph, Tx


def write_ceiling(graph: Graph, campaign_id: str, created_at: str, profiles: int) -> float:
    """The worker's notifiedAt write alone (``record_notified``): its batches, WORKER_THREADS threads."""
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

    batches = [
        [profile_id("bench-", i) for i in range(first, min(first + BATCH, profiles))]
        for first in range(0, profiles, BATCH)
    ]
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKER_THREADS) as pool:
        list(pool.map(write, batches))
    return profiles / (time.perf_counter() - started)


def post_ceiling(graph: Graph, inbox_url: str, count: int, gate_campaign: tuple[str, str]) -> float:
    """Signed POSTs alone: the worker's poster, client and pause gate, its batches, WORKER_THREADS threads."""
    transport = make_webhook_transport(
        allow_private=True, rules=DestinationRules.of(local_development=True), max_connections=CONCURRENCY
    )
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
            if not isinstance(answer, Answered) or answer.status_code != 200:
                raise RuntimeError(f"ceiling POST failed: {answer!r}")

    batches = [range(i, min(i + BATCH, count)) for i in range(0, count, BATCH)]
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKER_THREADS) as pool:
        list(pool.map(post, batches))
    elapsed = time.perf_counter() - started
    poster.close()
    return count / elapsed


@dataclass(frozen=True)
class Round:
    """One end-to-end dispatch and the two ceilings measured right after it."""

    end_to_end: float
    writes: float
    posts: float
    worker_cpu_ms: float = float("nan")  # the worker's CPU per recipient end to end: steadier than rates

    @property
    def efficiency(self) -> float:
        return self.end_to_end / min(self.writes, self.posts)

    @property
    def shared_ceiling(self) -> float:
        """On one machine the POSTs and the graph writes share the cores, so the rate
        they allow together is that of running them one after the other, 1 / (1/post + 1/write)."""
        return 1 / (1 / self.writes + 1 / self.posts)

    @property
    def shared_efficiency(self) -> float:
        return self.end_to_end / self.shared_ceiling


def measure_round(
    graph: Graph,
    admin: Admin,
    procs: Processes,
    number: int | str,
    n: int,
    give_up: float,
    time_cap: float | None = None,
) -> Round:
    campaign_id = f"bench-{number}"
    seeding = time.perf_counter()
    seed(graph, campaign_id, n)
    if n >= 100_000:
        print(f"  seeded {n} members in {time.perf_counter() - seeding:.0f}s", flush=True)
    before = [cpu_seconds(pid) for pid in (procs.worker.pid, procs.inbox.pid, procs.database or -1)]
    dispatch_id, elapsed, done = run_dispatch(graph, admin, campaign_id, n, give_up, time_cap=time_cap)
    after = [cpu_seconds(pid) for pid in (procs.worker.pid, procs.inbox.pid, procs.database or -1)]
    worker_ms, inbox_ms, neo4j_ms = (
        1000 * (b - a) / max(done, 1) for a, b in zip(before, after, strict=True)
    )
    record = get_dispatch(graph, dispatch_id)
    partial = f" PARTIAL: {done} of {n} notified when the {time_cap:.0f}s cap ended it" if done < n else ""
    if done == n and notified_count(graph, campaign_id) != n:  # the counter and the relationships agree
        raise RuntimeError("acknowledged counter and notifiedAt disagree")
    print(
        f"round {number}: end to end {done} recipients in {elapsed:.1f}s = {done / elapsed:.0f}/s{partial} "
        f"(acknowledged={record.acknowledged} pages={record.pages}); CPU per recipient: worker "
        f"{worker_ms:.2f} ms, inbox {inbox_ms:.2f} ms, neo4j {neo4j_ms:.2f} ms; {procs.peak_rss()}",
        flush=True,
    )

    # The ceilings alone: the worker is paused (SIGSTOP keeps its connections, costs no CPU).
    ceiling_n = min(n, 10_000)
    ceiling_id = f"bench-ceiling-{number}"
    created_at = seed(graph, ceiling_id, ceiling_n)
    os.kill(procs.worker.pid, signal.SIGSTOP)
    try:
        writes = write_ceiling(graph, ceiling_id, created_at, ceiling_n)
        client_before, inbox_before = time.process_time(), cpu_seconds(procs.inbox.pid)
        posts = post_ceiling(graph, procs.inbox_url, ceiling_n, (ceiling_id, created_at))
        client_ms = 1000 * (time.process_time() - client_before) / ceiling_n
        inbox_ms = 1000 * (cpu_seconds(procs.inbox.pid) - inbox_before) / ceiling_n
    finally:
        os.kill(procs.worker.pid, signal.SIGCONT)
    result = Round(done / elapsed, writes, posts, worker_ms)
    print(
        f"round {number}: write ceiling {writes:.0f} notifiedAt/s (batches of {BATCH}, {WORKER_THREADS} "
        f"threads); post ceiling {posts:.0f} signed POSTs/s ({CONCURRENCY} concurrent; CPU per POST: "
        f"client {client_ms:.2f} ms, inbox {inbox_ms:.2f} ms); efficiency {result.efficiency:.2f}; "
        f"shared ceiling {result.shared_ceiling:.0f}/s, "
        f"efficiency against it {result.shared_efficiency:.2f}",
        flush=True,
    )
    return result


def measure_rounds(
    graph: Graph,
    admin: Admin,
    procs: Processes,
    *,
    n: int,
    rounds: int,
    label: str,
    give_up: float,
    time_cap: float | None = None,
) -> Round:
    """``rounds`` rounds of ``n`` recipients; returns the one with the median efficiency."""
    results = [
        measure_round(graph, admin, procs, f"{label}{k}", n, give_up, time_cap) for k in range(1, rounds + 1)
    ]
    median = sorted(results, key=lambda r: r.efficiency)[len(results) // 2]
    print(f"median round at {n}: {results.index(median) + 1} of {len(results)}", flush=True)
    return median


def with_cap(graph: Graph, admin: Admin, procs: Processes, *, n: int, rounds: int, give_up: float) -> Round:
    """The rounds again, through a worker started with a frequency cap (warmed up first)."""
    warm_up(graph, admin, max(1, min(n // 2, 10_000)), give_up, label="cap-warmup")
    return measure_rounds(graph, admin, procs, n=n, rounds=rounds, label="cap-", give_up=give_up)


@contextmanager
def baseline_release(
    ref: str, tmp: Path, env: dict[str, str], api_env: dict[str, str], procs: Processes
) -> Iterator[Release]:
    """``ref``'s worker and API, each with ``PYTHONPATH`` on its code, sharing ``procs``' inbox."""
    with release_tree(ref) as tree:
        own = {"CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp / "queue-baseline.sqlite3"), "PYTHONPATH": str(tree)}
        worker = spawn(["worker"], {**env, **own}, tmp / "worker-baseline.log", cwd=tree)
        try:
            with api_process({**api_env, **own}, log=tmp / "api-baseline.log") as (base, api_pid):
                admin = Admin(base)
                yield Release(
                    ref, admin, Processes(worker, procs.inbox, procs.inbox_url, procs.database, api_pid)
                )
                admin.close()
        finally:
            stop(worker)


def alternate(
    graph: Graph, releases: list[Release], *, n: int, rounds: int, give_up: float
) -> tuple[Round, str]:
    """The baseline (``releases[1]``) warmed up, then ``rounds`` rounds through each release, ABBA, the
    other's worker paused; prints both per round and the medians' ratios. Returns the current release's
    median round (by efficiency) and the ratios for the RESULT line."""
    current, baseline = releases
    with paused(current.procs.worker):
        warm_up(graph, baseline.admin, max(1, min(n // 2, 10_000)), give_up, label="baseline-warmup")
    results: dict[str, list[Round]] = {current.name: [], baseline.name: []}
    for k in range(1, rounds + 1):
        for release, other in [(current, baseline), (baseline, current)][:: 1 if k % 2 else -1]:
            label = "" if release is current else "baseline-"
            with paused(other.procs.worker):
                results[release.name].append(
                    measure_round(graph, release.admin, release.procs, f"{label}{k}", n, give_up)
                )
    ours, theirs = results[current.name], results[baseline.name]
    ref = baseline.name
    efficiency = side_by_side(
        "efficiency", [r.efficiency for r in ours], [r.efficiency for r in theirs], ref=ref
    )
    rate = side_by_side("recipients/s", [r.end_to_end for r in ours], [r.end_to_end for r in theirs], ref=ref)
    cpu = side_by_side(
        "worker CPU ms per recipient",
        [r.worker_cpu_ms for r in ours],
        [r.worker_cpu_ms for r in theirs],
        ref=ref,
    )
    print(f"{ref}: {baseline.procs.peak_rss()}")
    median = sorted(ours, key=lambda r: r.efficiency)[len(ours) // 2]
    ratios = (
        f" efficiency_ratio={efficiency:.3f} recipients_per_s_ratio={rate:.3f} worker_cpu_ratio={cpu:.3f}"
    )
    return median, f"{ratios} baseline={ref}"
