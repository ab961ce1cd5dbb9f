"""Proof with real processes: the worker and the inbox run as separate OS processes.

``python -m campaign_engine.cli worker`` and ``... inbox`` are started with settings in their
environment, against the session's real Neo4j and a durable local queue file in ``tmp_path`` (this
folder's ``conftest.py``). The test process plays the API: it calls the dispatch use case, which
enqueues the first page job into the same queue file. Faults are real: ``kill -9`` of the worker, every
message stored twice in the queue file, two dispatches racing, a pause, and an A/B test wave through a
kill and duplicated jobs (``test_answers_and_recovery.py`` has the receiver's answers, delete and
recreate, and the sweeper).

Audiences are small and pages are 10 recipients so each case finishes in seconds; every wait is bounded.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch, list_dispatches
from campaign_engine.domain.ab_variants import Experiment, assigned_variant, in_test_wave
from campaign_engine.domain.types import format_ts
from tests.support.concurrency import at_once
from tests.support.delivery import add_members, make_campaign, notified
from tests.support.delivery_processes import (
    DEADLINE,
    DISPATCH_SETTINGS,
    PAGE_SIZE,
    Stack,
    assert_exactly_once,
    campaign,
    profile_ids,
    total,
    utc_now,
    wait_for,
)

# pytest-xdist: one inbox process serves the module (distinct campaign ids): its tests stay on one worker.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("delivery_processes_kills")]


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
