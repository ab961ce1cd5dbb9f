"""Campaign audiences: preview, add, remove and page through members.

A source is first *resolved* to sorted, distinct profileIds (and the identifiers that named no
profile), then *applied* in chunks of ``CHUNK`` ids, each one UNWIND query. Graph sources (a tag, a
profile's connections, every profile) are resolved lazily, one keyset page of ``CHUNK`` ids per read,
so memory never grows with the audience. Aliases collapse during
resolution (a DID and a did:web alias of the same profile give one id), so ``count`` and ``added``
count profiles, not inputs. Adds and removes take the campaign lock first in every chunk transaction:
concurrent adds, retries and self-enrolments serialise on it, which is what makes ``added`` exact.

Only profiles that pass the campaign age policy are added (and, where the campaign routes minors to
their guardians, the members it excludes, whom the walks replace by their guardians);
the policy is evaluated again on every read (paging, stats, getMyCampaigns, delivery), so a membership
is never a licence by itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from campaign_engine.campaigns.definitions import shown_before
from campaign_engine.domain.audience import (
    AllSource,
    ConnectionsSource,
    DidsSource,
    ProfileIdsSource,
    TagSource,
    profile_id_from_did_web,
    source_label,
)
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign, lock_profiles
from campaign_engine.graph.rows import plain_rows
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query

__all__ = [
    "CHUNK",
    "AudienceCount",
    "AudiencePage",
    "AudienceRecord",
    "Removed",
    "Source",
    "add_audience",
    "get_audience",
    "preview_audience",
    "remove_audience",
]

CHUNK = 10_000

Source = DidsSource | ProfileIdsSource | TagSource | ConnectionsSource | AllSource


class AudienceCount(CamelModel):
    count: int
    added: int
    not_found: list[str]


class Removed(BaseModel):
    removed: int


class AudienceRecord(CamelModel):
    profile_id: str
    did: str | None
    member: bool = Field(
        description="a static member (removeAudience removes them); false: a match of the campaign's live"
        " segment now, in the audience only while the rule matches them"
    )


class AudiencePage(CamelModel):
    records: list[AudienceRecord]
    cursor: str | None
    has_more: bool


@dataclass(frozen=True)
class _Resolved:
    chunks: Iterator[list[str]]  # sorted, distinct ids, at most CHUNK each, ascending across chunks
    not_found: list[str]


def _list_items(source: DidsSource | ProfileIdsSource, domain: str) -> list[dict[str, Any]]:
    if isinstance(source, ProfileIdsSource):
        return [{"input": pid, "did": None, "profileId": pid} for pid in dict.fromkeys(source.profile_ids)]
    return [
        {"input": did, "did": did, "profileId": profile_id_from_did_web(did, domain)}
        for did in dict.fromkeys(source.dids)
    ]


# Graph sources can name every profile there is: they are read in keyset pages of CHUNK ids, never
# collected whole. `all` walks the profileId index in order; a tag's or a profile's
# neighbours are expanded from their one node and the page after the cursor kept.
# Every source resolves inside the campaign's tenant: only its members are found, and a key
# (a tag, a profile) that names none of them is reported not found, exactly as if it did not exist.
_KEY_EXISTS = {  # cypher/audience/
    "tag": "audience_tag_exists",
    "connections": "audience_profile_exists",
}

_GRAPH_PAGE = {  # cypher/audience/
    "tag": "audience_tag_page",
    "connections": "audience_connections_page",
    "all": "audience_all_page",
}


def _resolve_list(
    tx: Tx, campaign_id: str, source: DidsSource | ProfileIdsSource, domain: str
) -> tuple[list[str], list[str]]:
    tenant = _require_campaign(tx, campaign_id)["tenantId"]
    items = _list_items(source, domain)
    lists = tx.run(statement("audience_resolve_list"), items=items, tenant=tenant).single()
    assert lists is not None  # an aggregation always returns one record
    return sorted(set(lists["found"])), list(lists["missing"])


def _key_exists(tx: Tx, campaign_id: str, kind: str, key: str | None) -> tuple[str, bool]:
    """The campaign's tenant, and whether ``key`` names something of it."""
    tenant = str(_require_campaign(tx, campaign_id)["tenantId"])
    if key is None:
        return tenant, True
    record = tx.run(statement(_KEY_EXISTS[kind]), key=key, tenant=tenant).single()
    return tenant, record is not None and bool(record["exists"])


