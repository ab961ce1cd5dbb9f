"""Proof with real processes: the worker and the inbox run as separate OS processes.

``python -m campaign_engine.cli worker`` and ``... inbox`` are started with settings in their
environment, against the session's real Neo4j and a durable local queue file in ``tmp_path``. The test
process plays the API: it calls the dispatch use case, which enqueues the first page job into the same
queue file. Faults are real: ``kill -9`` of the worker, every message stored twice in the queue file,
two dispatches racing, a pause, a scripted receiver, delete + recreate, a lost enqueue and the sweeper.

Audiences are small and pages are 10 recipients so each case finishes in seconds; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from campaign_engine.campaigns import definitions, deletion
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, get_dispatch, list_dispatches
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.notify.page_walk import PageWorker
from campaign_engine.domain.ab_variants import Experiment, assigned_variant, in_test_wave
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import Lane, QueueError, ReceivedMessage
from tests.conftest import free_port
from tests.support.concurrency import at_once
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import WEBHOOK_SECRET, ThreadServer, add_members, make_campaign, notified
from tests.support.processes import REPO_ROOT, CliProcess

# Test waves of a few dozen readers: the evidence rule has its own test (test_test_wave_evidence).
DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=10_000, experiment_min_per_variant=1)

# pytest-xdist: one inbox process serves the module (distinct campaign ids): its tests stay on one worker.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_delivery_processes")]

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


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One reference inbox process for the module; tests use distinct campaign ids."""
    tmp = tmp_path_factory.mktemp("inbox")
    port = free_port()
    db = tmp / "inbox.sqlite3"
    env = {**_clean_env(), "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET}
    proc = CliProcess(["inbox", "--port", str(port), "--db", str(db)], env, tmp / "inbox.log")
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for("the inbox process", healthy, timeout=30)
        yield url, db
    finally:
        proc.stop()


def _clean_env() -> dict[str, str]:
    prefixes = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_")
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path, inbox: tuple[str, Path]) -> Iterator[Stack]:
    inbox_url, inbox_db = inbox
    env = {
        **_clean_env(),
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp_path / "queue.sqlite3"),
        "NOTIFICATIONS_WEBHOOK_URL": f"{inbox_url}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_DISPATCH_PAGE_SIZE": str(PAGE_SIZE),
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "2",
        "CAMPAIGN_QUEUE_MAX_RECEIVES": "20",
        "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
        "CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS": "2",
        "CAMPAIGN_WORKER_THREADS": "2",
    }
    the_stack = Stack(graph=graph, tmp=tmp_path, env=env, inbox_url=inbox_url, inbox_db=inbox_db)
    try:
        yield the_stack
    finally:
        for proc in the_stack.procs:
            proc.stop()


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


# --- (a) kill -9 mid-dispatch -------------------------------------------------------------------------


def test_worker_killed_mid_dispatch_loses_nothing_and_counts_exactly(stack: Stack) -> None:
    # Enough recipients that the kill lands mid-walk: the worker settles ~1,000 deliveries a second.
    members = profile_ids("a", 1500)
    created_at = campaign(stack.graph, "ca", members)
    worker = stack.worker()
    dispatch_id = stack.dispatch("ca")
    wait_for("the first notifications", lambda: len(stack.inbox_rows("ca")) >= 20)
    worker.kill9()
    at_kill = len(notified(stack.graph, "ca"))
    assert at_kill < len(members), "the worker finished before it could be killed"

    stack.worker()  # the restart picks up what the dead one held, after the visibility timeout
    wait_for("the dispatch to complete", lambda: get_dispatch(stack.graph, dispatch_id).status == "completed")
    wait_for("every recipient", lambda: len(notified(stack.graph, "ca")) == len(members))
    wait_for("the queues to drain", stack.queues_empty)
    assert_exactly_once(stack, "ca", members, created_at)
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.rejected) == (len(members), 0)
    # `enqueued` counts what pages that won their cursor CAS enqueued. The killed worker may have
    # enqueued a page and died before its CAS: that page is walked again, and whoever was acknowledged
    # in between is not enqueued again (nor needs to be). So at most one page goes uncounted there.
    assert len(members) - PAGE_SIZE <= record.enqueued <= len(members)
    assert record.pages == len(members) // PAGE_SIZE + 1


# --- (b) every message delivered twice -----------------------------------------------------------------

