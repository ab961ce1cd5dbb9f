"""A seeded chaos run: ``make dev``'s processes, one notify + email campaign, and faults
at moments the seed chooses; then the delivery promises are checked against what the receivers saw.

    .venv/bin/python -m bench.chaos --seed N [--minutes M] [--recipients 20000] [--keep]

Everything runs as ``make dev`` runs it (``bench/_chaos_stack.py``), in a temporary folder on free ports;
the campaign is driven over HTTP like a user: ``campaign-engine profiles import`` of a JSONL file, then
tRPC ``campaigns.create``, ``addAudience``, ``setStatus``, ``previewDispatch``, ``dispatch``. Waves are
paced (page size from ``--recipients`` and ``--minutes``, 2 s apart) so the walk lasts about 60% of the
``--minutes`` window and a pause leaves time for the resumed walk. The faults (``bench/_chaos_faults.py``):
SIGKILL of the worker and a new one, an API restart, a Neo4j restart, the inbox answering 503 or hanging,
the SMTP relay throttling or failing (``bench/_chaos_fronts.py``), every queue message delivered twice for
a while, and a pause and resume through the API. Each is printed with its time after the dispatch.

The campaign is a ``bulk`` one; a quarter into the window a ``critical`` campaign to the first
``CRITICAL`` recipients (its own subject) is dispatched through the API while the bulk walk runs and the
faults fall, so the lanes' preemption is under the same faults and checked by the same promises.

The run then waits (bounded) for every Dispatch to end, the queue to drain and the sweeper to count
abandoned email claims, resuming a ``failed`` Dispatch as an operator would (printed), and checks the
promises (``bench/_chaos_checks.py``). It prints one line
``RESULT faults=<n> recipients=<n> lost=<n> duplicate_emails=<n> counter_mismatches=<n> stuck=<n>
critical=<n>`` (the promises summed over both campaigns; ``recipients`` the bulk audience, ``critical``
the critical one's) and exits 1 if any of lost, duplicate_emails, counter_mismatches or stuck is not
zero. A failing seed fails again with the same command (the fault sequence is the seed's; the moments
are the same to within the processes' own timing), and its folder with every process's log is kept.
A run whose driver times out waiting (no API, a Dispatch that never ends) prints its RESULT line too,
with ``stuck`` at least 1 (``_chaos_checks.gave_up``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench._chaos_api import EMAIL_COPY, Api, Campaign
from bench._chaos_checks import (
    Result,
    caught_addresses,
    check,
    dead_letters,
    gave_up,
    inbox_recipients,
    inbox_resends,
    merge,
)
from bench._chaos_faults import Injector, schedule
from bench._chaos_stack import Stack
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings

DELAY_SECONDS = 2
CRITICAL = 200  # the critical campaign's audience (at most a tenth of the bulk one's)
CRITICAL_AT = 0.25  # its dispatch, as a share of the fault window after the bulk one's


def audience_file(path: Path, count: int) -> dict[str, str]:
    """``count`` adult profiles with one verified primary email each: every one eligible for both
    channels, so the eligible recipients are the audience."""
    audience = {f"chaos{i:07d}": f"chaos{i:07d}@example.com" for i in range(count)}
    with path.open("w") as out:
        for profile_id, address in audience.items():
            row = {
                "profileId": profile_id,
                "dob": "1990-01-01",
                "emails": [{"address": address, "verified": True, "primary": True}],
            }
            out.write(json.dumps(row) + "\n")
    return audience


def queue_depth(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def wait_for(what: str, done: Callable[[], bool], *, timeout: float, say: Callable[[str], None]) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            say(f"gave up waiting for {what} after {timeout:.0f} s")
            return False
        time.sleep(2)
    return True


def settle(
    stack: Stack,
    campaign: Campaign,
    critical: Campaign,
    injector: Injector,
    counts: dict[str, int],
    window: float,
) -> None:
    """Waits, bounded, until every Dispatch of both campaigns ended and the last of each channel
    completed, the queue is empty and every email has an outcome; a paused bulk campaign is resumed and
    a ``failed`` Dispatch of either resumed, as an operator would. ``counts``: recipients by campaign."""
    say = injector.say
    if campaign.status() != "live" or injector.resume_failed:
        say(f"resume the paused campaign: new dispatch {campaign.send()}")
    resumed: set[str] = set()

    def ended() -> bool:
        worker = stack.children["worker"]
        if worker.poll() is not None:
            stack.exits.append(f"worker pid {worker.pid} rc {worker.returncode}")
            say(f"the worker exited by itself ({stack.exits[-1]}); started worker pid {stack.start_worker()}")
        found = campaign.dispatches() + critical.dispatches()
        for d in found:
            if d["status"] == "failed" and d["dispatchId"] not in resumed:
                resumed.add(d["dispatchId"])
                say(f"operator: resumeDispatch {d['dispatchId']} ({d['channel']} failed: {d['lastError']})")
                campaign.api.mutate("campaigns.resumeDispatch", {"dispatchId": d["dispatchId"]})
                return False
        return bool(found) and all(d["status"] in ("completed", "stopped") for d in found)

    wait_for("every dispatch to end", ended, timeout=window * 2 + 300, say=say)
    wait_for("the queue to drain", lambda: queue_depth(stack.queue_path) == 0, timeout=300, say=say)

    def outcomes() -> bool:
        def answered(c: Campaign) -> int:
            email = [d for d in c.dispatches() if d["channel"] == "email"]
            return sum(int(d["emailed"]) + int(d["uncertain"]) + int(d["rejected"]) for d in email)

        return all(answered(c) >= counts[c.id] for c in (campaign, critical))

    # A claim a killed worker left without an outcome is counted uncertain by the sweeper (every minute)
    # once it is CAMPAIGN_EMAIL_UNCERTAIN_AFTER_SECONDS old.
    wait_for("every email to have an outcome", outcomes, timeout=200, say=say)
    say("settled")


def send_later(injector: Injector, campaign: Campaign, at: float) -> threading.Thread:
    """``campaign`` dispatched ``at`` seconds after the first dispatch, on a thread of its own (the API
    calls retry through restarts); said when it went, or why it did not (the run is then not clean)."""

    def go() -> None:
        wait = injector.t0 + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            injector.say(f"critical send dispatched {campaign.send()}")
        except Exception as exc:  # reported as a broken run, never silently skipped
            injector.failures.append(f"the critical send: {exc!r}")
            injector.say(f"critical send FAILED: {exc!r}")

    thread = threading.Thread(target=go, name="critical", daemon=True)
    thread.start()
    return thread


def pacing(recipients: int, window: float) -> int:
    """The page size that makes the walk last ~60% of the window at one wave every DELAY_SECONDS."""
    return max(1, min(1000, math.ceil(recipients * DELAY_SECONDS / (0.6 * window))))


def run(args: argparse.Namespace, work: Path) -> Result:
    window = args.minutes * 60
    faults = schedule(args.seed, window)
    page_size = pacing(args.recipients, window)
    print(f"chaos seed={args.seed} minutes={args.minutes} recipients={args.recipients} work={work}")
    print(f"waves of {page_size} every {DELAY_SECONDS} s; {len(faults)} faults planned:")
    for fault in faults:
        print(f"  {fault.at:7.1f}s  {fault.kind}" + (f" ({fault.seconds:.1f} s)" if fault.seconds else ""))
    stack = Stack(work, page_size=page_size, delay_seconds=DELAY_SECONDS)
    audience = audience_file(work / "profiles.jsonl", args.recipients)
    critical_audience = dict(list(audience.items())[: min(CRITICAL, max(1, args.recipients // 10))])
    campaign: Campaign | None = None
    critical: Campaign | None = None
    injector: Injector | None = None
    try:
        started = time.monotonic()
        stack.start()
        print(
            f"stack up in {time.monotonic() - started:.1f} s (Neo4j {stack.graph_uri}, API {stack.api_url})"
        )
        started = time.monotonic()
        print(stack.cli("profiles", "import", str(work / "profiles.jsonl")).strip().splitlines()[-1], end="")
        print(f" in {time.monotonic() - started:.1f} s")
        token = mint_token(
            Settings(_env_file=stack.env_file), profile_id="admin", scope=ADMIN_SCOPE, ttl_seconds=6 * 3600
        )
        api = Api(stack.api_url, token)
        campaign = Campaign(api, f"chaos-{args.seed}", priority="bulk", subject=EMAIL_COPY["subject"])
        critical = Campaign(api, f"chaos-{args.seed}-critical", priority="critical", subject="Chaos: urgent")
        campaign.create()
        critical.create(list(critical_audience))
        first = campaign.send()
        injector = Injector(stack, t0=time.monotonic(), pause=campaign.pause, resume=campaign.send)
        injector.say(f"dispatched {first}")
        urgent = send_later(injector, critical, CRITICAL_AT * window)
        injector.inject_all(faults)
        injector.finish()
        urgent.join(timeout=900)
        counts = {campaign.id: len(audience), critical.id: len(critical_audience)}
        settle(stack, campaign, critical, injector, counts, window)
        dead = dead_letters(stack.queue_path)

        def verdict(c: Campaign, people: dict[str, str]) -> Result:
            caught = caught_addresses(stack.mailbox, subject=c.subject)
            inbox = inbox_recipients(stack.inbox_db, c.id)
            return check(audience=people, inbox=inbox, caught=caught, dispatches=c.dispatches(),
                         stats=c.stats(), dead=dead if c is campaign else 0)  # fmt: skip

        result = merge(verdict(campaign, audience), verdict(critical, critical_audience))
        result.mismatches += [f"a process exited by itself: {e}" for e in stack.exits]
        result.mismatches += [f"a fault could not be injected: {e}" for e in injector.failures]
        print("faults injected:")
        for line in sorted(injector.log, key=lambda line: float(line.split("s")[0])):
            print(line)
        for d in campaign.dispatches() + critical.dispatches():
            keys = (
                "status",
                "enqueued",
                "acknowledged",
                "rejected",
                "suppressed",
                "emailed",
                "throttled",
                "uncertain",
                "startedAt",
                "finishedAt",
            )
            print(f"  {d['channel']} {d['dispatchId']}: " + " ".join(f"{k}={d.get(k)}" for k in keys))
            # Each recipient is acknowledged or suppressed once at most; `enqueued` may miss a page per kill
            # (enqueued, then killed before the cursor CAS). Not a promise of the receiver contract (no
            # receiver sees it), so not in RESULT: `suppressed` adds one per delivery message rechecked away,
            # so a message delivered twice after a pause counts twice (the notify worker's _HELD spares only
            # acknowledged ones).
            slack = page_size * sum(1 for f in injector.injected if f.kind == "kill_worker")
            if d["channel"] == "notify" and d["acknowledged"] + d["suppressed"] > d["enqueued"] + slack:
                print(f"  NOTE {d['dispatchId']}: acknowledged + suppressed > enqueued: some counted twice")
        for c in (campaign, critical):
            resent = inbox_resends(stack.inbox_db, c.id)
            caught = caught_addresses(stack.mailbox, subject=c.subject)
            print(f"{c.id}: the inbox stored {len(inbox_recipients(stack.inbox_db, c.id))} recipients "
                  f"({resent} POSTs of a stored one deduplicated); the catcher {sum(caught.values())} "
                  f"messages to {len(caught)} addresses")  # fmt: skip
        print(f"dead letters: {dead}")
        for mismatch in result.mismatches:
            print(f"MISMATCH {mismatch}")
        print(result.line(len(injector.injected)), flush=True)
        return result
    except TimeoutError as exc:  # the driver gave up waiting: a verdict all the same
        if campaign is not None:
            campaign.api.patience = 30  # asked briefly: the API may be what is missing
        result = merge(
            *(
                gave_up(
                    audience=people,
                    inbox_db=stack.inbox_db,
                    mailbox=stack.mailbox,
                    campaign_id=None if c is None else c.id,
                    dispatches=None if c is None else c.dispatches,
                    subject=None if c is None else c.subject,
                    why=f"the driver timed out: {exc}",
                )
                for c, people in ((campaign, audience), (critical, critical_audience))
            )
        )
        print(f"MISMATCH {result.mismatches[0]}")
        print(result.line(0 if injector is None else len(injector.injected)), flush=True)
        return result
    finally:
        stack.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=10.0, help="the fault window; the run takes longer")
    parser.add_argument("--recipients", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (always kept on failure)")
    args = parser.parse_args()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    work = Path(tempfile.mkdtemp(prefix=f"chaos-{args.seed}-"))
    started = time.monotonic()
    ok = interrupted = False
    try:
        ok = run(args, work).ok
    except KeyboardInterrupt:  # every process was stopped on the way out (run's finally)
        interrupted = True
        print("interrupted", flush=True)
    finally:
        print(f"chaos seed={args.seed} took {time.monotonic() - started:.0f} s", flush=True)
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder kept: {work}")
    return 130 if interrupted else 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
