"""Applies ``cypher/graph/schema.cypher`` and the one-time data backfills (``cypher/graph/backfills/``).

Every schema statement is ``IF NOT EXISTS``, so applying is idempotent. Every API start applies the
schema, and a start against a graph that has it already should cost two reads, not 56 schema
transactions: the names present are read first and only the missing statements run (Neo4j's own
``IF NOT EXISTS`` also goes by name). A backfill runs in bounded transactions until nothing is left,
then leaves a ``(:SchemaMigration {name})`` marker so later starts skip its scan; two processes
backfilling at once do no harm.
"""

from __future__ import annotations

from campaign_engine.graph.cypher import query, statement
from campaign_engine.graph.graph import Graph

__all__ = ["apply_schema", "schema_applied", "schema_statements"]

# The backfills by migration marker name, each in its file (its header says why it exists).
_BACKFILLS = {  # cypher/graph/backfills/
    "profile_unsubscribe_ids": "backfill_profile_unsubscribe_ids",
    "campaign_tenant_refs": "backfill_campaign_tenant_refs",
    "profile_tenants": "backfill_profile_tenants",
    "webhook_message_batches": "backfill_webhook_message_batches",
    "campaign_has_segment": "backfill_campaign_has_segment",
    "has_tag_keys": "backfill_has_tag_keys",
    "audit_entry_tenants": "backfill_audit_entry_tenants",
}


def schema_statements() -> list[str]:
    lines = [line for line in query("schema").splitlines() if not line.strip().startswith("//")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def _name(stmt: str) -> str:
    # "CREATE CONSTRAINT profile_id IF NOT EXISTS ..." -> "profile_id"
    return stmt.split()[2]


def _names(statements: list[str]) -> set[str]:
    return {_name(stmt) for stmt in statements}


def apply_schema(graph: Graph, *, default_tenant: str = "default") -> None:
    """``default_tenant`` is ``CAMPAIGN_DEFAULT_TENANT_ID``, the tenant of data made before tenants."""
    present = {row["name"] for row in graph.run("SHOW INDEXES YIELD name")} | {
        row["name"] for row in graph.run("SHOW CONSTRAINTS YIELD name")
    }
    for text in schema_statements():
        if _name(text) not in present:
            graph.run(text)
    graph.run("CALL db.awaitIndexes(300)")  # also those another process is still populating
    _backfill(graph, default_tenant)


def _backfill(graph: Graph, default_tenant: str) -> None:
    done = {row["name"] for row in graph.run("MATCH (m:SchemaMigration) RETURN m.name AS name")}
    for name, backfill in _BACKFILLS.items():
        if name in done:
            continue
        while graph.run(statement(backfill), defaultTenant=default_tenant)[0]["n"]:
            pass
        graph.run("MERGE (:SchemaMigration {name: $name})", name=name)


def schema_applied(graph: Graph) -> bool:
    wanted = _names(schema_statements())
    have = {row["name"] for row in graph.run("SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'")}
    return wanted <= have