def _graph_page(tx: Tx, kind: str, key: str | None, tenant: str, cursor: str) -> list[str]:
    record = tx.run(statement(_GRAPH_PAGE[kind]), key=key, tenant=tenant, cursor=cursor, limit=CHUNK).single()
    assert record is not None
    return sorted(record["profileIds"])


def _graph_pages(graph: Graph, kind: str, key: str | None, tenant: str) -> Iterator[list[str]]:
    cursor = ""
    while True:
        ids = graph.read(_graph_page, kind, key, tenant, cursor)
        if ids:
            yield ids
        if len(ids) < CHUNK:
            return
        cursor = ids[-1]


def _at_least_one(chunks: Iterator[list[str]]) -> Iterator[list[str]]:
    """An empty source still runs one (empty) chunk: its campaign checks answer NOT_FOUND or BAD_REQUEST."""
    empty = True
    for chunk in chunks:
        empty = False
        yield chunk
    if empty:
        yield []


def _resolve(graph: Graph, campaign_id: str, source: Source, domain: str) -> _Resolved:
    """Checks the campaign exists, then resolves ``source`` lazily, a chunk at a time."""
    if isinstance(source, DidsSource | ProfileIdsSource):  # at most MAX_LIST ids: one chunk
        ids, missing = graph.read(_resolve_list, campaign_id, source, domain)
        return _Resolved(iter([ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]), missing)
    key = source.slug if isinstance(source, TagSource) else getattr(source, "profile_id", None)
    tenant, exists = graph.read(_key_exists, campaign_id, source.type, key)
    not_found = [] if exists or key is None else [key]
    return _Resolved(_graph_pages(graph, source.type, key, tenant) if exists else iter([]), not_found)


def _require_campaign(tx: Tx, campaign_id: str) -> dict[str, Any]:
    record = tx.run(
        "MATCH (c:Campaign {id: $id}) RETURN c {.id, .ref, .status, .tenantId, .definition} AS c",
        id=campaign_id,
    ).single()
    if record is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    return dict(record["c"])


def preview_audience(graph: Graph, *, campaign_id: str, source: Source, policy: Policy) -> AudienceCount:
    """Counts distinct eligible matches without writing anything (``added`` is always 0)."""
    resolved = _resolve(graph, campaign_id, source, policy.domain)

    def tx_fn(tx: Tx, chunk: list[str]) -> int:
        record = tx.run(
            statement("audience_count"), campaignId=campaign_id, profileIds=chunk, **policy.params()
        ).single()
        return int(record["count"]) if record is not None else 0

    count = sum(graph.read(tx_fn, chunk) for chunk in resolved.chunks)
    return AudienceCount(count=count, added=0, not_found=resolved.not_found)


def _locked_editable(tx: Tx, campaign_id: str) -> dict[str, Any]:
    node = lock_campaign(tx, campaign_id)
    if node is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    if node["status"] == "archived":
        raise BadRequest("archived campaigns cannot change their audience")
    return node


def _audit_chunk(
    tx: Tx, audit: AuditContext | None, node: dict[str, Any], source: Source, totals: dict[str, int]
) -> None:
    """One entry per call: its first chunk writes it, each later chunk (own transaction) brings its
    totals up to date, so the entry always accounts for exactly the chunks that committed. An audience
    change leaves the revision as it is (the preview token digests the recipients themselves)."""
    record_audit(
        tx,
        audit,
        target_type="campaign",
        target_id=node["id"],
        campaign=node,
        revision_before=node["revision"],
        revision_after=node["revision"],
        detail={"source": source_label(source), **totals},
    )


