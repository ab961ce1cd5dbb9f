"""Audience and engagement figures (not a test): prints them and ends with one RESULT line.

    .venv/bin/python -m bench.audience [--profiles 100000] [--campaigns 200] [--concurrency 32]
                                       [--baseline-ref 5ba923f [--rounds 3]]

Three processes, as in production: Neo4j (the local launcher, ``LocalNeo4j`` with a 2g heap and 1g
page cache, unless ``NEO4J_URI`` names a database, which is then wiped), the API served by
``campaign-engine serve`` (uvicorn) in its own process, and this process, which seeds the graph and
then generates load over loopback HTTP from ``--concurrency`` asyncio tasks, each with its own keep-alive
connection (``bench/_http.py``: a client that costs ~0.1 ms of CPU per request, so the load generator
does not eat the cores it measures). Latency is measured here, client-side, so every figure includes
HTTP, auth, the rate limiter (with a limit high enough never to refuse, so its count still happens on
every user call) and the graph.

Figures: previewAudience and addAudience of ``--profiles`` DIDs in batches of 10,000 (half stored
DIDs, half did:web aliases); previewAudience of every profile (``all``) in one call; getMyCampaigns
latency for users who are members of 10 of ``--campaigns`` live campaigns, measured once a round of
5,000 calls gives a p99 within 10 % of the round before (the first round is printed as ``cold``: the
database's JIT compiling the read in the first minute after a start); recordEvent throughput;
the API's peak resident memory (VmHWM).
Targets on 2 cores: add >= 10,000 profiles/s, getMyCampaigns p99 < 50 ms, recordEvent >= 500/s; at
1,000,000 profiles the API's peak RSS under 400 MB.

``--baseline-ref REF`` (the hot paths within 5% of the release without tenant checks) also
starts REF's API (its ``campaign_engine`` and ``cypher`` from ``git archive``, ``PYTHONPATH``) on the
same graph, seeded once in a form both releases read, and after the audience figures measures
getMyCampaigns and recordEvent ``--rounds`` times through each API, alternating; it prints both figures
per round, the medians and their ratio (current / baseline: above 1 is slower for p99, faster for /s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from bench._http import Connection
from bench._latency import percentile, run_concurrently, warm_up
from bench._support import (
    api_env,
    api_process,
    create_profiles,
    neo4j_uri,
    peak_rss_mb,
    release_tree,
    rss_mb,
    side_by_side,
    wiped_graph,
)
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.profiles import records as profiles
from campaign_engine.config import Settings
from campaign_engine.domain.audience import did_web_for
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.graph import Graph

ADMIN = "bench-admin"
DOMAIN = "bench.test"
SECRET = "bench-secret-0123456789abcdef-0123456789abcdef"
BATCH = 10_000
MEMBERSHIPS = 10  # live campaigns each benchmark user belongs to (of --campaigns live ones)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=5_000, help="per measured user procedure")
    parser.add_argument(
        "--baseline-ref",
        help="also run this commit's API (e.g. 5ba923f) on the same graph and measure the hot paths "
        "through both, alternating rounds",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per release with --baseline-ref")
    parser.add_argument("--max-warm-ups", type=int, default=15, help="getMyCampaigns warm-up rounds at most")
    args = parser.parse_args()
    args.ratios = ""
    args.cold_p99 = None

    with neo4j_uri() as uri:
        # Measure the limiter's cost (its write happens on every user call), never refuse.
        env, settings = api_env(
            uri, secret=SECRET, admin=ADMIN, domain=DOMAIN, CAMPAIGN_USER_RATE_LIMIT_PER_MINUTE="1000000000"
        )
        with wiped_graph(settings) as graph:
            users = seed(graph, args)
        with ExitStack() as stack:
            base, api_pid = stack.enter_context(api_process(env))
            rounds = None
            if args.baseline_ref:
                # Each release's rounds run in a fresh API process, neither the one that resolved the
                # audience (its heap is larger), both started after it (the schema is this release's).
                tree = stack.enter_context(release_tree(args.baseline_ref))
                current_base, _ = stack.enter_context(api_process(env))
                baseline_base, _ = stack.enter_context(api_process({**env, "PYTHONPATH": str(tree)}))
                rounds = (current_base, baseline_base)
            asyncio.run(measure(base, settings, users, args, rounds))
            # Peak resident memory over the whole run (bounded, whatever the audience).
            api_peak = peak_rss_mb(api_pid)
            print(
                f"peak RSS: API {api_peak:.0f} MiB (now {rss_mb(api_pid):.0f} MiB); bench client "
                f"{peak_rss_mb(os.getpid()):.0f} MiB"
            )
            print(f"RESULT_RSS api_peak_rss_mb={api_peak:.0f}")


def seed(graph: Graph, args: argparse.Namespace) -> list[str]:
    """Profiles and live campaigns, written directly (setup, not measured); returns the bench users.
    The population is generated by Neo4j in batched statements (``create_profiles``), a million in
    minutes; the few bench users go through the product's upsert."""
    now = datetime.now(UTC)
    start = time.perf_counter()
    create_profiles(graph, count=args.profiles, prefix="p", dob="1990-01-01", did_every_other=True)
    print(f"seeded {args.profiles} profiles in {time.perf_counter() - start:.1f}s", flush=True)
    users = [f"u{i:03d}" for i in range(args.concurrency)]
    rows = [{"profileId": u, "dob": "1990-01-01"} for u in [*users, ADMIN]]
    profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}), tenant_id="default")
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
        definitions.create_campaign(
            graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=now
        )
        definitions.set_status(graph, campaign_id=cid, status="live", now=now)
    return users


