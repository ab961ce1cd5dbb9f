"""``apply_schema``, which every API start runs: only what is missing, and what is missing comes back."""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema, schema_applied


def _statements_run_during(graph: Graph, action: Any) -> list[str]:
    """The texts Neo4j ran while ``action`` did (its query collector also lists earlier invocations of
    the texts it reports, so they are told apart by their start)."""
    graph.run("CALL db.stats.collect('QUERIES', {durationSeconds: 600})")
    try:
        since = graph.run("RETURN timestamp() AS now")[0]["now"]
        action()
        rows = graph.run(
            "CALL db.stats.retrieve('QUERIES') YIELD data"
            " WHERE any(run IN data.invocations WHERE run.startTimestampMillis >= $since)"
            " AND NOT data.query STARTS WITH 'RETURN timestamp()'"
            " RETURN data.query AS query",
            since=since,
        )
    finally:
        graph.run("CALL db.stats.stop('QUERIES')")
        graph.run("CALL db.stats.clear('QUERIES')")
    return [row["query"] for row in rows]


def test_a_start_on_an_applied_graph_creates_nothing(graph: Graph) -> None:
    apply_schema(graph)  # the markers of the backfills, which the test's empty graph lost
    ran = _statements_run_during(graph, lambda: apply_schema(graph))
    assert ran, "the collector saw no statement: the check below would pass vacuously"
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
