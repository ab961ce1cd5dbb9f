"""Exports: a campaign's recipients with what happened to each, and the audit trail,
as row iterators read in keyset pages straight from the graph.

Each page is its own short read transaction of at most ``PAGE`` rows, so the first rows leave at once
and memory stays one page whatever the size; a page never repeats or skips a row (the key is unique and
only grows). The wire format (CSV, NDJSON) is the edge's (``api/exports.py``). Ids and times only: no
address and no copy, nothing an admin of the tenant cannot already read through getAudience,
explainRecipient and audit.list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from campaign_engine.domain.ab_variants import TestWave, served_variant
from campaign_engine.graph.audit import list_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rows import plain_rows
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.segment import CompiledSegment, compile_for
from campaign_engine.graph.rules.segment_statements import segment_query

__all__ = ["AUDIT_COLUMNS", "PAGE", "RECIPIENT_COLUMNS", "audit_rows", "recipient_rows"]

PAGE = 1000

RECIPIENT_COLUMNS = (
    "profileId", "source", "selfEnrolled", "addedAt", "eligibleNow",
    "notifiedAt", "notifyCappedAt",
    "emailedAt", "emailOutcome", "emailOutcomeReason", "emailCappedAt", "bouncedAt", "complainedAt",
    "emailClickedAt", "unsubscribedAt", "shown", "clicked", "dismissed", "variantId",
)  # fmt: skip
AUDIT_COLUMNS = (
    "at", "actor", "tenantId", "procedure", "requestId", "targetType", "targetId", "campaignId",
    "revisionBefore", "revisionAfter", "detail",
)  # fmt: skip


def recipient_rows(
    graph: Graph, *, campaign_id: str, policy: Policy, page: int = PAGE
) -> Iterator[dict[str, Any]]:
    """Every member of ``campaign_id`` (a storage id the caller resolved in its tenant), in profileId
    order (with a live segment: its matches now and whoever it reached before, ``source`` ``segment``
    and ``reached``); ``eligibleNow`` is the age policy at ``policy.now``, as getAudience and getStats count.
    ``variantId``: the A/B content variant recorded at the member's first delivery or event, else the
    one they are served (``domain/ab_variants.py:served_variant``, a test wave's winner outside it);
    empty without variants or while they wait for a test's decision."""

    def load(tx: Tx) -> tuple[dict[str, Any] | None, CompiledSegment | None]:
        found = tx.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS c", id=campaign_id).single()
        campaign = None if found is None else dict(found["c"])
        return campaign, None if campaign is None else compile_for(tx, campaign)

    campaign, compiled = graph.read(load)
    variants = json.loads(campaign["abVariants"]) if campaign and campaign.get("abVariants") else None
    wave = TestWave.of(campaign.get("abTest")) if campaign else None
    if compiled is None:
        text, params = statement("export_recipients"), policy.params()
    else:  # a live segment: its matches and everyone it reached too (export_segment_recipients.cypher)
        text = segment_query("export_segment_recipients", compiled)
        params = {**policy.params(), **compiled.params(policy.now)}

    def read(tx: Tx, cursor: str) -> list[dict[str, Any]]:
        return plain_rows(tx.run(text, campaignId=campaign_id, cursor=cursor, limit=page, **params))

    cursor = ""
    while True:
        rows = graph.read(read, cursor)
        for row in rows:
            if row["variantId"] is None:
                row["variantId"] = served_variant(  # null while they wait for a test's decision
                    variants, wave, campaign_id=campaign_id, profile_id=row["profileId"]
                )
            yield row
        if len(rows) < page:
            return
        cursor = rows[-1]["profileId"]


def audit_rows(
    graph: Graph, *, tenant_id: str, since: datetime | None, until: datetime | None, page: int = PAGE
) -> Iterator[dict[str, Any]]:
    """The tenant's audit entries newest first, ``since`` inclusive and ``until`` exclusive, as
    audit.list answers them."""
    cursor: str | None = None
    while True:
        found = list_audit(graph, tenant_id=tenant_id, since=since, until=until, cursor=cursor, limit=page)
        for entry in found.records:
            yield entry.model_dump(by_alias=True, mode="json")
        if not found.has_more:
            return
        cursor = found.cursor
