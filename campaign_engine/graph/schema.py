"""Applies ``cypher/schema.cypher`` and the one-time data backfills.

Every schema statement is ``IF NOT EXISTS``, so applying is idempotent. A backfill runs in bounded
transactions until nothing is left, then leaves a ``(:SchemaMigration {name})`` marker so later starts
(every API start applies the schema) skip its scan; two processes backfilling at once do no harm.
"""

from __future__ import annotations

from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph

__all__ = ["apply_schema", "schema_applied", "schema_statements"]

# Profiles made before upsert_profiles allocated campaignUnsubscribeId at creation get one now, so the
# email claim never pays the unique-index insert (issue 13 item 5; the claim still allocates for a
# profile that has none). Under each profile's lock, taken in ascending profileId (docs/architecture.md
# section 5), and coalesced after it: an id a claim allocated meanwhile is never replaced, because
# unsubscribe links were already signed with it.
_BACKFILLS = {
    "profile_unsubscribe_ids": """
        MATCH (p:Profile) WHERE p.campaignUnsubscribeId IS NULL
        WITH p ORDER BY p.profileId LIMIT 10000
        SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
        WITH p
        SET p.campaignUnsubscribeId = coalesce(p.campaignUnsubscribeId, randomUUID())
        RETURN count(p) AS n
    """,
    # Issue 21: data made before tenants belongs to the default tenant, and a campaign's ref (the id its
    # tenant knows it by, domain/tenancy.py) is its id; every profile is the default tenant's member. Audit
    # entries follow, so audit.list's tenant seek finds the old trail.
    "campaign_tenant_refs": """
        MATCH (c:Campaign) WHERE c.ref IS NULL
        WITH c LIMIT 10000
        SET c.tenantId = coalesce(c.tenantId, $defaultTenant), c.ref = c.id
        RETURN count(c) AS n
    """,
    "profile_tenants": """
        MATCH (p:Profile) WHERE p.tenants IS NULL
        WITH p LIMIT 10000
        SET p.tenants = [$defaultTenant]
        RETURN count(p) AS n
    """,
    # Issue 25's first release queued one :WebhookMessage per event; the outbox now holds :WebhookBatch
    # nodes (graph/webhook_outbox.py). Each message left becomes a batch of one, queued or sent as it was.
    "webhook_message_batches": """
        MATCH (m:WebhookMessage)
        WITH m LIMIT 10000
        CREATE (:WebhookBatch {endpointId: m.endpointId, tenantId: m.tenantId, orderKey: m.orderKey,
                               queueKey: m.queueKey, eventIds: [m.eventId], types: [m.type], bodies: [m.body],
                               orderKeys: [m.orderKey], recipientKeys: [m.recipientKey],
                               sent: [m.queueKey IS NULL], deliveredAt: m.deliveredAt})
        DELETE m
        RETURN count(*) AS n
    """,
    # Issue 27: the flat `hasSegment` of campaigns saved before it (campaigns/definitions.py); a segment
    # is a top-level key of the stored JSON, and a quote inside any copy is escaped there.
    "campaign_has_segment": """
        MATCH (c:Campaign) WHERE c.hasSegment IS NULL
        WITH c LIMIT 10000
        SET c.hasSegment = coalesce(c.definition CONTAINS '"segment":', false)
        RETURN count(c) AS n
    """,
    # Issue 27: a live segment's tag seek reads the tag_member index (slug, profileId) of HAS_TAG, which
    # upsert_profiles.cypher writes; links made before carry neither.
    "has_tag_keys": """
        MATCH (p:Profile)-[g:HAS_TAG]->(t:Tag) WHERE g.slug IS NULL
        WITH p, g, t LIMIT 10000
        SET g.slug = t.slug, g.profileId = p.profileId
        RETURN count(g) AS n
    """,
    "audit_entry_tenants": """
        MATCH (a:AuditEntry) WHERE a.tenantId IS NULL
        WITH a LIMIT 10000
        SET a.tenantId = $defaultTenant
        RETURN count(a) AS n
    """,
}


def schema_statements() -> list[str]:
    lines = [line for line in query("schema").splitlines() if not line.strip().startswith("//")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def _names(statements: list[str]) -> set[str]:
    # "CREATE CONSTRAINT profile_id IF NOT EXISTS ..." -> "profile_id"
    return {stmt.split()[2] for stmt in statements}


def apply_schema(graph: Graph, *, default_tenant: str = "default") -> None:
    """``default_tenant`` is ``CAMPAIGN_DEFAULT_TENANT_ID``, the tenant of data made before tenants."""
    for statement in schema_statements():
        graph.run(statement)
    graph.run("CALL db.awaitIndexes(300)")
    _backfill(graph, default_tenant)


def _backfill(graph: Graph, default_tenant: str) -> None:
    for name, statement in _BACKFILLS.items():
        if graph.run("MATCH (m:SchemaMigration {name: $name}) RETURN count(m) AS n", name=name)[0]["n"]:
            continue
        while graph.run(statement, defaultTenant=default_tenant)[0]["n"]:
            pass
        graph.run("MERGE (:SchemaMigration {name: $name})", name=name)


def schema_applied(graph: Graph) -> bool:
    wanted = _names(schema_statements())
    have = {row["name"] for row in graph.run("SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'")}
    return wanted <= have
