"""The watched loop, the event-loop tests' instrument, can fail them: a step that sleeps on the loop and
one that computes on it are each reported with at least their own time, a quick step not at all, and
the loop keeps asyncio's slow-callback detection without debug mode's stack captures. It runs in a
child process because it wraps ``Handle._run`` for the whole interpreter."""

from __future__ import annotations

import subprocess
import sys

from campaign_engine.graph.local_neo4j import repo_root
from tests.support.watched_loop import SLOW_CALLBACK_SECONDS, on_the_loop

_LOOP = """
import asyncio, time
from tests.support.watched_loop import watched_loop

async def sleeps_on_the_loop():
    time.sleep(0.2)

async def computes_on_the_loop():
    end = time.thread_time() + 0.15
    while time.thread_time() < end:
        pass

async def quick():
    await asyncio.sleep(0.01)

async def main():
    for step in (sleeps_on_the_loop, computes_on_the_loop, quick):
        await asyncio.create_task(step())
    assert asyncio.get_running_loop()._debug
    assert asyncio.get_running_loop().create_future()._source_traceback is None

watched_loop().run_until_complete(main())
"""


def test_a_step_that_sleeps_or_computes_on_the_loop_is_reported_with_its_own_time() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOOP],
        cwd=repo_root(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    reports = [line for line in done.stdout.splitlines() if line.startswith("SLOW-CALLBACK ")]
    named = {name: [r for r in reports if name in r] for name in ("sleeps_on", "computes_on", "quick")}
    assert len(named["sleeps_on"]) == 1 and len(named["computes_on"]) == 1, reports
    assert named["quick"] == [], reports
    assert on_the_loop(named["sleeps_on"][0]) >= 0.19, reports
    assert " in " in named["sleeps_on"][0] and "waiting on a lock" not in named["sleeps_on"][0], reports
    assert on_the_loop(named["computes_on"][0]) >= SLOW_CALLBACK_SECONDS, reports
