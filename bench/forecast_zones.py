"""The review's forecast against the actual finish of an email send with quiet hours in four time zones
(not a test): prints both, per zone too, and ends with one RESULT line.

    .venv/bin/python -m bench.forecast_zones [--recipients 8000] [--provider smtp|postmark]
        [--minutes 18] [--warm-ups 3] [--wave-delay 0]

``make dev``'s processes, each its own: the API (``campaign-engine serve``) and the worker (its
sweeper inside, every minute), on a local Neo4j this starts (or ``NEO4J_URI``, which is WIPED), sending
through the SMTP provider to the pipelining SMTP sink (``bench/_smtp_sink.py``) or through the Postmark
provider to the loopback stand-in (``bench/_standin.py``), each in its own process and recording when
each message arrived. ``--recipients`` email-eligible profiles, a quarter in each of ZONES: offsets
15 to 30 minutes apart, so quiet hours (whole local minutes) end in each at its own instant.

Why: the forecast (``plan.email`` of ``campaigns.previewDispatch``) groups the recipients by when their
quiet hours end in their own zone and walks each group in turn; the engine defers them page by page and
starts a new pass over the audience at the earliest end it saw (a queue delay up to 15 minutes, the
sweeper beyond). Here the zones decide the finish, so the two models meet on real processes.

The quiet hours are chosen from the clock right before the campaign is made (``quiet_window``):
Yangon's have ended and Kolkata's begin about ten minutes later (both send at once); Dhaka's end
``--minutes`` - 15 minutes from now and Kathmandu's ``--minutes`` from now (under 17, Dhaka's alone end
then, and Kathmandu's begin later, like Kolkata's). Before it, ``--warm-ups`` plain email sends to the
same recipients give the forecast this deployment's measured rate, as a deployment that has been sending
has one (with none it assumes the configured 20/s). The wave delay is 0 (``bench.dispatch``'s): the waits
are the zones'. ``--wave-delay S`` pauses S seconds after each email page (of 500) that sent, as
``CAMPAIGN_DISPATCH_DELAY_SECONDS`` does: a pass may then outlast the next quiet-hours end.

Prints the forecast's duration (``finishesAt`` - ``startsAt``) against the actual (from the dispatch
call to the last message's arrival; the email Dispatch ``completed`` too, a wave delay later when its
last page was full) and their ratio; per zone, when its quiet hours end, the forecast's span for its
group (the forecast's own model, ``pass_model.py``) and when its first and last message arrived; the
load average; and ``RESULT forecast_ratio=… recipients=… zones=4 lost=… duplicates=…`` (every
recipient must arrive exactly once). Target: a ratio within 0.85-1.15.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bench._dispatch_send import Sent, send
from bench._dispatch_stack import ADMIN, JWT_SECRET, TENANT, Admin, child_env, seed, spawn, stop
from bench._smtp_sink import SinkProcess, sink_process
from bench._standin import StandinProcess, standin_process
from bench._support import PROFILE_ID_CYPHER, SEED_BATCH, api_process, free_port, neo4j_uri, wiped_graph
from campaign_engine.campaigns.sending.pass_model import passes
from campaign_engine.config import Settings
from campaign_engine.domain.schedule import QuietHours, ready_at
from campaign_engine.domain.types import parse_ts
from campaign_engine.graph.graph import Graph

# +5:30, +5:45, +6:00, +6:30 all year (no daylight saving): profile i lives in ZONES[i % 4].
ZONES = ("Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Yangon")
CAMPAIGN = "bench-zones"
EMAIL_PAGE = 500  # CAMPAIGN_EMAIL_PAGE_SIZE's default, which the bench keeps
_PEOPLE = f"""
UNWIND range($first, $last) AS i
WITH i, {PROFILE_ID_CYPHER} AS id
CREATE (p:Profile {{profileId: id, timeZone: $zones[i % size($zones)], tenants: [$tenant],
                   dob: '1990-01-01', isManaged: false, isServiceProfile: false, campaignStateLock: 0,
                   announcementEmailOptOut: false, announcementPushOptOut: false,
                   campaignUnsubscribeId: randomUUID()}})
CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {{type: 'email', value: id + '@example.com',
                                                   isPrimary: true, isVerified: true}})