_PIN = "MATCH (c:Campaign {id: $id}) SET c += $props"


def add_audience(
    graph: Graph,
    *,
    campaign_id: str,
    source: Source,
    policy: Policy,
    audit: AuditContext | None = None,
    shown: bool = False,
) -> AudienceCount:
    """Adds the eligible matches; ``added`` counts memberships created by this call only. ``shown``:
    under an approval policy, new members of a live campaign wait for its review
    (``definitions.shown_before``, ``sending/approval_publish.py``).

    Each chunk is its own transaction under the campaign lock, so a retry after a partial failure
    re-adds nothing that exists and reports only what it created.
    """
    resolved = _resolve(graph, campaign_id, source, policy.domain)
    label, now = source_label(source), format_ts(policy.now)

    def chunk_fn(tx: Tx, chunk: list[str], done: int, count: int, added: int) -> tuple[int, int]:
        node = _locked_editable(tx, campaign_id)
        pinned = shown_before(node, going_live=False, now=policy.now) if shown else {}
        if pinned:
            tx.run(_PIN, id=campaign_id, props=pinned).consume()
        record = tx.run(
            statement("audience_add"),
            campaignId=campaign_id,
            profileIds=chunk,
            now=now,
            source=label,
            **policy.params(),
        ).single()
        assert record is not None
        chunk_count, chunk_added = int(record["count"]), int(record["added"])
        totals = {"chunks": done + 1, "count": count + chunk_count, "added": added + chunk_added}
        _audit_chunk(tx, audit, node, source, totals)
        return chunk_count, chunk_added

    count = added = 0
    for done, chunk in enumerate(_at_least_one(resolved.chunks)):
        chunk_count, chunk_added = graph.write(chunk_fn, chunk, done, count, added)
        count += chunk_count
        added += chunk_added
    return AudienceCount(count=count, added=added, not_found=resolved.not_found)


def remove_audience(
    graph: Graph, *, campaign_id: str, source: Source, policy: Policy, audit: AuditContext | None = None
) -> Removed:
    resolved = _resolve(graph, campaign_id, source, policy.domain)

    def chunk_fn(tx: Tx, chunk: list[str], done: int, removed: int) -> int:
        node = _locked_editable(tx, campaign_id)
        # The profile locks, ascending: an acknowledgement in flight rechecks membership under them
        # (cypher/delivery/notify/notify_record.cypher), so it counts a member or nobody.
        lock_profiles(tx, chunk)
        record = tx.run(statement("audience_remove"), campaignId=campaign_id, profileIds=chunk).single()
        chunk_removed = int(record["removed"]) if record is not None else 0
        _audit_chunk(tx, audit, node, source, {"chunks": done + 1, "removed": removed + chunk_removed})
        return chunk_removed

    removed = 0
    for done, chunk in enumerate(_at_least_one(resolved.chunks)):
        removed += graph.write(chunk_fn, chunk, done, removed)
    return Removed(removed=removed)


def get_audience(
    graph: Graph, *, campaign_id: str, cursor: str | None, limit: int, policy: Policy
) -> AudiencePage:
    """Eligible members after ``cursor`` in profileId order (keyset paging on the audience index)."""

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        campaign = _require_campaign(tx, campaign_id)
        segment = compile_for(tx, campaign)
        text = statement("audience_page")
        if segment is not None:  # the static members and the live segment's matches now
            text = segment_query("audience_segment_page", segment)
        rows = tx.run(
            text,
            campaignId=campaign_id,
            cursor=cursor or "",
            limit=limit + 1,
            **policy.params(),
            **(segment.params(policy.now) if segment else {}),
        )
        return plain_rows(rows)

    rows = graph.read(tx_fn)
    page = [AudienceRecord(profile_id=r["profileId"], did=r["did"], member=r["member"]) for r in rows[:limit]]
    has_more = len(rows) > limit
    return AudiencePage(records=page, cursor=page[-1].profile_id if has_more else None, has_more=has_more)
