"""The API's start-up retries (``api/startup.py``): a start that cannot reach the graph is not fatal, is
tried again with capped back-off, logged one line per attempt without the URI's credentials, and the
first success ends the wait. The processes themselves: ``tests/e2e/test_start_without_graph.py``."""

from __future__ import annotations

import logging

import pytest

from campaign_engine.api.startup import MAX_DELAY, Startup
from campaign_engine.domain.errors import ServiceUnavailable
from tests.support.concurrency import wait_for

URI = "bolt://neo4j:s3cret-pass@graph.internal:7687"


class FlakyStart:
    """Fails with the graph's "unavailable" ``failures`` times, then succeeds."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ServiceUnavailable("the graph database is unavailable")


def test_a_start_never_attempted_holds_nothing() -> None:
    startup = Startup(FlakyStart(5), uri=URI)
    assert not startup.waiting
    startup.require()  # an app served without its lifespan (tests) serves as before


def test_a_failed_start_waits_then_serves_once_an_attempt_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    start = FlakyStart(2)
    startup = Startup(start, uri=URI)
    with caplog.at_level(logging.INFO, logger="campaign_engine.api.startup"):
        startup.begin()  # the first attempt fails: no exception, the retries go on a thread
        try:
            assert startup.waiting
            with pytest.raises(ServiceUnavailable, match="starting"):
                startup.require()
            wait_for("the third attempt", lambda: not startup.waiting, timeout=3 * MAX_DELAY + 10)
        finally:
            startup.close()
    startup.require()
    assert start.calls == 3
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split()[0] for line in lines] == ["api.start_waiting"] * 2 + ["api.start_succeeded"]
    assert all("graph=graph.internal:7687" in line for line in lines), lines
    assert not any("s3cret" in line or "neo4j:" in line for line in lines), lines


def test_an_inline_start_tries_again_when_asked_at_most_once_per_back_off() -> None:
    start = FlakyStart(1)
    now = [100.0]
    startup = Startup(start, uri=URI, inline=True, monotonic=lambda: now[0])
    startup.begin()
    assert start.calls == 1 and startup.waiting  # no thread: a Lambda container between invocations
    with pytest.raises(ServiceUnavailable):
        startup.require()  # the failure was just now: answered at once, no second attempt
    assert start.calls == 1
    now[0] += MAX_DELAY  # the next invocation, a back-off later
    startup.require()  # tries again, succeeds and serves
    assert start.calls == 2 and not startup.waiting
