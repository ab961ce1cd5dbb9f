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

from campaign_engine.campaigns.dispatch_reads import list_dispatches
from campaign_engine.campaigns.uncertain_emails import list_uncertain_emails
from campaign_engine.config import Settings
from campaign_engine.delivery.wiring import Queues, build_worker, run_sweep
from campaign_engine.graph.graph import Graph
from tests.support.blocking_postmark import BlockingPostmark
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


def test_worker_killed_between_claim_and_send_never_sends_twice(
    base_settings: Settings, graph: Graph, tmp_path: Path, postmark: PostmarkStandin
) -> None:
    queue_path = tmp_path / "q.sqlite3"
    queues = local_queues(queue_path, visibility=2)
    members = [f"p{i:02d}" for i in range(20)]
    make_email_campaign(graph)
    add_email_members(graph, "c1", members)
    _dispatch(graph, queues)

    with BlockingPostmark() as blocking:
        env = {
            **os.environ,
            "NEO4J_URI": base_settings.neo4j_uri,
            "NEO4J_USER": base_settings.neo4j_user,
            "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
            "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
            "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "2",
            "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "CAMPAIGN_EMAIL_PROVIDER": "postmark",
            "POSTMARK_API_KEY": "blocking-server-token",
            "POSTMARK_API_URL": blocking.url,
            "CAMPAIGN_UNSUBSCRIBE_SECRET": UNSUBSCRIBE_SECRET,
            "CAMPAIGN_APP_ORIGINS": ORIGINS,
            "DOMAIN_NAME": "campaigns.test",
            "EMAIL_FROM": "news@campaigns.test",
            "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "campaign_engine.cli", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert blocking.post_started.wait(60), "the worker never reached the provider"
            # The claim committed before the provider call began.
            assert claimed(graph, "c1") == members
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)

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
