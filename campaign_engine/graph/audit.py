"""The audit trail of admin mutations: who changed what, when, in which request.

An entry is written by the mutation's own transaction function, never by a second transaction: it
commits with the change or rolls back with it, so a committed admin mutation always has its entry and a
failed one (refused, conflicting, or failing after its first write) has none. The API builds one
``AuditContext`` per call (the token's subject, the procedure path, the request id) and passes it down
to the use case, which calls ``record_audit`` inside its transaction function.

The entry id and time are drawn when the context is built, outside the transaction function, so a
driver retry of that function writes the same entry. The write is a MERGE on the id: a use case that
commits in several transactions (an audience change of many chunks) writes the entry in its first and
updates its ``detail`` in each later one, so every committed chunk is accounted for by the one entry.

Entries carry ``campaignId`` and ``campaignCreatedAt`` as properties, not a relationship: deleting a
campaign retires and reaps its node with every relationship, and its trail must outlive it.
``audit.list`` reads newest first, keyset-paged by ``(at, id)`` stored as one ``orderKey`` string, so
every bound is one range on the index of the leading filter (``cypher/graph/schema.cypher``: none, campaign,
actor) and the answer comes in index order, never sorted.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "ORDER_KEY_PATTERN",
    "AuditContext",
    "AuditEntry",
    "AuditPage",
    "TargetType",
    "list_audit",
    "list_statement",
    "new_entry_id",
    "record_audit",
    "statement_variants",
]

TargetType = Literal[
    "campaign", "dispatch", "profile", "suppression", "grant", "tenant", "apiKey", "webhookEndpoint"
]


def new_entry_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class AuditContext:
    """Who is making one admin call, and the entry that call will write."""

    actor: str  # the bearer token's subject (a profileId), or "cli:<user>" for the command line
    procedure: str  # e.g. "campaigns.update"; "cli.profiles.import" for the command line
    request_id: str
    at: str  # the one stored timestamp format (domain/types.py), drawn outside the transaction
    tenant_id: str  # the tenant the call acts in: audit.list shows an entry to that tenant only
    entry_id: str = field(default_factory=new_entry_id)
    via: str | None = None  # the credential when it is not the person: "apikey:<id>" (actor: its minter)

    @classmethod
    def begin(
        cls,
        *,
        actor: str,
        procedure: str,
        request_id: str,
        now: datetime,
        tenant_id: str,
        via: str | None = None,
    ) -> AuditContext:
        return cls(
            actor=actor, procedure=procedure, request_id=request_id, at=format_ts(now), tenant_id=tenant_id,
            via=via,
        )  # fmt: skip

    def next_entry(self, now: datetime) -> AuditContext:
        """The context for another entry of the same call (one per transaction of a batched import)."""
        return replace(self, at=format_ts(now), entry_id=new_entry_id())

    def in_trail_of(self, tenant_id: str) -> AuditContext:
        """The same call's entry in another tenant's trail: a change made to a tenant from outside it
        (a platform admin's ``tenants.update``) is shown to that tenant too."""
        return replace(self, tenant_id=tenant_id, entry_id=new_entry_id())


def record_audit(
    tx: Tx,
    audit: AuditContext | None,
    *,
    target_type: TargetType,
    target_id: str,
    campaign: dict[str, Any] | None = None,
    revision_before: int | None = None,
    revision_after: int | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Write (or, for a later transaction of the same call, update) the entry inside ``tx``.

    ``campaign`` is the campaign node the mutation touched (as ``lock_campaign`` returns it): the entry
    keeps its id and incarnation. ``audit`` is None only for callers that are not admin calls (tests
    and benchmarks seeding data), which record nothing."""
    if audit is None:
        return
    tx.run(
        statement("audit_record"),
        id=audit.entry_id,
        at=audit.at,
        actor=audit.actor,
        via=audit.via,
        tenantId=audit.tenant_id,
        procedure=audit.procedure,
        requestId=audit.request_id,
        targetType=target_type,
        targetId=target_id,
        campaignId=None if campaign is None else campaign.get("id"),
        campaignCreatedAt=None if campaign is None else campaign.get("createdAt"),
        revisionBefore=revision_before,
        revisionAfter=revision_after,
        detail=None if detail is None else json.dumps(detail, separators=(",", ":"), sort_keys=True),
    ).consume()


class AuditEntry(CamelModel):
    id: str
    at: str
    actor: str
    via: str | None = None
    tenant_id: str | None = None
    procedure: str
    request_id: str
    target_type: TargetType
    target_id: str
    campaign_id: str | None = None
    campaign_created_at: str | None = None
    revision_before: int | None = None
    revision_after: int | None = None
    detail: dict[str, Any] | None = None


class AuditPage(CamelModel):
    records: list[AuditEntry]
    cursor: str | None
    has_more: bool


# An entry's place in audit.list, and the cursor: its fixed-width time, "|", its id (see audit_list.cypher).
# Spelled in the dialect pydantic, JSON Schema and Python read alike (domain/patterns.py), for the input.
ORDER_KEY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z\|[0-9a-f]{32}$"
_ORDER_KEY = re.compile(ORDER_KEY_PATTERN)


def _checked_cursor(cursor: str) -> str:
    """The orderKey of the last entry of the previous page; BAD_REQUEST for anything we did not hand out."""
    if not _ORDER_KEY.fullmatch(cursor):
        raise BadRequest("cursor is not one audit.list returned", issues=[_issue("cursor")])
    try:
        parse_ts(cursor.split("|")[0])
    except ValueError:
        raise BadRequest("cursor is not one audit.list returned", issues=[_issue("cursor")]) from None
    return cursor


def _issue(path: str) -> dict[str, Any]:
    return {"path": [path], "message": "invalid"}


# The index that leads each seek, its filter and its order, so it runs on its own index (campaign,
# actor, or time alone) and reads in index order, newest first. The index is hinted: left to itself the
# planner may pick audit_entry_order for a campaign's entries when the counts favour it, and then sort.
_LIST_BY: dict[Literal["campaign", "actor", "all"], tuple[str, str, str]] = {
    "campaign": (
        "(campaignId, orderKey)",
        "a.campaignId = $campaignId",
        "a.campaignId DESC, a.orderKey DESC",
    ),
    "actor": ("(actor, orderKey)", "a.actor = $actor", "a.actor DESC, a.orderKey DESC"),
    "all": ("(tenantId, orderKey)", "a.tenantId = $tenantId", "a.tenantId DESC, a.orderKey DESC"),
}


def list_statement(lead: Literal["campaign", "actor", "all"]) -> str:
    """The ``audit.list`` query led by one filter's index."""
    index, key, order = _LIST_BY[lead]
    return statement("audit_list", INDEX=index, KEY=key, ORDER=order)


def statement_variants(samples: Sequence[object]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    for lead in _LIST_BY:
        yield "audit_list", list_statement(lead)


# Bounds that every orderKey lies between: digits sort after "" and before "~".
_LOWEST, _HIGHEST = "", "~"


def list_audit(
    graph: Graph,
    *,
    tenant_id: str,
    campaign_id: str | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> AuditPage:
    """The tenant's entries newest first, ``since`` inclusive and ``until`` exclusive, after ``cursor``;
    ``campaign_id`` is a storage id (``domain/tenancy.py``)."""
    if since is not None and until is not None and since >= until:
        raise BadRequest("'from' must be earlier than 'to'", issues=[_issue("from"), _issue("to")])
    lead: Literal["campaign", "actor", "all"] = (
        "campaign" if campaign_id is not None else "actor" if actor is not None else "all"
    )
    text = list_statement(lead)
    params: dict[str, Any] = {
        "tenantId": tenant_id,
        "campaignId": campaign_id,
        "actor": actor,
        "since": _LOWEST if since is None else format_ts(since),
        "until": _HIGHEST if until is None else format_ts(until),
        "after": _HIGHEST if cursor is None else _checked_cursor(cursor),
        "limit": limit + 1,
    }

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        return [dict(row["entry"]) for row in tx.run(text, **params)]

    rows = graph.read(tx_fn)
    page = [_entry(row) for row in rows[:limit]]
    has_more = len(rows) > limit
    return AuditPage(
        records=page, cursor=f"{page[-1].at}|{page[-1].id}" if page and has_more else None, has_more=has_more
    )


def _entry(row: dict[str, Any]) -> AuditEntry:
    """An entry as its tenant reads it: campaigns by the ref the tenant knows them by."""
    detail = row.pop("detail", None)
    row.pop("orderKey", None)
    if row.get("campaignId") is not None:
        row["campaignId"] = campaign_ref(row["campaignId"])
    if row.get("targetType") == "campaign":
        row["targetId"] = campaign_ref(row["targetId"])
    return AuditEntry.model_validate({**row, "detail": None if detail is None else json.loads(detail)})
