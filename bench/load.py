"""A day of mixed load, measured (not a test): the product under what a deployment sees at once.

    .venv/bin/python -m bench.load [--minutes 10] [--app-rps 200] [--users 20000] [--profiles 100000]
        [--recipients 100000] [--dispatch-at 60] [--import-rows 50000] [--admin-every 10] [--alone 20000]
        [--watch-loop]

``make dev``'s processes, each its own: the API (``campaign-engine serve``), the worker, the reference
inbox, on a local Neo4j this starts (or ``NEO4J_URI``, whose bench campaigns are deleted first).
``--profiles`` people belong to two tenants (``default`` and ``bench``). For ``--minutes``: app traffic
(``getMyCampaigns`` and ``recordEvent`` in turn at ``--app-rps`` over ``--users`` users of a live in-app
campaign, from a process of its own on the light client of ``bench/_http.py``, so neither the bench's
other clients nor its own CPU stand in the measured path), an admin round every ``--admin-every``
seconds (``getStats``, ``previewDispatch`` of the app campaign, an export of its recipients), one
``--import-rows`` CSV import at 30 s, and a ``--recipients`` notify + email dispatch started at
``--dispatch-at`` seconds. Every profile has a verified primary address; the worker sends email through
the SMTP provider to the pipelining SMTP sink (``bench/_smtp_sink.py``), in its own process as a relay
is, which records every recipient. Before the load, a dispatch of ``--alone`` recipients of the same
shape (notify + email) on the same processes gives the rate alone (after one warm-up dispatch); then ten
seconds of light app traffic and one admin round warm the app's statements, as a running deployment has
them. A dispatch ends when both channels did: every recipient notified and the email Dispatch
``completed``.
``/healthz`` is probed ten times a second throughout. ``--watch-loop`` runs the API on a loop with
asyncio's slow-callback detection (debug, 100 ms; ``tests/support/watched_loop.py``) and counts what
it reported: nothing should block the loop, whatever the mix.

Prints per procedure p50/p95/p99 and errors (with why, for each server error or lost answer),
getMyCampaigns' latency per ``--timeline-step`` seconds (when it moved: the import, the dispatch), the
dispatch's rate against its rate alone (recipients over the seconds until both channels ended) and each
channel's, each process's peak and final resident memory and its growth over the last half, and ``RESULT
app_p99_ms=… errors=… dispatch_ratio=… rss_growth_mb=… lost=… duplicates=… email_lost=…
email_duplicates=… notify_per_s=… email_per_s=… notify_ratio=… email_ratio=… app_rps_reached=…`` (lost
and duplicates: the loaded dispatch's recipients as the inbox recorded them, email_lost and
email_duplicates as the sink did, emptied right before it: each must be there once; the per-channel
rates are under load, their ratios to the same channel alone; app_rps_reached is the app calls issued a
second, below ``--app-rps`` when the bench's own client fell behind).
Targets (a quiet 2-core machine, 10 minutes): getMyCampaigns p99 < 150 ms, 0 server errors, ratio
at least 0.6, growth < 50 MB. On a shared machine try it short: ``--minutes 2 --app-rps 50``.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from bench._dispatch_send import Sent, send
from bench._dispatch_stack import (
    ADMIN,
    JWT_SECRET,
    TENANT,
    Admin,
    child_env,
    forget_earlier_runs,
    neo4j_pid,
    seed,
    spawn,
    stop,
)
from bench._load_traffic import (
    Latencies,
    Memory,
    admin_traffic,
    app_traffic,
    in_own_process,
    one_import,
    probe_health,
    slow_callbacks,
)
from bench._smtp_sink import sink_process
from bench._support import PROFILE_ID_CYPHER, SEED_BATCH, api_process, free_port, neo4j_uri, wait_until_ok
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns import definitions
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.schema import apply_schema

APP_CAMPAIGN = "load-app"
_PEOPLE = f"""
UNWIND range($first, $last) AS i
WITH {PROFILE_ID_CYPHER} AS id
MERGE (p:Profile {{profileId: id}})
  ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false, p.isManaged = false,
                p.isServiceProfile = false, p.dob = '1990-01-01', p.campaignStateLock = 0