# Test-only, at the storage layer: every message any process sends is stored twice, the copy becoming
# visible 0.2 s later, so it is received either while the original is in flight or after it was done.
# That is SQS's at-least-once delivery made systematic, without touching the code under test.
_DUPLICATE_EVERY_SEND = """
CREATE TABLE IF NOT EXISTS test_duplicated (body TEXT PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS test_duplicate_every_send AFTER INSERT ON messages
WHEN NOT EXISTS (SELECT 1 FROM test_duplicated WHERE body = NEW.body)
BEGIN
  INSERT INTO test_duplicated (body) VALUES (NEW.body);
  INSERT INTO messages (name, body, sent_at, visible_at)
  VALUES (NEW.name, NEW.body, NEW.sent_at, NEW.visible_at + 0.2);
END;
"""


def test_every_message_delivered_twice_creates_no_duplicates(stack: Stack) -> None:
    members = profile_ids("b", 120)
    created_at = campaign(stack.graph, "cb", members)
    stack.queue("dispatch").close()  # creates the schema in the file
    conn = sqlite3.connect(stack.queue_path)
    conn.executescript(_DUPLICATE_EVERY_SEND)
    conn.close()

    stack.worker()
    dispatch_id = stack.dispatch("cb")
    wait_for("the dispatch to complete", lambda: get_dispatch(stack.graph, dispatch_id).status == "completed")
    wait_for("every recipient", lambda: len(notified(stack.graph, "cb")) == len(members))
    wait_for("the queues to drain", stack.queues_empty)

    conn = sqlite3.connect(stack.queue_path)
    (sent_twice,) = conn.execute("SELECT count(*) FROM test_duplicated").fetchone()
    conn.close()
    assert sent_twice >= len(members) + len(members) // PAGE_SIZE + 1  # deliveries and page jobs
    assert_exactly_once(stack, "cb", members, created_at)
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.rejected, record.enqueued) == (len(members), 0, len(members))
    assert record.suppressed == 0  # a copy rechecked after its twin's acknowledgement is a duplicate


# --- (c) two concurrent dispatches ---------------------------------------------------------------------


def test_two_concurrent_dispatches_leave_one_chain(stack: Stack) -> None:
    members = profile_ids("c", 150)
    created_at = campaign(stack.graph, "cc", members)
    ids = at_once(stack.dispatch, [("cc",), ("cc",)], timeout=DEADLINE)
    assert len(ids) == 2
    stack.worker()  # both first page jobs are queued: two chains would walk one audience

    def settled() -> bool:
        return all(d.status != "sending" for d in list_dispatches(stack.graph, "cc"))

    wait_for("both dispatches to settle", settled)
    wait_for("every recipient", lambda: len(notified(stack.graph, "cc")) == len(members))
    wait_for("the queues to drain", stack.queues_empty)
    records = list_dispatches(stack.graph, "cc")
    assert sorted(d.status for d in records) == ["completed", "stopped"]
    assert [d.last_error for d in records if d.status == "stopped"] == ["superseded"]
    assert_exactly_once(stack, "cc", members, created_at)
    assert total(records, "acknowledged") == len(members) and total(records, "rejected") == 0


# --- (d) pause mid-dispatch ----------------------------------------------------------------------------


def test_pause_stops_every_post_not_already_in_flight(stack: Stack) -> None:
    members = profile_ids("d", 400)
    campaign(stack.graph, "cd", members)
    # Waves 1 s apart keep the walk going while we pause (at delay 0 a fast worker can finish enqueueing
    # all 41 pages before the first ten notifications land, and then there is no walk left to stop).
    stack.worker(CAMPAIGN_WORKER_THREADS="1", CAMPAIGN_DISPATCH_DELAY_SECONDS="1")
    dispatch_id = stack.dispatch("cd")
    wait_for("the first notifications", lambda: len(stack.inbox_rows("cd")) >= 10)
    definitions.set_status(stack.graph, campaign_id="cd", status="paused", now=utc_now())
    paused_at = format_ts(utc_now())

    wait_for("the page chain to stop", lambda: get_dispatch(stack.graph, dispatch_id).status == "stopped")
    wait_for("the queues to drain", stack.queues_empty)
    late = [stamp for stamp in stack.inbox_first_received("cd") if stamp > paused_at]
    # In flight at the pause: at most the one batch (10 deliveries) that passed its recheck before it.
    assert len(late) <= 10, late
    rows = stack.inbox_rows("cd")
    assert len(rows) < len(members)
    assert len(notified(stack.graph, "cd")) == len(rows)  # only acknowledged storage counts
    record = get_dispatch(stack.graph, dispatch_id)
    assert record.last_error == "not_live"
    assert record.acknowledged == len(rows)
    assert record.acknowledged + record.suppressed == record.enqueued