def _did_batches(n: int) -> Iterator[list[str]]:
    """The bench DIDs (half stored, half did:web aliases), BATCH at a time: never a list of all n."""
    for first in range(0, n, BATCH):
        yield [
            f"did:plc:p{i:07d}" if i % 2 else did_web_for(f"p{i:07d}", DOMAIN)
            for i in range(first, min(first + BATCH, n))
        ]


async def _connect(base: str, count: int) -> list[Connection]:
    url = urlsplit(base)
    return [await Connection.open(url.hostname or "127.0.0.1", url.port or 80) for _ in range(count)]


async def measure(
    base: str, settings: Settings, users: list[str], args: argparse.Namespace, rounds: tuple[str, str] | None
) -> None:
    """The figures through the API at ``base``; with ``rounds`` (the current release's and another
    release's API on the same graph), the hot paths are measured ``--rounds`` times through each of
    those instead, alternating."""
    admin_headers = {"authorization": f"Bearer {mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE)}"}
    connections = await _connect(base, args.concurrency)
    try:
        member_of = await _audience(connections[0], users, args, admin_headers)
        tokens = {u: {"authorization": f"Bearer {mint_token(settings, profile_id=u)}"} for u in users}
        if rounds is None:
            _, p99, record_rate = await _hot_paths(connections, tokens, users, member_of, args)
    finally:
        for connection in connections:
            await connection.close()
    if rounds is not None:
        p99, record_rate = await _side_by_side(*rounds, tokens, users, member_of, args)
    # Figures from a 2-core machine mean little if something else was running: say so.
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        f"RESULT audience_add_per_s={args.add_rate:.0f} my_campaigns_p99_ms={p99:.1f} "
        f"my_campaigns_cold_p99_ms={args.cold_p99:.1f} record_event_per_s={record_rate:.0f}{args.ratios}"
    )


