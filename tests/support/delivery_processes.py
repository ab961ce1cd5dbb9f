"""What the delivery-process proofs share: a stack of real worker and inbox processes around the
session's Neo4j and a durable local queue file, and the checks of exactly-once delivery."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import add_members, make_campaign, notified
from tests.support.processes import REPO_ROOT, CliProcess

# Test waves of a few dozen readers: the evidence rule has its own test (test_test_wave_evidence).
DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=10_000, experiment_min_per_variant=1)

PAGE_SIZE = 10
DEADLINE = 30.0


wait_for = partial(wait_until, timeout=DEADLINE, every=0.05)


def utc_now() -> datetime:
    return datetime.now(UTC)


def profile_ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(count)]


@dataclass
class Stack:
    """What one test needs: the env of the child processes, the queue file, the inbox, the graph."""

    graph: Graph
    tmp: Path
    env: dict[str, str]
    inbox_url: str
    inbox_db: Path
    procs: list[CliProcess] = field(default_factory=list)

    @property
    def queue_path(self) -> Path:
        return Path(self.env["CAMPAIGN_LOCAL_QUEUE_PATH"])

    def queue(self, name: str) -> LocalQueue:
        return LocalQueue(self.queue_path, name, visibility_timeout=2)

    def worker(self, **env: str) -> CliProcess:
        proc = CliProcess(["worker"], {**self.env, **env}, self.tmp / "worker.log")
        self.procs.append(proc)
        return proc

    def run_cli(self, *args: str, **env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "campaign_engine.cli", *args],
            env={**self.env, **env},
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    def dispatch(self, campaign_id: str, *, queue: Any = None) -> str:
        started = dispatch(
            self.graph,
            queue if queue is not None else self.queue("dispatch"),
            campaign_id=campaign_id,
            expected_token=None,
            now=utc_now(),
            settings=DISPATCH_SETTINGS,
        )
        return started.dispatch_id

    def inbox_rows(self, campaign_id: str) -> list[tuple[str, str, int]]:
        """(recipient, campaignCreatedAt, receive_count) straight from the inbox's durable file."""
        conn = sqlite3.connect(f"file:{self.inbox_db}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute(
                "SELECT recipient, campaign_created_at, receive_count FROM notifications"
                " WHERE campaign_id = ? AND test_id = '' ORDER BY recipient",
                (campaign_id,),
            ).fetchall()
        finally:
            conn.close()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def inbox_first_received(self, campaign_id: str) -> list[str]:
        conn = sqlite3.connect(f"file:{self.inbox_db}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute(
                "SELECT first_received_at FROM notifications WHERE campaign_id = ?", (campaign_id,)
            ).fetchall()
        finally:
            conn.close()
        return [str(r[0]) for r in rows]

    def queues_empty(self) -> bool:
        return self.queue("dispatch").depth() == 0 and self.queue("delivery").depth() == 0


def campaign(graph: Graph, campaign_id: str, members: list[str]) -> str:
    created_at = make_campaign(graph, campaign_id, now=utc_now())
    add_members(graph, campaign_id, members)
    return created_at


def assert_exactly_once(stack: Stack, campaign_id: str, members: list[str], created_at: str) -> None:
    rows = stack.inbox_rows(campaign_id)
    assert [r[0] for r in rows] == sorted(members)  # one durable record per recipient (unique key)
    assert {r[1] for r in rows} == {created_at}
    assert notified(stack.graph, campaign_id) == sorted(members)


def total(dispatches: Sequence[DispatchPublic], counter: str) -> int:
    return sum(int(getattr(d, counter)) for d in dispatches)


def clean_env() -> dict[str, str]:
    prefixes = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_")
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