# --- (e) uncertain answers before the acknowledgement --------------------------------------------------


@dataclass
class TimingReceiver:
    """Answers from a script (the last entry repeats) and records when each POST arrived."""

    script: list[tuple[int, bytes, str | None] | float]
    arrivals: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            await request.body()
            with self.lock:
                self.arrivals.append(format_ts(utc_now()))
                step = self.script[min(len(self.arrivals), len(self.script)) - 1]
            if isinstance(step, float):
                await asyncio.sleep(step)  # longer than the worker's timeout: the worker gives up
                return Response(b'{"sent": true}', media_type="application/json")
            status, content, media = step
            return Response(content, status_code=status, media_type=media)

        return app


def test_only_the_positive_answer_sets_notified(stack: Stack) -> None:
    receiver = TimingReceiver(
        [
            (204, b"", None),
            (200, b"ok", "text/plain"),
            (200, b'{"status":"ok"}', "application/json"),
            (500, b'{"sent":true}', "application/json"),
            2.5,
            (200, b'{"result":{"data":{"success":true}}}', "application/json"),
        ],
    )
    make_campaign(stack.graph, "ce", now=utc_now())
    with ThreadServer(receiver.app()) as server:
        add_members(stack.graph, "ce", ["e1"], webhook=f"{server.url}/hook")
        # A visibility timeout well above one batch, so every retry below is the worker's own choice.
        stack.worker(CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS="1", CAMPAIGN_QUEUE_VISIBILITY_SECONDS="15")
        dispatch_id = stack.dispatch("ce")
        wait_for("the acknowledgement", lambda: notified(stack.graph, "ce") == ["e1"])
        wait_for("the queues to drain", stack.queues_empty)
    [row] = stack.graph.run(
        "MATCH (:Profile {profileId: 'e1'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'ce'}) "
        "RETURN s.notifiedAt AS at"
    )
    # Five uncertain answers, each retried; notifiedAt is written only after the sixth, positive one.
    assert len(receiver.arrivals) == 6, receiver.arrivals
    assert row["at"] >= receiver.arrivals[-1] > max(receiver.arrivals[:-1])
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.rejected) == (1, 0)


# --- (f) delete and recreate while jobs are queued ------------------------------------------------------


class _Clock:
    def __call__(self) -> datetime:
        return utc_now()


def test_jobs_of_a_deleted_campaign_do_nothing_for_its_successor(stack: Stack) -> None:
    members = profile_ids("f", 30)
    campaign(stack.graph, "cf", members)
    old_dispatch = stack.dispatch("cf")
    # Play the first page here (same code as the worker) so deliveries and the next page sit queued.
    dispatch_queue, delivery_queue = stack.queue("dispatch"), stack.queue("delivery")
    pages = PageWorker(
        graph=stack.graph,
        delivery_queue=delivery_queue,
        dispatch_queue=dispatch_queue,
        clock=_Clock(),
        page_size=PAGE_SIZE,
        delay_seconds=0,
        adult_age=18,
    )
    [message] = dispatch_queue.receive(max_messages=10)
    job = parse_job(message.body)
    assert isinstance(job, PageJob)
    assert pages.handle_page(job).outcome == "next"
    dispatch_queue.delete(message.receipt)
    assert (dispatch_queue.depth(), delivery_queue.depth()) == (1, PAGE_SIZE)

    deletion.delete_campaign(stack.graph, campaign_id="cf")
    time.sleep(0.01)  # a distinct createdAt for the new incarnation
    new_created_at = campaign(stack.graph, "cf", members)  # same id, same members, not dispatched
    stack.worker()
    wait_for("the old jobs to be consumed", stack.queues_empty)
    assert stack.inbox_rows("cf") == []
    assert notified(stack.graph, "cf") == []
    assert list_dispatches(stack.graph, "cf") == []
    with pytest.raises(Exception, match="not found"):
        get_dispatch(stack.graph, old_dispatch)
    assert definitions.get_campaign(stack.graph, "cf").created_at == new_created_at


# --- (g) a lost first-page enqueue is recovered by the sweeper -------------------------------------------


