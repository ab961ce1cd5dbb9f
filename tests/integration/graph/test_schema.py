"""``apply_schema``, which every API start runs: only what is missing, and what is missing comes back."""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema, schema_applied
from tests.support.concurrency import wait_for

_SENTINEL = "RETURN 'apply_schema test: all collected' AS done"


def _statements_run_during(graph: Graph, action: Any) -> list[str]:
    """The texts Neo4j ran while ``action`` did. The query collector drains a buffer on its own thread,
    so a sentinel run after the action is awaited in its answer; it also lists earlier invocations of
    the texts it reports, so those are told apart by their start."""
    graph.run("CALL db.stats.collect('QUERIES', {durationSeconds: 600})")
    try:
        since = graph.run("RETURN timestamp() AS now")[0]["now"]
        action()
        graph.run(_SENTINEL)
        texts: list[str] = []

        def collected() -> bool:
            rows = graph.run(
                "CALL db.stats.retrieve('QUERIES') YIELD data"
                " WHERE any(run IN data.invocations WHERE run.startTimestampMillis >= $since)"
                " RETURN data.query AS query",
                since=since,
            )
            texts[:] = [row["query"] for row in rows]
            return _SENTINEL in texts

        wait_for("the query collector to see the sentinel", collected, timeout=30)
    finally:
        graph.run("CALL db.stats.stop('QUERIES')")
        graph.run("CALL db.stats.clear('QUERIES')")
    return [text for text in texts if text != _SENTINEL and not text.startswith("RETURN timestamp()")]


def test_a_start_on_an_applied_graph_creates_nothing(graph: Graph) -> None:
    apply_schema(graph)  # the markers of the backfills, which the test's empty graph lost
    ran = _statements_run_during(graph, lambda: apply_schema(graph))
    assert "SHOW INDEXES YIELD name" in ran  # the collector saw this start
    assert [text for text in ran if text.lstrip().upper().startswith("CREATE")] == []
    assert len(ran) <= 4  # the indexes, the constraints, the wait, the migration markers


def test_a_dropped_index_is_created_again_and_nothing_else(graph: Graph) -> None:
    graph.run("DROP INDEX schema_migration_name")
    assert not schema_applied(graph)
    ran = _statements_run_during(graph, lambda: apply_schema(graph))
    assert [text.split()[2] for text in ran if text.lstrip().upper().startswith("CREATE")] == [
        "schema_migration_name"
    ]
    assert schema_applied(graph)