SET p.tenants = ['default', $tenant],
    p.campaignUnsubscribeId = coalesce(p.campaignUnsubscribeId, randomUUID())
MERGE (p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {{type: 'email', value: id + '@example.com'}})
SET m.isPrimary = true, m.isVerified = true
"""
_APP_MEMBERS = f"""
MATCH (c:Campaign {{id: $campaignId}})
UNWIND range($first, $last) AS i
MATCH (p:Profile {{profileId: {PROFILE_ID_CYPHER}}})
MERGE (p)-[:IN_CAMPAIGN_AUDIENCE {{campaignId: c.id, profileId: p.profileId, source: 'bench',
                                  addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}}]->(c)
"""


def _seed_people(graph: Graph, profiles: int, users: int) -> None:
    """``profiles`` people ``bench-0000000``... in both tenants, each with a verified primary address
    (``<profileId>@example.com``) and, as ``upsert_profiles`` gives one, an unsubscribe id (so no email
    claim allocates one); the first ``users`` are the app's."""
    for first in range(0, profiles, SEED_BATCH):
        graph.run(
            _PEOPLE, first=first, last=min(first + SEED_BATCH, profiles) - 1, prefix="bench-", tenant=TENANT
        )
    now = datetime.now(UTC)
    data = {"id": APP_CAMPAIGN, "name": "App", "channels": ["inApp"], "message": {"title": "Welcome back"}}
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=now)
    definitions.set_status(graph, campaign_id=APP_CAMPAIGN, status="live", now=now)
    for first in range(0, users, SEED_BATCH):
        graph.run(_APP_MEMBERS, first=first, last=min(first + SEED_BATCH, users) - 1, prefix="bench-",
                  campaignId=APP_CAMPAIGN)  # fmt: skip


def _inbox_counts(db: Path, campaign_id: str, expected: int) -> tuple[int, int]:
    """(lost, duplicates) of ``campaign_id`` in the reference inbox's durable file."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT count(DISTINCT recipient), coalesce(sum(receive_count - 1), 0) FROM notifications "
            "WHERE campaign_id = ? AND test_id = ''",
            (campaign_id,),
        ).fetchone()
    finally:
        conn.close()
    return expected - int(rows[0]), int(rows[1])


def _sink_counts(addresses: list[str], expected: int) -> tuple[int, int, int]:
    """(lost, duplicates, strays) of the loaded dispatch's email at the sink, emptied right before it:
    each of its recipients' addresses once, none other."""
    received = Counter(addresses)
    wanted = {f"bench-{i:07d}@example.com" for i in range(expected)}
    return (
        len(wanted - received.keys()),
        sum(received.values()) - len(received),
        len(received.keys() - wanted),
    )


def _rates(sent: Sent) -> dict[str, float]:
    """Per channel: the recipients it reached over its seconds from the dispatch call to its end."""
    return {channel: sent.reached[channel] / sent.seconds[channel] for channel in sent.reached}


def _said(rates: dict[str, float]) -> str:
    return ", ".join(f"{channel} {rate:,.0f}/s" for channel, rate in rates.items())


async def _warm_up(base: str, settings: Settings, users: list[str]) -> None:
    """What the measured window's first seconds would otherwise pay once: the app's and the admins'
    statements planned by a fresh Neo4j and the API's first calls (a long-running deployment has them
    warm). Ten seconds of app traffic at 20 calls/s over 100 users, and one admin round."""
    until = time.monotonic() + 10
    admin_token = mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE, tenant_id="default")
    await asyncio.gather(
        in_own_process(
            app_traffic, base, JWT_SECRET, rps=20, users=users[:100], campaign=APP_CAMPAIGN, until=until
        ),
        admin_traffic(
            base,
            admin_token,
            every=60,
            campaigns=(APP_CAMPAIGN, APP_CAMPAIGN),
            until=until,
            stats=Latencies(),
        ),
    )