class _FailingQueue:
    """A queue port whose sends fail: the dispatch commits, its first page job never arrives."""

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        raise QueueError("queue unreachable (test)")

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        return []

    def delete(self, receipt: str) -> None:
        raise QueueError("queue unreachable (test)")

    def delete_batch(self, receipts: Sequence[str]) -> None:
        raise QueueError("queue unreachable (test)")

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        raise QueueError("queue unreachable (test)")


def test_lost_first_page_is_recovered_by_the_sweeper(stack: Stack) -> None:
    members = profile_ids("g", 45)
    created_at = campaign(stack.graph, "cg", members)
    stack.worker()
    dispatch_id = stack.dispatch("cg", queue=_FailingQueue())
    assert get_dispatch(stack.graph, dispatch_id).status == "sending"
    time.sleep(1.5)  # older than the 1 s stuck window below; nothing was queued meanwhile
    assert stack.inbox_rows("cg") == [] and stack.queues_empty()

    output = stack.run_cli("sweep", CAMPAIGN_DISPATCH_STUCK_SECONDS="1")
    assert dispatch_id in output
    wait_for("the dispatch to complete", lambda: get_dispatch(stack.graph, dispatch_id).status == "completed")
    wait_for("every recipient", lambda: len(notified(stack.graph, "cg")) == len(members))
    wait_for("the queues to drain", stack.queues_empty)
    assert_exactly_once(stack, "cg", members, created_at)
    record = get_dispatch(stack.graph, dispatch_id)
    assert (record.acknowledged, record.enqueued) == (len(members), len(members))
    assert json.loads(json.dumps(record.model_dump(by_alias=True)))["dispatchId"] == dispatch_id


# --- (c) an A/B test wave through a kill and duplicated jobs ------------------------


def test_a_test_wave_survives_a_killed_worker_and_duplicated_jobs_without_reassigning_anyone(
    stack: Stack,
) -> None:
    """The test wave walked by worker processes, one killed mid-wave, every queue message delivered
    twice (the decision job too): each member gets one notification, test members their own variant,
    everyone else the winner, decided once."""
    members = profile_ids("w", 600)
    push_b = {"title": "Push B", "body": "B"}
    created_at = make_campaign(stack.graph, "cw", channels=["inApp", "notify"], now=utc_now(),
                               variants=[{"id": "A"}, {"id": "B", "notification": push_b}])  # fmt: skip
    add_members(stack.graph, "cw", members)
    stack.queue("dispatch").close()  # creates the schema in the file
    conn = sqlite3.connect(stack.queue_path)
    conn.executescript(_DUPLICATE_EVERY_SEND)
    conn.close()
    worker = stack.worker()
    started = dispatch(
        stack.graph, stack.queue("dispatch"), campaign_id="cw", expected_token=None, now=utc_now(),
        settings=DISPATCH_SETTINGS,
        experiment=Experiment(test_share=0.4, metric="clicked", decide_after_seconds=6),
    )  # fmt: skip
    wait_for("the first notifications", lambda: len(stack.inbox_rows("cw")) >= 20)
    worker.kill9()
    testers = sum(in_test_wave("cw", pid, 0.4) for pid in members)
    assert len(notified(stack.graph, "cw")) < testers, "the test wave ended before the kill"
    stack.worker()  # the restart picks up what the dead one held, after the visibility timeout
    dispatch_id = started.dispatch_id
    wait_for("the dispatch to complete", lambda: get_dispatch(stack.graph, dispatch_id).status == "completed")
    wait_for("the queues to drain", stack.queues_empty)
    assert_exactly_once(stack, "cw", members, created_at)  # one notification each, whatever the faults

    conn = sqlite3.connect(f"file:{stack.inbox_db}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "SELECT recipient, payload FROM notifications WHERE campaign_id = 'cw'"
        ).fetchall()
    finally:
        conn.close()
    served = {str(pid): json.loads(payload)["metadata"]["variantId"] for pid, payload in rows}
    variants = [{"id": "A"}, {"id": "B"}]
    expected = {
        pid: assigned_variant(variants, campaign_id="cw", profile_id=pid)
        if in_test_wave("cw", pid, 0.4)
        else "A"
        for pid in members
    }  # nobody clicked in-app: the tie goes to the first variant
    assert served == expected
    decided = get_dispatch(stack.graph, dispatch_id)
    assert decided.phase == "rest" and decided.decision is not None and decided.decision.winner == "A"
    entries = stack.graph.run("MATCH (e:AuditEntry {procedure: 'delivery.testWave'}) RETURN e.id AS id")
    assert len(entries) == 1  # decided once, though every decision job ran twice