"""


def seed_people(graph: Graph, count: int) -> None:
    """``count`` profiles ``bench-0000000``..., each with a verified primary address and a zone."""
    for first in range(0, count, SEED_BATCH):
        last = min(first + SEED_BATCH, count) - 1
        graph.run(_PEOPLE, first=first, last=last, prefix="bench-", zones=list(ZONES), tenant=TENANT)


def quiet_window(now: datetime, minutes: int) -> dict[str, str]:
    """Local ``start``/``end`` (HH:MM) putting Dhaka (and, from 17 minutes, Kathmandu) in quiet hours
    that end ``minutes`` from ``now`` at the latest, and the other zones outside them."""
    base = now.replace(second=0, microsecond=0)
    two = minutes >= 17  # Kathmandu's end is 15 minutes after Dhaka's
    end = (base + timedelta(minutes=minutes - 15 if two else minutes)).astimezone(ZoneInfo("Asia/Dhaka"))
    # They begin ten minutes from now in the first zone left outside (west of the waiting ones).
    start = (base + timedelta(minutes=10)).astimezone(ZoneInfo(ZONES[0] if two else ZONES[1]))
    return {"start": start.strftime("%H:%M"), "end": end.strftime("%H:%M")}


def zone_forecast(
    plan: dict[str, Any], window: dict[str, str], counts: Counter[str], *, delay: int = 0
) -> dict[str, tuple[datetime, datetime, datetime]]:
    """Per zone (the instant its quiet hours end, its group's first send, its group's last) as the
    forecast models them: the worker's passes over the pages (``campaigns/sending/pass_model.py``) from
    ``startsAt`` at ``rate``, each group of zones ready at one instant spread over every page."""
    n = sum(counts.values())
    start = parse_ts(plan["startsAt"])
    quiet = QuietHours(*(datetime.strptime(window[k], "%H:%M").time() for k in ("start", "end")))
    ready = {z: max(start, ready_at(wave=start, now=start, zone=ZoneInfo(z), quiet=quiet)) for z in ZONES}
    instants = sorted(set(ready.values()))
    groups = [(at, float(sum(counts[z] for z in ZONES if ready[z] == at))) for at in instants]
    walked = passes(groups, n, start=start, rate=float(plan["rate"]), page=EMAIL_PAGE, delay=delay)
    out: dict[str, tuple[datetime, datetime, datetime]] = {}
    for g, at in enumerate(instants):
        mine = [s for s in walked if g in s.shares]
        span = (min(s.at for s in mine), max(s.last_sent for s in mine)) if mine else (at, at)
        out.update({z: (at, *span) for z in ZONES if ready[z] == at})
    return out


@contextmanager
def receiver(provider: str) -> Iterator[tuple[SinkProcess | StandinProcess, dict[str, str]]]:
    """The SMTP sink or the Postmark stand-in in its own process, and the worker's settings for it."""
    if provider == "smtp":
        with sink_process() as sink:
            yield sink, {"SMTP_PORT": str(sink.port)}
    else:
        with standin_process() as standin:
            yield standin, {"CAMPAIGN_EMAIL_PROVIDER": "postmark", "POSTMARK_API_KEY": standin.token,
                            "POSTMARK_API_URL": standin.url}  # fmt: skip


