"""Deleting a campaign: retire it in one small transaction, then reap what it leaves in bounded ones.

Split from ``definitions.py`` (the definition's life until then) because a delete is the one campaign
write whose size follows the audience: only the reaping ever touches that many relationships, and it
runs wherever convenient (every delete, the worker's sweep) since it touches retired nodes only.
"""

from __future__ import annotations

from campaign_engine.campaigns.definitions import audit_change, emit_event, locked_campaign
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["REAP_BATCH", "delete_campaign", "reap_deleted_campaigns", "retire_campaign"]

# Delete in two steps: one small transaction under the campaign lock retires the campaign
# (its Dispatches go, and the node loses the :Campaign label every reader matches on, which also frees
# the id for a new incarnation); then its relationships, as many as its audience, are removed in
# bounded transactions. Users see the first step only: after it the campaign is gone everywhere, and
# the second never has to fit an audience in one transaction.
_RETIRE = "campaign_retire"  # cypher/campaigns/campaign_retire.cypher

# One bounded batch: relationships of retired campaigns (memberships, states, tests), then the retired
# nodes left without any. A relationship a late writer attached after retirement is reaped the same way.
_REAP = "campaign_reap"  # cypher/campaigns/campaign_reap.cypher

# Relationships removed per reaping transaction: a transaction's memory stays bounded by this.
REAP_BATCH = 10_000


def delete_campaign(graph: Graph, *, campaign_id: str, audit: AuditContext | None = None) -> None:
    """Removes the campaign with its audience, states, pending tests and dispatch records.

    Retirement is one transaction (all or nothing); the reaping after it can be interrupted and is
    finished by the next ``reap_deleted_campaigns`` (every delete starts with one)."""
    reap_deleted_campaigns(graph)
    retire_campaign(graph, campaign_id=campaign_id, audit=audit)
    reap_deleted_campaigns(graph)


def retire_campaign(graph: Graph, *, campaign_id: str, audit: AuditContext | None = None) -> None:
    """The user-visible half of a delete: from its commit the campaign is gone for every reader and
    its id free; what it leaves is for ``reap_deleted_campaigns``. Its audit entry is written here,
    and carries the id and incarnation as properties, so reaping the node leaves the trail whole."""

    def tx_fn(tx: Tx) -> None:
        node = locked_campaign(tx, campaign_id)
        tx.run(statement(_RETIRE), id=campaign_id).consume()
        audit_change(tx, audit, node, before=node, after=None)
        emit_event(tx, graph, "campaign.deleted", node, system_clock())

    graph.write(tx_fn)


def reap_deleted_campaigns(graph: Graph, *, batch: int = REAP_BATCH) -> int:
    """Removes what retired campaigns left, ``batch`` relationships per transaction; returns how many
    relationships it removed. Safe to run anywhere, any time, concurrently: it touches retired nodes
    only."""

    def tx_fn(tx: Tx) -> tuple[int, int]:
        record = tx.run(statement(_REAP), limit=batch).single()
        assert record is not None
        return int(record["removed"]), int(record["dropped"])

    total = 0
    while True:
        removed, dropped = graph.write(tx_fn)
        total += removed
        if removed == 0 and dropped == 0:
            return total
