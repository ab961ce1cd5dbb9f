"""The per-profile limit on user procedures, shared through the graph by separate API apps."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import neo4j
import pytest

from campaign_engine.campaigns.engagement.rate_limit import SWEEP, SWEEP_EVERY, GraphRateLimiter
from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable, TooManyRequests
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph, open_graph
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import api_client, error_code, ok
from tests.support.concurrency import at_once

NOW = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC)


def test_two_app_instances_share_the_limit(base_settings: Settings, graph: Graph) -> None:
    with (
        api_client(base_settings, graph, clock=lambda: NOW) as a,
        api_client(base_settings, graph, clock=lambda: NOW) as b,
    ):
        for i in range(60):
            api = a if i % 2 else b
            path = ("campaigns.getMyCampaigns", "campaigns.discover")[i % 2]
            ok(api.query(path, as_="u1"))
        refused = b.mutate("campaigns.enroll", {"campaignId": "x"}, as_="u1")
        assert refused.status_code == 429 and error_code(refused) == "TOO_MANY_REQUESTS"
        assert error_code(a.query("campaigns.getMyCampaigns", as_="u1")) == "TOO_MANY_REQUESTS"
        # Another profile has its own budget; admin procedures are exempt.
        ok(a.query("campaigns.getMyCampaigns", as_="u2"))
        for _ in range(70):
            ok(a.query("campaigns.list", {}, as_=ADMIN_ID, admin=True))


def test_a_new_minute_opens_a_new_window_and_old_buckets_are_swept(graph: Graph) -> None:
    moments = [NOW]
    limiter = GraphRateLimiter(graph, limit_per_minute=2, clock=lambda: moments[0])
    limiter.hit("u1")
    limiter.hit("u1")
    with pytest.raises(Exception, match="rate limit"):
        limiter.hit("u1")
    moments[0] = NOW + timedelta(minutes=1)
    limiter.hit("u1")
    moments[0] = NOW + timedelta(minutes=5)
    limiter.hit("u2")  # a new bucket sweeps the expired ones
    keys = [row["key"] for row in graph.run("MATCH (b:RateBucket) RETURN b.key AS key")]
    assert keys == [f"u2|{int((NOW + timedelta(minutes=5)).timestamp() // 60)}"]


def test_a_process_sweeps_at_most_once_a_second(graph: Graph) -> None:
    """A sweep is a write of its own: a batch that creates a bucket sweeps only if the process's last
    sweep is ``SWEEP_EVERY`` old, so an app's traffic (a new bucket in nearly every batch) pays one a
    second, not one per batch."""
    moments = [NOW]
    limiter = GraphRateLimiter(graph, limit_per_minute=10, clock=lambda: moments[0])
    graph.run("UNWIND range(1, $n) AS i CREATE (:RateBucket {key: 'old|' + i, count: 1, expiresAt: $at})",
              n=3 * SWEEP, at=format_ts(NOW - timedelta(minutes=1)))  # fmt: skip

    def expired() -> int:
        return graph.run("MATCH (b:RateBucket) WHERE b.key STARTS WITH 'old|' RETURN count(b) AS n")[0]["n"]

    limiter.hit("u1")
    assert expired() == 2 * SWEEP
    moments[0] = NOW + SWEEP_EVERY / 2
    limiter.hit("u2")  # a new bucket, but the last sweep is recent
    assert expired() == 2 * SWEEP
    moments[0] = NOW + SWEEP_EVERY
    limiter.hit("u3")
    assert expired() == SWEEP


def test_unreachable_store_fails_closed(base_settings: Settings) -> None:
    driver = neo4j.GraphDatabase.driver(
        f"bolt://127.0.0.1:{free_port()}", auth=None, connection_timeout=2, max_transaction_retry_time=0
    )  # as open_graph builds it: Graph does the retrying
    dead = Graph(driver, database="neo4j")
    try:
        limiter = GraphRateLimiter(dead, limit_per_minute=60, clock=lambda: NOW)
        with pytest.raises(ServiceUnavailable):
            limiter.hit("u1")
    finally:
        driver.close()


def test_unreachable_store_is_a_503_for_user_calls(base_settings: Settings, graph: Graph) -> None:
    driver = neo4j.GraphDatabase.driver(
        f"bolt://127.0.0.1:{free_port()}", auth=None, connection_timeout=2, max_transaction_retry_time=0
    )  # as open_graph builds it: Graph does the retrying
    try:
        limiter = GraphRateLimiter(Graph(driver, database="neo4j"), limit_per_minute=60, clock=lambda: NOW)
        with api_client(base_settings, graph, clock=lambda: NOW, rate_limiter=limiter) as api:
            response = api.query("campaigns.getMyCampaigns", as_="u1")
            assert response.status_code == 503 and error_code(response) == "SERVICE_UNAVAILABLE"
            ok(api.query("campaigns.list", {}, as_=ADMIN_ID, admin=True))
    finally:
        driver.close()


def test_a_refused_query_answers_429_even_when_its_work_failed(base_settings: Settings, graph: Graph) -> None:
    """A query's count and its work overlap; when both fail, the refusal is the answer."""
    limiter = GraphRateLimiter(graph, limit_per_minute=1, clock=lambda: NOW)
    limiter.hit("u1")  # u1's budget for this minute is spent
    work_graph = open_graph(base_settings)
    with api_client(base_settings, work_graph, clock=lambda: NOW, rate_limiter=limiter) as api:
        work_graph.close()  # from here on every query's work fails; the limiter's graph still answers
        refused = api.query("campaigns.getMyCampaigns", as_="u1")
        assert refused.status_code == 429 and error_code(refused) == "TOO_MANY_REQUESTS"
        failed = api.query("campaigns.getMyCampaigns", as_="u2")  # counted and allowed: the work's error
        assert failed.status_code >= 500, failed.text