def arrivals_once(got: SinkProcess | StandinProcess, n: int, *, timeout: float) -> list[tuple[str, float]]:
    """What the receiver holds once it holds ``n`` messages (the Dispatch completes after the provider
    answered, so at once), or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while len(arrived := got.arrivals()) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    return arrived


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def report(sent: Sent, window: dict[str, str], arrived: list[tuple[str, float]], n: int, delay: int) -> str:
    """Print the forecast against the actual, overall and per zone; the RESULT line's figures."""
    plan, completed = sent.plans["email"], sent.seconds["email"]
    forecast = (parse_ts(plan["finishesAt"]) - parse_ts(plan["startsAt"])).total_seconds()
    counts = Counter(ZONES[i % len(ZONES)] for i in range(n))
    by_zone: dict[str, list[float]] = {z: [] for z in ZONES}
    for address, at in arrived:
        by_zone[ZONES[int(address.split("@")[0].removeprefix("bench-")) % len(ZONES)]].append(at)

    def since(at: datetime | float) -> float:
        return (at.timestamp() if isinstance(at, datetime) else at) - sent.called_at

    print(f"quiet hours {window['start']}-{window['end']} local; {n} recipients; the rate "
          f"{plan['rate']:.0f}/s ({plan['rateSource']}); shaped by: "
          + "; ".join(s["message"] for s in plan["shapedBy"]))  # fmt: skip
    for zone, (ends, begin, done) in zone_forecast(plan, window, counts, delay=delay).items():
        times = by_zone[zone] or [float("nan")]
        offset = datetime.now(ZoneInfo(zone)).strftime("%z")
        print(f"  {zone} ({offset}, {counts[zone]} recipients): quiet hours end {since(ends):+.1f} s; "
              f"forecast {since(begin):.1f}-{since(done):.1f} s, actual first {since(min(times)):.1f} s, "
              f"last {since(max(times)):.1f} s ({len(by_zone[zone])} arrived)")  # fmt: skip
    last = since(max((at for _, at in arrived), default=float("nan")))
    print(f"email: forecast {forecast:.1f} s (finishesAt {since(parse_ts(plan['finishesAt'])):.1f} s after "
          f"the dispatch call), actual {last:.1f} s to the last arrival ({completed:.1f} s to completed), "
          f"ratio forecast/actual {forecast / last:.3f}")  # fmt: skip
    received = Counter(address for address, _ in arrived)
    wanted = {f"bench-{i:07d}@example.com" for i in range(n)}
    lost, duplicates = len(wanted - received.keys()), sum(received.values()) - len(received)
    strays = len(received.keys() - wanted)
    print(f"at the receiver: {len(arrived)} messages, {n - lost} of {n} recipients, {duplicates} twice, "
          f"{strays} other addresses")  # fmt: skip
    return (f"forecast_ratio={forecast / last:.3f} recipients={n} zones={len(ZONES)} lost={lost} "
            f"duplicates={duplicates} forecast_s={forecast:.1f} actual_s={last:.1f} "
            f"rate_source={plan['rateSource']} wave_delay_s={delay}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, default=8000)
    parser.add_argument("--provider", choices=["smtp", "postmark"], default="smtp")
    parser.add_argument("--minutes", type=int, default=18, help="the last quiet hours end this far ahead")
    parser.add_argument("--warm-ups", type=int, default=3, help="plain email sends first (the rate)")
    parser.add_argument("--wave-delay", type=int, default=0, help="seconds after each email page that sent")
    args = parser.parse_args()
    if not 2 <= args.minutes <= 44:
        parser.error("--minutes is 2 to 44 (Yangon's quiet hours must have ended)")
    n = args.recipients
    with (
        receiver(args.provider) as (got, provider_env),  # first: a spawned child inherits no threads
        tempfile.TemporaryDirectory(prefix="bench-zones-") as tmp_name,
        neo4j_uri(heap="1g", pagecache="512m") as uri,
        wiped_graph(Settings(neo4j_uri=uri, _env_file=None)) as graph,
    ):
        tmp = Path(tmp_name)
        seed_people(graph, n)
        env = {**child_env(uri, tmp / "queue.sqlite3", f"http://127.0.0.1:{free_port()}", smtp_port=0),
               **provider_env, "CAMPAIGN_DISPATCH_DELAY_SECONDS": str(args.wave_delay)}  # fmt: skip
        api_env = {**env, "AUTH_JWT_SECRET": JWT_SECRET, "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN,
                   "CAMPAIGN_ENV_FILE": "", "CAMPAIGN_PREVIEW_MAX_RECIPIENTS": str(n + 1)}  # fmt: skip
        worker = spawn(["worker"], env, tmp / "worker.log")
        try:
            with api_process(api_env, log=tmp / "api.log") as (base, _):
                admin = Admin(base)
                give_up = time.monotonic() + 3600 + n / 10
                for k in range(1, args.warm_ups + 1):
                    seed(graph, f"{CAMPAIGN}-warm-{k}", n, email=True, extra={"channels": ["email"]})
                    send(graph, admin, f"{CAMPAIGN}-warm-{k}", n, give_up)
                    got.reset()
                window = quiet_window(datetime.now(UTC), args.minutes)
                seed(graph, CAMPAIGN, n, email=True, extra={"channels": ["email"], "quietHours": window})
                print(f"dispatching {CAMPAIGN} ({load()})", flush=True)
                sent = send(graph, admin, CAMPAIGN, n, give_up)
                arrived = arrivals_once(got, n, timeout=60)
                print(f"done ({load()})")
                admin.close()
        finally:
            stop(worker)
    print(f"RESULT {report(sent, window, arrived, n, args.wave_delay)}")


if __name__ == "__main__":
    main()
