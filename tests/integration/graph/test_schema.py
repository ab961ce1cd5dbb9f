"""``apply_schema``, which every API start runs: only what is missing, and what is missing comes back."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema, schema_applied


def _statements_run_during(graph: Graph, monkeypatch: pytest.MonkeyPatch, action: Any) -> list[str]:
    """The texts ``action`` sent through ``graph`` (each still runs on the real database). Recorded at
    the graph rather than read from Neo4j's query collector: the collector drains a buffer on its own
    thread and, on a loaded run, answered with a later statement and without the earlier ones."""
    texts: list[str] = []
    run = graph.run

    def recorded(cypher: str, **params: Any) -> list[dict[str, Any]]:
        texts.append(cypher)
        return run(cypher, **params)

    with monkeypatch.context() as patch:
        patch.setattr(graph, "run", recorded)
        action()
    return texts


def test_a_start_on_an_applied_graph_creates_nothing(graph: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    apply_schema(graph)  # the markers of the backfills, which the test's empty graph lost
    ran = _statements_run_during(graph, monkeypatch, lambda: apply_schema(graph))
    assert "SHOW INDEXES YIELD name" in ran  # it read what exists
    assert [text for text in ran if text.lstrip().upper().startswith("CREATE")] == []
    assert len(ran) <= 4  # the indexes, the constraints, the wait, the migration markers


def test_a_dropped_index_is_created_again_and_nothing_else(
    graph: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph.run("DROP INDEX schema_migration_name")
    assert not schema_applied(graph)
    ran = _statements_run_during(graph, monkeypatch, lambda: apply_schema(graph))
    assert [text.split()[2] for text in ran if text.lstrip().upper().startswith("CREATE")] == [
        "schema_migration_name"
    ]
    assert schema_applied(graph)
