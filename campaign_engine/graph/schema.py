"""Applies ``cypher/schema.cypher``: every statement is ``IF NOT EXISTS``, so applying is idempotent."""

from __future__ import annotations

from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph

__all__ = ["apply_schema", "schema_applied", "schema_statements"]


def schema_statements() -> list[str]:
    lines = [line for line in query("schema").splitlines() if not line.strip().startswith("//")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def _names(statements: list[str]) -> set[str]:
    # "CREATE CONSTRAINT profile_id IF NOT EXISTS ..." -> "profile_id"
    return {stmt.split()[2] for stmt in statements}


def apply_schema(graph: Graph) -> None:
    for statement in schema_statements():
        graph.run(statement)
    graph.run("CALL db.awaitIndexes(300)")


def schema_applied(graph: Graph) -> bool:
    wanted = _names(schema_statements())
    have = {row["name"] for row in graph.run("SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'")}
    return wanted <= have
