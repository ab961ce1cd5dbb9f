"""Every transaction has a deadline: a statement that really runs past it (a cartesian UNWIND of 10^10
rows, or a write waiting on a lock another transaction holds) is ended by the real Neo4j, raised as
``ServiceUnavailable`` ("try again") without a retry here, counted in the metric, and answered 503
SERVICE_UNAVAILABLE by the API. Neo4j checks deadlines about every 2 s, so each case ends within a few
seconds of a 0.5 s deadline instead of the minutes the statement would take."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.graph.graph import Graph, Tx, open_graph
from campaign_engine.observability import metrics
from campaign_engine.observability.metrics import GRAPH_STATEMENT_TIMEOUTS, MetricDef
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.trpc_wire import NEW_CAMPAIGN

_DEADLINE = 0.5
_ENDED_WITHIN = 8.0  # the deadline, Neo4j's 2 s check, and a loaded 2-core machine
_CARTESIAN = "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b RETURN count(*) AS n"


class _Counted:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []

    def add(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        self.seen.append((metric.name, dict(labels)))

    def timeouts(self, phase: str) -> int:
        return self.seen.count((GRAPH_STATEMENT_TIMEOUTS.name, {"phase": phase}))


@pytest.fixture
def counted() -> Iterator[_Counted]:
    recorder = _Counted()
    previous = metrics.record_to(recorder)
    try:
        yield recorder
    finally:
        metrics.record_to(previous)


@pytest.fixture
def hasty(graph: Graph) -> Graph:
    """The session's driver with a short deadline (and the API's one-second wait for a lost graph)."""
    return Graph(graph.driver, database=graph.database, unavailable_wait=1.0, tx_timeout=_DEADLINE)


def _cartesian(tx: Tx) -> Any:
    return tx.run(_CARTESIAN).single()


def _autocommit(graph: Graph) -> Any:
    with graph.autocommit_reads() as session:
        return session.run(_CARTESIAN).single()


def _pending(graph: Graph) -> Any:
    pending = graph.write_pending(_cartesian)
    pending.rollback()


CALLS: dict[str, Callable[[Graph], Any]] = {
    "read": lambda graph: graph.read(_cartesian),
    "write": lambda graph: graph.write(_cartesian),
    "write_idempotent": lambda graph: graph.write_idempotent(_cartesian),
    "write_pending": _pending,
    "run": lambda graph: graph.run(_CARTESIAN),
    "autocommit_reads": _autocommit,
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_statement_past_its_deadline_is_ended_and_service_unavailable(
    hasty: Graph, counted: _Counted, call: str
) -> None:
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="took too long"):
        CALLS[call](hasty)
    assert time.monotonic() - started < _ENDED_WITHIN  # ended by Neo4j, and not retried here
    assert counted.timeouts("running") == 1
    assert hasty.reachable  # a slow statement is not an outage: the worker keeps taking messages


def test_a_write_waiting_past_its_deadline_for_a_lock_is_ended(
    graph: Graph, hasty: Graph, counted: _Counted
) -> None:
    graph.run("CREATE (:DeadlineLock {id: 1})")
    holder = graph.write_pending(lambda tx: tx.run("MATCH (n:DeadlineLock) SET n.by = 'holder'").consume())
    try:
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable, match="took too long"):
            hasty.write(lambda tx: tx.run("MATCH (n:DeadlineLock) SET n.by = 'waiter'").consume())
        assert time.monotonic() - started < _ENDED_WITHIN
    finally:
        holder.commit()
    assert counted.timeouts("lock_wait") == 1
    assert graph.run("MATCH (n:DeadlineLock) RETURN n.by AS by") == [{"by": "holder"}]


def test_open_graph_sets_each_edges_deadline_from_its_setting(base_settings: Settings) -> None:
    settings = base_settings.model_copy(
        update={"neo4j_tx_timeout_seconds": 3.0, "neo4j_worker_tx_timeout_seconds": 45.0}
    )
    for graph, expected in ((open_graph(settings), 45.0), (open_graph(settings, tx_timeout=3.0), 3.0)):
        try:
            assert graph.tx_timeout == expected
        finally:
            graph.close()
    assert Settings(_env_file=None).neo4j_tx_timeout_seconds == 10
    assert Settings(_env_file=None).neo4j_worker_tx_timeout_seconds == 60


def test_the_api_answers_a_call_ended_at_its_deadline_service_unavailable(
    base_settings: Settings, graph: Graph, hasty: Graph, counted: _Counted
) -> None:
    """A campaign update waiting on a lock held past the API's deadline: 503, nothing written."""
    with api_client(base_settings, hasty) as api:
        ok(api.mutate("campaigns.create", NEW_CAMPAIGN, as_=ADMIN_ID, admin=True))
        holder = graph.write_pending(lambda tx: tx.run("MATCH (c:Campaign {id: 'c1'}) SET c.held = true"))
        try:
            update = {"campaignId": "c1", "description": "late"}
            response = api.mutate("campaigns.update", update, as_=ADMIN_ID, admin=True)
        finally:
            holder.rollback()
        assert response.status_code == 503, response.text
        assert error_code(response) == "SERVICE_UNAVAILABLE"
        assert "try again" in response.json()["error"]["message"]
        assert counted.timeouts("lock_wait") == 1
        assert (
            ok(api.query("campaigns.get", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True)).get("description")
            != "late"
        )