async def _audience(
    client: Connection, users: list[str], args: argparse.Namespace, admin_headers: dict[str, str]
) -> list[str]:
    """previewAudience and addAudience of every profile, then the bench users' memberships: returns the
    campaigns each user is a member of (and leaves the add rate in ``args.add_rate``)."""
    n = args.profiles

    async def admin(proc: str, data: dict[str, Any]) -> Any:
        reply = await client.post_json(f"/trpc/{proc}", data, admin_headers)
        assert reply.status == 200, reply.body
        return reply.json()["result"]["data"]

    start = time.perf_counter()
    preview_total = 0
    for batch in _did_batches(n):
        source = {"type": "dids", "dids": batch}
        answer = await admin("campaigns.previewAudience", {"campaignId": "audience", "source": source})
        preview_total += answer["count"]
    preview_s = time.perf_counter() - start
    assert preview_total == n, preview_total
    calls = -(-n // BATCH)
    print(f"previewAudience: {n} dids in {calls} calls, {preview_s:.2f}s ({n / preview_s:,.0f}/s)")

    start = time.perf_counter()
    added = 0
    for batch in _did_batches(n):
        source = {"type": "dids", "dids": batch}
        added += (await admin("campaigns.addAudience", {"campaignId": "audience", "source": source}))["added"]
    add_s = time.perf_counter() - start
    args.add_rate = n / add_s
    assert added == n, added
    print(f"addAudience: {added} added of {n} dids in {add_s:.2f}s ({args.add_rate:,.0f} profiles/s)")

    # A graph source names every profile: one call, resolved by the API in keyset pages.
    start = time.perf_counter()
    every = await admin("campaigns.previewAudience", {"campaignId": "audience", "source": {"type": "all"}})
    all_s = time.perf_counter() - start
    total = every["count"]
    print(f"previewAudience all: {total} profiles in one call, {all_s:.2f}s ({total / all_s:,.0f}/s)")

    # Every user belongs to MEMBERSHIPS of the live campaigns; getMyCampaigns must not scan the rest.
    step = args.campaigns // MEMBERSHIPS
    member_of = [f"live-{i:03d}" for i in range(0, step * MEMBERSHIPS, step)]
    for cid in member_of:
        source = {"type": "profileIds", "profileIds": users}
        await admin("campaigns.addAudience", {"campaignId": cid, "source": source})
    return member_of


async def _hot_paths(
    connections: list[Connection],
    tokens: dict[str, dict[str, str]],
    users: list[str],
    member_of: list[str],
    args: argparse.Namespace,
    label: str = "",
) -> tuple[float, float, float]:
    """getMyCampaigns latency and recordEvent throughput (each warmed up first); returns the p50 and
    p99 (ms) and the rate (/s)."""

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
    cold = await warm_up(connections, my_campaigns, args.max_warm_ups, label)
    args.cold_p99 = args.cold_p99 or cold  # with --baseline-ref: the first API's first round
    latencies = sorted(await run_concurrently(args.requests, connections, my_campaigns))
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    print(f"{label}getMyCampaigns ({args.campaigns} live campaigns, c={c}): p50 {p50:.1f}, p99 {p99:.1f} ms")

    await run_concurrently(c * 4, connections, record)
    start = time.perf_counter()
    record_latencies = sorted(await run_concurrently(args.requests, connections, record))
    record_s = time.perf_counter() - start
    record_rate = args.requests / record_s
    print(
        f"{label}recordEvent (c={c}): {args.requests} in {record_s:.2f}s ({record_rate:,.0f}/s), "
        f"p50 {statistics.median(record_latencies) * 1000:.1f} ms, "
        f"p99 {percentile(record_latencies, 0.99) * 1000:.1f} ms",
        flush=True,
    )
    return p50, p99, record_rate


async def _side_by_side(
    base: str,
    baseline_base: str,
    tokens: dict[str, dict[str, str]],
    users: list[str],
    member_of: list[str],
    args: argparse.Namespace,
) -> tuple[float, float]:
    """``--rounds`` rounds of the hot paths through each API, the order swapped every round (ABBA) so a
    drifting machine favours neither; returns the current release's medians and leaves the ratios
    (current / baseline, medians) in ``args.ratios``."""
    ref = args.baseline_ref
    figures: dict[str, list[tuple[float, float, float]]] = {"current": [], ref: []}
    for k in range(1, args.rounds + 1):
        order = [("current", base), (ref, baseline_base)]
        for name, url in order if k % 2 else order[::-1]:
            connections = await _connect(url, args.concurrency)
            try:
                figures[name].append(
                    await _hot_paths(connections, tokens, users, member_of, args, f"round {k} {name}: ")
                )
            finally:
                for connection in connections:
                    await connection.close()
    ours, theirs = figures["current"], figures[ref]
    p50_ratio = side_by_side("getMyCampaigns p50 ms", [f[0] for f in ours], [f[0] for f in theirs], ref=ref)
    p99_ratio = side_by_side("getMyCampaigns p99 ms", [f[1] for f in ours], [f[1] for f in theirs], ref=ref)
    rate_ratio = side_by_side("recordEvent/s", [f[2] for f in ours], [f[2] for f in theirs], ref=ref)
    args.ratios = (
        f" my_campaigns_p50_ratio={p50_ratio:.3f} my_campaigns_p99_ratio={p99_ratio:.3f}"
        f" record_event_ratio={rate_ratio:.3f} baseline={ref}"
    )
    return statistics.median(f[1] for f in ours), statistics.median(f[2] for f in ours)


if __name__ == "__main__":
    main()
