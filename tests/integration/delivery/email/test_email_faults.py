"""Real-process and provider faults: at most one email per recipient, whatever happens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.campaigns.sending.uncertain_emails import list_uncertain_emails
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.support.blocking_postmark import BlockingPostmark
from tests.support.concurrency import wait_for
from tests.support.delivery import WEBHOOK_SECRET, StepClock, drain, local_queues, start_dispatch
from tests.support.email import (
    ORIGINS,
    UNSUBSCRIBE_SECRET,
    accepted_to,
    add_email_members,
    address_of,
    claimed,
    email_settings,
    make_email_campaign,
)
from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


def _dispatch(graph: Graph, queues: Queues) -> None:
    start_dispatch(graph, queues.dispatch, max_recipients=10_000)


def _email_record(graph: Graph) -> dict[str, object]:
    return next(d for d in list_dispatches(graph, "c1") if d.channel == "email").model_dump()


def _drain_until_settled(settings: Settings, graph: Graph, queues: Queues, *, seconds: float) -> None:
    """Run an in-process worker until no email dispatch is ``sending`` (redeliveries take a moment)."""
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            drain(worker.handle, queues)
            if all(d.status != "sending" for d in list_dispatches(graph, "c1")):
                return
            time.sleep(0.2)
        raise AssertionError("dispatch did not settle")
    finally:
        worker.close()


def _worker_process(
    base_settings: Settings, queue_path: Path, postmark_url: str, token: str, **env: str
) -> subprocess.Popen[bytes]:
    """``campaign-engine worker`` as its own OS process, on the test's graph and queue file."""
    return subprocess.Popen(
        [sys.executable, "-m", "campaign_engine.cli", "worker"],
        env={
            **os.environ,
            "NEO4J_URI": base_settings.neo4j_uri,
            "NEO4J_USER": base_settings.neo4j_user,
            "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
            "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
            "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "2",
            "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "CAMPAIGN_EMAIL_PROVIDER": "postmark",
            "POSTMARK_API_KEY": token,
            "POSTMARK_API_URL": postmark_url,
            "CAMPAIGN_UNSUBSCRIBE_SECRET": UNSUBSCRIBE_SECRET,
            "CAMPAIGN_APP_ORIGINS": ORIGINS,
            "DOMAIN_NAME": "campaigns.test",
            "EMAIL_FROM": "news@campaigns.test",
            "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
            **env,
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _dispatched(graph: Graph, tmp_path: Path, count: int) -> tuple[Path, Queues, list[str]]:
    """An email campaign to ``count`` members, dispatched onto a queue file of 2 s visibility."""
    queue_path = tmp_path / "q.sqlite3"
    queues = local_queues(queue_path, visibility=2)
    members = [f"p{i:02d}" for i in range(count)]
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    _dispatch(graph, queues)
    return queue_path, queues, members


def _kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_worker_killed_between_claim_and_send_never_sends_twice(
    base_settings: Settings, graph: Graph, tmp_path: Path, postmark: PostmarkStandin
) -> None:
    queue_path, queues, members = _dispatched(graph, tmp_path, 20)

    with BlockingPostmark() as blocking:
        process = _worker_process(base_settings, queue_path, blocking.url, "blocking-server-token")
        try:
            assert blocking.post_started.wait(60), "the worker never reached the provider"
            # The claim committed before the provider call began.
            assert claimed(graph, "c1") == members
        finally:
            _kill(process)

    settings = email_settings(
        base_settings, postmark.url, postmark.token, campaign_queue_visibility_seconds=2
    )
    # Retry: the page job is redelivered after its visibility timeout and finds every claim taken.
    _drain_until_settled(settings, graph, queues, seconds=30)
    assert postmark.accepted == []
    assert _email_record(graph)["status"] == "completed"
    # Past the horizon the sweeper counts the killed worker's claims uncertain, once, for an operator.
    horizon = timedelta(seconds=settings.campaign_email_uncertain_after_seconds + 5)
    swept = run_sweep(settings, graph, queues.dispatch, clock=lambda: datetime.now(UTC) + horizon)
    dispatch_id = str(_email_record(graph)["dispatch_id"])
    assert swept.abandoned == {dispatch_id: 20}
    assert _email_record(graph)["uncertain"] == 20
    listed = list_uncertain_emails(graph, dispatch_id=dispatch_id, limit=500)
    assert [item.profile_id for item in listed.items] == members
    # Re-dispatch: still nothing for the claimed recipients; a new member gets exactly one.
    add_email_members(graph, "c1", ["a-new"])
    _dispatch(graph, queues)
    _drain_until_settled(settings, graph, queues, seconds=30)
    assert accepted_to(postmark) == [address_of("a-new")]


def test_a_walk_killed_after_its_first_pages_is_taken_up_by_its_redelivered_job(
    base_settings: Settings, graph: Graph, tmp_path: Path, postmark: PostmarkStandin
) -> None:
    # Not by the sweeper (none runs here, and its stuck window is minutes): the walk's own message
    # comes back after its visibility timeout, finds the cursor moved by itself and sends the successor.
    queue_path, _, members = _dispatched(graph, tmp_path, 60)
    postmark.pass_next(2)
    postmark.delay_next(8)  # page 3 is accepted, answered late: the worker dies waiting for it
    pages = {"CAMPAIGN_EMAIL_PAGE_SIZE": "10"}
    process = _worker_process(base_settings, queue_path, postmark.url, postmark.token, **pages)
    try:
        wait_for(
            "page 3 at the provider, pages 1 and 2 recorded",
            lambda: postmark.batch_calls >= 3 and _email_record(graph)["cursor"] == "p19",
            timeout=60,
        )
    finally:
        _kill(process)
    claimed_at_kill = claimed(graph, "c1")

    process = _worker_process(base_settings, queue_path, postmark.url, postmark.token, **pages)
    try:
        wait_for("the walk to complete", lambda: _email_record(graph)["status"] == "completed", timeout=30)
    finally:
        _kill(process)
    sent = accepted_to(postmark)
    assert len(sent) == len(set(sent))  # at most once
    # Pages 1-3 went out before the kill. What was claimed and not known sent (page 3, page 4 if its
    # claim ahead committed) is never sent again; everyone else was emailed after the restart.
    unsent = set(claimed_at_kill) - {f"p{i:02d}" for i in range(30)}
    assert sent == [address_of(p) for p in members if p not in unsent]
    assert "p59" not in claimed_at_kill
    record = _email_record(graph)
    assert record["emailed"] == len(members) - len(unsent) - 10  # page 3's answer never reached it


def test_provider_throttling_for_a_while_still_emails_everyone_exactly_once(
    base_settings: Settings, graph: Graph, tmp_path: Path, postmark: PostmarkStandin
) -> None:
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_email_page_size=25)
    queues = local_queues(tmp_path / "q.sqlite3")
    members = [f"p{i:03d}" for i in range(100)]
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    postmark.throttle_next(4, retry_after="0")  # the first four batch calls answer 429
    _dispatch(graph, queues)
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert postmark.batch_calls == 4 + 4  # four refused, then the four pages of 25
    addresses = accepted_to(postmark)
    assert addresses == sorted(address_of(p) for p in members)  # everyone, exactly once
    record = _email_record(graph)
    assert record["status"] == "completed" and record["emailed"] == 100
    assert record["throttled"] >= 4 * 25 and record["uncertain"] == 0 and record["rejected"] == 0
    assert record["last_error"] is None  # back-pressure is not failure
