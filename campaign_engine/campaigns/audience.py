"""Campaign audiences: preview, add, remove and page through members.

A source is first *resolved* to a sorted list of distinct profileIds (and the identifiers that named
no profile), then *applied* in chunks of ``CHUNK`` ids, each one UNWIND query. Aliases collapse during
resolution (a DID and a did:web alias of the same profile give one id), so ``count`` and ``added``
count profiles, not inputs. Adds and removes take the campaign lock first in every chunk transaction:
concurrent adds, retries and self-enrolments serialise on it, which is what makes ``added`` exact.

Only profiles that pass the campaign age policy are added; the policy is evaluated again on every read
(paging, stats, getMyCampaigns, delivery), so a membership is never a licence by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.config import Settings
from campaign_engine.domain.audience import (
    AllSource,
    ConnectionsSource,
    DidsSource,
    ProfileIdsSource,
    TagSource,
    profile_id_from_did_web,
    source_label,
)
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.policy import policy_params, policy_query

__all__ = [
    "CHUNK",
    "AudienceCount",
    "AudiencePage",
    "AudienceRecord",
    "Policy",
    "Removed",
    "Source",
    "add_audience",
    "get_audience",
    "preview_audience",
    "remove_audience",
]

CHUNK = 10_000

Source = DidsSource | ProfileIdsSource | TagSource | ConnectionsSource | AllSource


@dataclass(frozen=True)
class Policy:
    """What every policy-checked query needs: the evaluation moment, the adult age, the did:web domain."""

    now: datetime
    adult_age: int
    domain: str

    @classmethod
    def of(cls, settings: Settings, now: datetime) -> Policy:
        return cls(now=now, adult_age=settings.campaign_adult_age, domain=settings.domain_name)

    def params(self) -> dict[str, Any]:
        return policy_params(self.now, self.adult_age)


class AudienceCount(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    count: int
    added: int
    not_found: Annotated[list[str], Field(alias="notFound")]


class Removed(BaseModel):
    removed: int


class AudienceRecord(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    profile_id: Annotated[str, Field(alias="profileId")]
    did: str | None


class AudiencePage(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    records: list[AudienceRecord]
    cursor: str | None
    has_more: Annotated[bool, Field(alias="hasMore")]


@dataclass(frozen=True)
class _Resolved:
    profile_ids: list[str]  # sorted, distinct
    not_found: list[str]


def _list_items(source: DidsSource | ProfileIdsSource, domain: str) -> list[dict[str, Any]]:
    if isinstance(source, ProfileIdsSource):
        return [{"input": pid, "did": None, "profileId": pid} for pid in dict.fromkeys(source.profile_ids)]
    return [
        {"input": did, "did": did, "profileId": profile_id_from_did_web(did, domain)}
        for did in dict.fromkeys(source.dids)
    ]


_RESOLVE_GRAPH = {
    "tag": """
        OPTIONAL MATCH (t:Tag {slug: $key})
        OPTIONAL MATCH (t)<-[:HAS_TAG]-(p:Profile)
        RETURN t IS NOT NULL AS exists, collect(DISTINCT p.profileId) AS profileIds
    """,
    "connections": """
        OPTIONAL MATCH (a:Profile {profileId: $key})
        OPTIONAL MATCH (a)-[:CONNECTED_WITH]-(p:Profile) WHERE p <> a
        RETURN a IS NOT NULL AS exists, collect(DISTINCT p.profileId) AS profileIds
    """,
    "all": "MATCH (p:Profile) RETURN true AS exists, collect(p.profileId) AS profileIds",
}


def _resolve(tx: Tx, source: Source, domain: str) -> _Resolved:
    if isinstance(source, DidsSource | ProfileIdsSource):
        lists = tx.run(query("audience_resolve_list"), items=_list_items(source, domain)).single()
        assert lists is not None  # an aggregation always returns one record
        return _Resolved(sorted(set(lists["found"])), list(lists["missing"]))
    key = source.slug if isinstance(source, TagSource) else getattr(source, "profile_id", None)
    record = tx.run(_RESOLVE_GRAPH[source.type], key=key).single()
    assert record is not None
    not_found = [] if record["exists"] or key is None else [key]
    return _Resolved(sorted(record["profileIds"]), not_found)


def _chunks(ids: list[str]) -> list[list[str]]:
    return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)] or [[]]


def _require_campaign(tx: Tx, campaign_id: str) -> dict[str, Any]:
    record = tx.run("MATCH (c:Campaign {id: $id}) RETURN c {.id, .status} AS c", id=campaign_id).single()
    if record is None:
        raise NotFound(f"campaign '{campaign_id}' not found")
    return dict(record["c"])


def _checked_resolve(tx: Tx, campaign_id: str, source: Source, domain: str) -> _Resolved:
    _require_campaign(tx, campaign_id)
    return _resolve(tx, source, domain)


def preview_audience(graph: Graph, *, campaign_id: str, source: Source, policy: Policy) -> AudienceCount:
    """Counts distinct eligible matches without writing anything (``added`` is always 0)."""

    def tx_fn(tx: Tx) -> AudienceCount:
        _require_campaign(tx, campaign_id)
        resolved = _resolve(tx, source, policy.domain)
        count = 0
        for chunk in _chunks(resolved.profile_ids):
            record = tx.run(
                policy_query("audience_count"), campaignId=campaign_id, profileIds=chunk, **policy.params()
            ).single()
            count += int(record["count"]) if record is not None else 0
        return AudienceCount(count=count, added=0, not_found=resolved.not_found)

    return graph.read(tx_fn)


def _locked_editable(tx: Tx, campaign_id: str) -> None:
    node = lock_campaign(tx, campaign_id)
    if node is None:
        raise NotFound(f"campaign '{campaign_id}' not found")
    if node["status"] == "archived":
        raise BadRequest("archived campaigns cannot change their audience")


def add_audience(graph: Graph, *, campaign_id: str, source: Source, policy: Policy) -> AudienceCount:
    """Adds the eligible matches; ``added`` counts memberships created by this call only.

    Each chunk is its own transaction under the campaign lock, so a retry after a partial failure
    re-adds nothing that exists and reports only what it created.
    """
    resolved = graph.read(_checked_resolve, campaign_id, source, policy.domain)
    label, now = source_label(source), format_ts(policy.now)

    def chunk_fn(tx: Tx, chunk: list[str]) -> tuple[int, int]:
        _locked_editable(tx, campaign_id)
        record = tx.run(
            policy_query("audience_add"),
            campaignId=campaign_id,
            profileIds=chunk,
            now=now,
            source=label,
            **policy.params(),
        ).single()
        assert record is not None
        return int(record["count"]), int(record["added"])

    count = added = 0
    for chunk in _chunks(resolved.profile_ids):
        chunk_count, chunk_added = graph.write(chunk_fn, chunk)
        count += chunk_count
        added += chunk_added
    return AudienceCount(count=count, added=added, not_found=resolved.not_found)


def remove_audience(graph: Graph, *, campaign_id: str, source: Source, policy: Policy) -> Removed:
    resolved = graph.read(_checked_resolve, campaign_id, source, policy.domain)

    def chunk_fn(tx: Tx, chunk: list[str]) -> int:
        _locked_editable(tx, campaign_id)
        record = tx.run(query("audience_remove"), campaignId=campaign_id, profileIds=chunk).single()
        return int(record["removed"]) if record is not None else 0

    return Removed(removed=sum(graph.write(chunk_fn, chunk) for chunk in _chunks(resolved.profile_ids)))


def get_audience(
    graph: Graph, *, campaign_id: str, cursor: str | None, limit: int, policy: Policy
) -> AudiencePage:
    """Eligible members after ``cursor`` in profileId order (keyset paging on the audience index)."""

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        _require_campaign(tx, campaign_id)
        rows = tx.run(
            policy_query("audience_page"),
            campaignId=campaign_id,
            cursor=cursor or "",
            limit=limit + 1,
            **policy.params(),
        )
        return [row.data() for row in rows]

    rows = graph.read(tx_fn)
    page = [AudienceRecord(profile_id=row["profileId"], did=row["did"]) for row in rows[:limit]]
    has_more = len(rows) > limit
    return AudiencePage(records=page, cursor=page[-1].profile_id if has_more else None, has_more=has_more)