def test_concurrent_calls_in_two_processes_are_counted_exactly(graph: Graph) -> None:
    """80 simultaneous calls through two limiters (two API processes), each batching its own callers:
    exactly the limit gets through, because every call is told its own position in the count."""
    limiters = [GraphRateLimiter(graph, limit_per_minute=50, clock=lambda: NOW) for _ in range(2)]

    def call(i: int) -> str:
        try:
            limiters[i % 2].hit("u1")
        except TooManyRequests:
            return "refused"
        return "ok"

    outcomes = at_once(call, [(i,) for i in range(80)])
    for limiter in limiters:
        limiter.close()
    assert (outcomes.count("ok"), outcomes.count("refused")) == (50, 30)
    assert graph.run("MATCH (b:RateBucket) RETURN b.count AS n") == [{"n": 80}]


def test_an_over_limit_call_does_no_graph_work(base_settings: Settings, graph: Graph) -> None:
    """A batch of 100 getMyCampaigns calls past the limit is refused before any of their reads is issued:
    refusals shed the work, not only its answer."""
    limiter = GraphRateLimiter(graph, limit_per_minute=1, clock=lambda: NOW)
    with api_client(base_settings, graph, clock=lambda: NOW, rate_limiter=limiter) as api:
        engagement = api.http.app.state.services.engagement
        ok(api.query("campaigns.getMyCampaigns", as_="u1"))  # the minute's one allowed call
        assert engagement.profiles_read == 1
        paths = ",".join(["campaigns.getMyCampaigns"] * 100)
        refused = api.http.get(f"/trpc/{paths}", params={"batch": "1"}, headers=api.headers_for("u1"))
        assert refused.status_code == 429
        assert {call["error"]["data"]["code"] for call in refused.json()} == {"TOO_MANY_REQUESTS"}
        assert engagement.profiles_read == 1  # not one more read for the 100 refused calls
        ok(api.query("campaigns.getMyCampaigns", as_="u2"))  # another profile's budget: read as usual
        assert engagement.profiles_read == 2
    limiter.close()


def test_a_count_is_one_auto_commit_statement(graph: Graph, caplog: pytest.LogCaptureFixture) -> None:
    """Every app call pays the count, so it is one round trip: no BEGIN or COMMIT message on the wire
    (as a managed transaction sends), only the statement, whose commit the server makes."""
    limiter = GraphRateLimiter(graph, limit_per_minute=5, clock=lambda: datetime.now(UTC))
    try:
        limiter.hit("p1")  # the sweep's statement, if any, runs with the first new bucket
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="neo4j"):
            limiter.hit("p1")
    finally:
        limiter.close()
    sent = [r.getMessage() for r in caplog.records if "C: " in r.getMessage()]
    assert any("C: RUN" in line and "RateBucket" in line for line in sent), sent
    assert not any("C: BEGIN" in line or "C: COMMIT" in line for line in sent), sent
    assert graph.run("MATCH (b:RateBucket) RETURN sum(b.count) AS n") == [{"n": 2}]
