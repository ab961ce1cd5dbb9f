"""The short seeded chaos run as part of the suite: ``python -m bench.chaos`` with few
recipients and a 90-second fault window, as its own process with its own Neo4j, inbox, catcher, worker
and API (``bench/chaos.py``). It must inject faults of every kind and then find every promise kept."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench._chaos_faults import KINDS, schedule
from tests.support.processes import REPO_ROOT

pytestmark = pytest.mark.e2e

SEED, MINUTES, RECIPIENTS = 1, 1.5, 2000
CRITICAL = 200  # the critical campaign dispatched a quarter into the window (bench/chaos.py)
# What the run prints for each kind of fault once it was injected.
EVIDENCE = (
    "kill -9 worker", "restart API", "restart Neo4j", "inbox receiver answers 503", "inbox receiver hangs",
    "email stand-in throttles", "email stand-in fails", "queue delivers twice", "pause the campaign",
    "resume: campaign live again",
)  # fmt: skip
_RESULT = re.compile(
    r"^RESULT faults=(\d+) recipients=(\d+) lost=(\d+) duplicate_emails=(\d+) counter_mismatches=(\d+) "
    r"stuck=(\d+) critical=(\d+)$",
    re.MULTILINE,
)


def test_the_seed_plans_every_kind_of_fault_and_the_same_faults_every_time() -> None:
    planned = schedule(SEED, MINUTES * 60)
    assert {f.kind for f in planned} == set(KINDS)
    assert planned == schedule(SEED, MINUTES * 60)
    assert planned != schedule(SEED + 1, MINUTES * 60)


def test_a_short_seeded_chaos_run_keeps_every_promise() -> None:
    done = subprocess.run(
        [sys.executable, "-u", "-m", "bench.chaos", "--seed", str(SEED), "--minutes", str(MINUTES),
         "--recipients", str(RECIPIENTS)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    out = done.stdout
    print(out[-6000:])  # shown with -s or on a failure: the faults, the dispatches, the RESULT line
    found = _RESULT.search(out)
    assert found, done.stderr[-3000:]
    faults, recipients, lost, duplicate_emails, mismatches, stuck, critical = map(int, found.groups())
    assert (recipients, critical) == (RECIPIENTS, CRITICAL), out[-3000:]
    assert (lost, duplicate_emails, mismatches, stuck) == (0, 0, 0, 0), out[-3000:]
    assert faults == len(schedule(SEED, MINUTES * 60)) >= len(KINDS)
    injected = out[out.index("faults injected:") :]
    for evidence in EVIDENCE:
        assert evidence in injected, evidence
    assert "critical send dispatched" in injected  # overtaking the bulk walk, under the same faults
    assert done.returncode == 0