async def _load(
    args: argparse.Namespace, base: str, settings: Settings, memory: Memory, users: list[str]
) -> tuple[Latencies, float, float]:
    admin_token = mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE, tenant_id="default")
    stats = Latencies()
    start = time.monotonic()
    until = start + args.minutes * 60
    import_token = mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE, tenant_id=TENANT)

    async def app() -> None:
        stats.merge(await in_own_process(
            app_traffic, base, JWT_SECRET, rps=args.app_rps, users=users, campaign=APP_CAMPAIGN, until=until
        ))  # fmt: skip

    await asyncio.gather(
        app(),
        admin_traffic(
            base,
            admin_token,
            every=args.admin_every,
            campaigns=(APP_CAMPAIGN, APP_CAMPAIGN),
            until=until,
            stats=stats,
        ),
        one_import(base, import_token, args.import_rows, at=start + 30, stats=stats),
        memory.sample(every=2.0, until=until),
        probe_health(base, every=0.1, until=until, stats=stats),
    )
    return stats, start, time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--app-rps", type=float, default=200)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--recipients", type=int, default=100_000)
    parser.add_argument("--dispatch-at", type=float, default=60)
    parser.add_argument("--import-rows", type=int, default=50_000)
    parser.add_argument("--admin-every", type=float, default=10)
    parser.add_argument("--alone", type=int, default=20_000)
    parser.add_argument("--timeline-step", type=float, default=30, help="seconds per latency window")
    parser.add_argument("--watch-loop", action="store_true", help="the API's loop logs slow callbacks")
    args = parser.parse_args()
    settings = Settings(auth_jwt_secret=JWT_SECRET, _env_file=None)
    with (
        sink_process() as sink,  # first: a spawned child inherits no threads or drivers
        tempfile.TemporaryDirectory(prefix="bench-load-") as tmp_name,
        neo4j_uri(heap="1g", pagecache="512m") as uri,
    ):
        tmp = Path(tmp_name)
        # The bench's own graph seeds 50,000 people a statement: the API's 10 s deadline is not for it.
        graph = open_graph(Settings(neo4j_uri=uri, neo4j_tx_timeout_seconds=600, _env_file=None))
        apply_schema(graph)
        forget_earlier_runs(graph)
        graph.run("MATCH (c:Campaign {id: $id}) DETACH DELETE c", id=APP_CAMPAIGN)
        _seed_people(graph, max(args.profiles, args.recipients, args.users), args.users)
        seed(graph, "bench-warm", min(args.alone, 5_000), email=True)
        seed(graph, "bench-alone", args.alone, email=True)
        seed(graph, "bench-load", args.recipients, email=True)
        inbox_url = f"http://127.0.0.1:{free_port()}"
        env = child_env(uri, tmp / "queue.sqlite3", inbox_url, smtp_port=sink.port)
        api_env = {**env, "AUTH_JWT_SECRET": JWT_SECRET, "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN,
                   "CAMPAIGN_ENV_FILE": "",
                   "CAMPAIGN_PREVIEW_MAX_RECIPIENTS": str(max(args.recipients, args.users) + 1)}  # fmt: skip
        inbox_db = tmp / "inbox.sqlite3"
        inbox = spawn(
            ["inbox", "--port", inbox_url.rsplit(":", 1)[1], "--db", str(inbox_db)], env, tmp / "inbox.log"
        )
        worker = None
        try:
            wait_until_ok(f"{inbox_url}/healthz", inbox, timeout=30, log=str(tmp / "inbox.log"))
            worker = spawn(["worker"], env, tmp / "worker.log")
            with api_process(api_env, log=tmp / "api.log", watched=args.watch_loop) as (base, api_pid):
                admin = Admin(base)
                give_up = time.monotonic() + 3600
                send(graph, admin, "bench-warm", min(args.alone, 5_000), give_up)
                alone = send(graph, admin, "bench-alone", args.alone, give_up)
                alone_rate = args.alone / alone.elapsed
                print(f"dispatch alone: {args.alone:,} recipients at {alone_rate:,.0f}/s "
                      f"({_said(_rates(alone))})", flush=True)  # fmt: skip
                sink.reset()  # forget what the warm-up and the dispatch alone emailed: it counts the load's
                pids = {"api": api_pid, "worker": worker.pid, "inbox": inbox.pid}
                if (db := neo4j_pid()) is not None:
                    pids["neo4j"] = db
                memory = Memory(pids)
                loaded: list[Sent] = []

                refused: list[str] = []  # the dispatch's review or confirmation answered "try again"

                def dispatch_later() -> None:
                    time.sleep(args.dispatch_at)
                    for _ in range(5):  # as an admin would: the answer says to try again
                        try:
                            loaded.append(send(graph, admin, "bench-load", args.recipients, give_up))
                            return
                        except RuntimeError as exc:
                            if " 503 " not in str(exc):
                                raise
                            refused.append(str(exc)[:160])
                            print(f"dispatch refused, tried again: {refused[-1]}", flush=True)

                users = [f"bench-{i:07d}" for i in range(args.users)]
                asyncio.run(_warm_up(base, settings, users))
                sender = threading.Thread(target=dispatch_later, daemon=True)
                sender.start()
                stats, start, end = asyncio.run(_load(args, base, settings, memory, users))
                sender.join()
                admin.close()
        finally:
            if worker is not None:
                stop(worker)
            stop(inbox)
        lost, duplicates = _inbox_counts(inbox_db, "bench-load", args.recipients)
        mailed = sink.addresses()
        email_lost, email_duplicates, strays = _sink_counts(mailed, args.recipients)
        slow = slow_callbacks((tmp / "api.log").read_text(errors="replace"))
        graph.close()
    errors = sum(stats.errors.values()) + len(refused)
    # Arrivals the open loop managed: below --app-rps when the bench's own client fell behind.
    app_calls = sum(len(stats.seconds[n]) for n in ("campaigns.getMyCampaigns", "campaigns.recordEvent"))
    app_rps_reached = app_calls / (end - start)
    growth = max(memory.growth_over_last_half(name, start, end) for name in memory.pids)
    print(stats.table())
    print(stats.timeline("campaigns.getMyCampaigns", start, step=args.timeline_step))
    if loaded:
        sent = _dispatch_figures(loaded[0], alone, alone_rate)
        sent += (f" lost={lost} duplicates={duplicates} email_lost={email_lost} "
                 f"email_duplicates={email_duplicates}")  # fmt: skip
        print(f"email at the sink: {len(mailed):,} messages, {args.recipients - email_lost:,} of the "
              f"{args.recipients:,} recipients, {strays} other addresses")  # fmt: skip
    else:  # every try refused: what the app saw is still measured, the send is not
        print(f"dispatch under load: never confirmed ({len(refused)} tries answered 503)")
        sent = "dispatch_ratio=none"
    print(memory.table(start, end))
    if args.watch_loop:
        print(
            f"slow callbacks (100 ms) on the API's loop: {len(slow)}, of the loop's own 100 ms or more "
            f"{sum(own >= 0.1 for own in slow)}, the longest own {max(slow, default=0):.3f} s"
        )
    print(f"RESULT app_p99_ms={stats.p('campaigns.getMyCampaigns', 99):.0f} errors={errors} "
          f"rss_growth_mb={growth:.0f} {sent} healthz_p99_ms={stats.p('healthz', 99):.0f} "
          f"slow_callbacks={sum(own >= 0.1 for own in slow) if args.watch_loop else 'unwatched'} "
          f"minutes={args.minutes:g} app_rps={args.app_rps:g} "
          f"app_rps_reached={app_rps_reached:.0f} recipients={args.recipients}")  # fmt: skip


def _dispatch_figures(under: Sent, alone: Sent, alone_rate: float) -> str:
    """Prints the loaded dispatch's rates against the same dispatch alone; their RESULT fields."""
    rate = under.reached["notify"] / under.elapsed
    channel_rates, alone_rates = _rates(under), _rates(alone)
    print(f"dispatch under load: {under.reached['notify']:,} recipients in {under.elapsed:.1f} s "
          f"({rate:,.0f}/s), {rate / alone_rate:.2f} of its rate alone; {_said(channel_rates)}, "
          + ", ".join(f"{ch} {channel_rates[ch] / alone_rates[ch]:.2f}" for ch in channel_rates)
          + " of the same channel's alone")  # fmt: skip
    return (f"dispatch_ratio={rate / alone_rate:.2f} notify_per_s={channel_rates['notify']:.0f} "
            f"email_per_s={channel_rates['email']:.0f} "
            f"notify_ratio={channel_rates['notify'] / alone_rates['notify']:.2f} "
            f"email_ratio={channel_rates['email'] / alone_rates['email']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
