"""Back-pressure shared by every worker of a provider.

A throttle opens a provider-wide cooldown in the graph (the longest Retry-After wins); every email
page reads it before claiming and waits it out without claiming anyone; too many deferrals in a row
fail the Dispatch, which ``campaigns.resumeDispatch`` resumes. Real Neo4j, the loopback Postmark
stand-in answering 429 with Retry-After, two workers, the sweeper on an injected clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.delivery.email.provider import OutgoingEmail, SendResult
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_email_worker, build_worker, run_sweep
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import (
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


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token, campaign_email_run_seconds=0)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _jobs(queues: Queues) -> dict[str, PageJob]:
    jobs = [parse_job(m.body) for m in queues.dispatch.receive(max_messages=10)]
    return {job.campaign_id: job for job in jobs if isinstance(job, PageJob)}


def _worker(settings: Settings, graph: Graph, queues: Queues, clock: StepClock) -> EmailWorker:
    worker = build_email_worker(settings, graph, queues, clock=clock)
    assert worker is not None
    return worker


def _cooldown(graph: Graph) -> str | None:
    rows = graph.run("MATCH (x:EmailCooldown {provider: 'postmark'}) RETURN x.until AS until")
    return rows[0]["until"] if rows else None


def _dispatch(graph: Graph, campaign_id: str) -> dict[str, object]:
    [record] = list_dispatches(graph, campaign_id)
    return record.model_dump()


def test_a_throttle_opens_a_cooldown_that_another_worker_waits_out_without_claiming(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    for campaign_id in ("c1", "c2"):
        make_email_campaign(graph, campaign_id)
        add_email_members(graph, campaign_id, [f"{campaign_id}-p{i}" for i in range(3)])
        start_dispatch(graph, queues.dispatch, campaign_id)
    jobs = _jobs(queues)
    clock = StepClock()
    first, second = _worker(settings, graph, queues, clock), _worker(settings, graph, queues, clock)
    try:
        postmark.throttle_next(1, retry_after="30")
        outcome = first.handle_page(jobs["c1"])
        assert (outcome.outcome, outcome.retry_in_seconds) == ("throttled", 30)
        until = format_ts(NOW + timedelta(seconds=30))
        assert _cooldown(graph) == until

        # The other worker, on another dispatch, does not call the provider and claims no one.
        waited = second.handle_page(jobs["c2"])
        assert (waited.outcome, waited.reason, waited.retry_in_seconds) == (
            "throttled",
            "provider_cooldown",
            30,
        )
        assert postmark.batch_calls == 1
        assert claimed(graph, "c2") == []
        record = _dispatch(graph, "c2")
        assert (record["status"], record["next_page_at"], record["throttled"]) == ("sending", until, 0)
    finally:
        first.close()
        second.close()

    # Once the cooldown is over, the sweeper starts both waves and everyone gets one email.
    clock.now = NOW + timedelta(seconds=31)
    swept = run_sweep(settings, graph, queues.dispatch, clock=clock)
    assert len(swept.waves) == 2
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    everyone = [f"{c}-p{i}" for c in ("c1", "c2") for i in range(3)]
    assert accepted_to(postmark) == sorted(address_of(p) for p in everyone)
    assert {_dispatch(graph, c)["status"] for c in ("c1", "c2")} == {"completed"}
    assert _dispatch(graph, "c1")["last_error"] is None  # back-pressure is not failure


class _Throttles:
    """A provider whose answers a test lists (a fake at the port): each call throttles every message,
    with the listed Retry-After hints in turn, after running the call's ``during`` step."""

    name = "postmark"

    def __init__(self, calls: list[tuple[list[float | None], Callable[[], None]]]) -> None:
        self.calls = calls

    def verify(self) -> None:
        pass

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        hints, during = self.calls.pop(0)
        during()
        return [
            SendResult(m.key, "throttled", reason="http:429", retry_after_seconds=hints[i % len(hints)])
            for i, m in enumerate(messages)
        ]

    def close(self) -> None:
        pass


def test_the_longest_retry_after_wins_and_a_shorter_one_never_shortens_the_cooldown(
    settings: Settings, graph: Graph, queues: Queues
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3"])
    start_dispatch(graph, queues.dispatch)
    job = _jobs(queues)["c1"]
    clock = StepClock()

    def another_worker_throttled_for_a_minute() -> None:
        graph.run(
            "MATCH (x:EmailCooldown) SET x.until = $until", until=format_ts(NOW + timedelta(seconds=90))
        )

    provider = _Throttles([([3.0, 30.0, None], lambda: None), ([5.0], another_worker_throttled_for_a_minute)])
    worker = build_email_worker(settings, graph, queues, clock=clock, provider=provider)
    assert worker is not None
    try:
        outcome = worker.handle_page(job)
        assert outcome.retry_in_seconds == 30  # not the first hint (3): the longest
        assert _cooldown(graph) == format_ts(NOW + timedelta(seconds=30))
        assert _dispatch(graph, "c1")["next_page_at"] == format_ts(NOW + timedelta(seconds=30))
        clock.now = NOW + timedelta(seconds=31)  # the cooldown is over: the page runs again
        assert worker.handle_page(job).retry_in_seconds == 5
    finally:
        worker.close()
    assert _cooldown(graph) == format_ts(NOW + timedelta(seconds=90))  # the longer wait stays


def test_deferrals_in_a_row_fail_the_dispatch_and_resume_emails_everyone_once(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    settings = settings.model_copy(update={"campaign_email_max_deferrals": 3})
    make_email_campaign(graph)
    members = ["p1", "p2", "p3"]
    add_email_members(graph, "c1", members)
    dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
    postmark.throttle_next(10, retry_after="0")
    clock = StepClock()
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    try:
        drain(worker.handle, queues)
        assert postmark.batch_calls == 3 and postmark.accepted == []
        record = _dispatch(graph, "c1")
        assert record["status"] == "failed" and record["throttled"] == 9
        assert "back_pressure" in str(record["last_error"]) and "resumeDispatch" in str(record["last_error"])
        assert claimed(graph, "c1") == []  # every claim released: nothing was accepted

        postmark.reset()
        with api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch) as api:
            resumed = ok(
                api.mutate("campaigns.resumeDispatch", {"dispatchId": dispatch_id}, as_=ADMIN_ID, admin=True)
            )
            assert resumed["status"] == "sending"
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert accepted_to(postmark) == sorted(address_of(p) for p in members)
    record = _dispatch(graph, "c1")
    assert (record["status"], record["emailed"]) == ("completed", 3)
