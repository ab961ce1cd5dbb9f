"""Opting a profile out of announcement email by its ``campaignUnsubscribeId``, and allocating those ids.

Opt-outs are per organisation (docs/people.md): a link from tenant B's email opts the person out of B's
email only (``announcementEmailOptOut`` on B's view of them); "from every organisation", and every link
that names no tenant, sets the person's deployment-wide opt-out, which stops every tenant's.

The id is a random UUID given to a profile once (by the email claim, inside its locked transaction) and
kept for the profile's life. It is never derived from the profileId, so a profile deleted and created
again under the same profileId gets a new id and old links do nothing to it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_events

__all__ = ["Scope", "allocate_unsubscribe_id", "ensure_unsubscribe_ids", "opt_out_by_unsubscribe_id"]

Scope = Literal["tenant", "all"]
"""The page's choice: the link's tenant only (the default), or every organisation."""

_OPT_OUT = "opt_out"  # cypher/unsubscribe/opt_out.cypher: every tenant
_OPT_OUT_TENANT = "opt_out_tenant"  # cypher/unsubscribe/opt_out_tenant.cypher: the link's tenant

# The lock comes first so the coalesce reads a value no concurrent claim can still change; inside a
# claim transaction that already holds the profile locks it is a harmless re-lock.
_ENSURE_IDS = "opt_out_ensure_ids"  # cypher/unsubscribe/opt_out_ensure_ids.cypher


def allocate_unsubscribe_id() -> str:
    return str(uuid.uuid4())


def ensure_unsubscribe_ids(tx: Tx, profile_ids: list[str]) -> dict[str, str]:
    """Give each existing profile among ``profile_ids`` an unsubscribe id if it has none; return all ids.

    Meant for the email claim transaction (after ``lock_profiles``; it locks in ascending profileId order
    itself too). An existing id is always kept; a re-run of the transaction only draws new candidates
    for ids that were never committed.
    """
    rows = [{"profileId": pid, "candidate": allocate_unsubscribe_id()} for pid in sorted(set(profile_ids))]
    return {
        record["profileId"]: record["unsubscribeId"] for record in tx.run(statement(_ENSURE_IDS), rows=rows)
    }


def opt_out_by_unsubscribe_id(
    graph: Graph,
    unsubscribe_id: str,
    *,
    now: datetime,
    tenant_id: str | None = None,
    scope: Scope = "tenant",
) -> bool:
    """Set ``announcementEmailOptOut`` under the profile lock: on ``tenant_id``'s view of the person, or
    on the person when ``scope`` is ``"all"`` or the link names no tenant. Idempotent (the first
    timestamp is kept).

    False when no profile holds the id (deleted profile). Callers answer exactly as for True, so a link
    never reveals whether its profile exists. The first opt-out is a ``recipient.unsubscribed`` event
    for each tenant it stops: the link's tenant only, or every tenant the profile belongs to.
    """
    stamp = format_ts(now)
    one_tenant = tenant_id is not None and scope == "tenant"
    name = _OPT_OUT_TENANT if one_tenant else _OPT_OUT

    def tx_fn(tx: Tx) -> bool:
        row = tx.run(statement(name), unsubscribeId=unsubscribe_id, tenantId=tenant_id, now=stamp).single()
        if row is None:
            return False
        if not row["already"]:
            for tenant in row["tenants"]:
                event = Event.of("recipient.unsubscribed", stamp, profileId=row["profileId"], channel="email")
                record_events(tx, graph, tenant, [event])
        return True

    return graph.write(tx_fn)
