"""Campaign definitions and lifecycle: create, read, list, patch, status changes (delete: ``deletion.py``).

Every write that changes a campaign takes the campaign lock first (``graph.locks.lock_campaign``), so
optimistic checks such as ``expectedUpdatedAt`` compare against a value no other writer can change
before commit. ``revision`` counts every mutation, and ``updatedAt`` moves to a later millisecond on
every write: clients echo it through JavaScript ``Date`` (milliseconds), so ``expectedUpdatedAt`` is
compared as an instant truncated to the millisecond, and two versions never share one.

The definition is stored as JSON on the node, beside flat copies of the fields that queries filter on
(status, window, channels, ...). ``node_properties`` is the one place that derives those copies.

Under a tenant's approval policy a live campaign also carries the revision people see, approved by a
second publisher (``shownDefinition``, ``shownVersion``, ``shownSince``; ``shown_before`` starts it,
``sending/approval_publish.py`` reviews each change): its draft is then what publishers edit.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from neo4j.exceptions import ConstraintError
from pydantic import ValidationError

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.campaign import (
    CLEARABLE_FIELDS,
    CampaignCreate,
    CampaignDefinition,
    CampaignPatch,
    CampaignPublic,
    CampaignStatus,
    allowed_transition,
    campaign_from_node,
)
from campaign_engine.domain.content import STORED
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound, bad_request_from
from campaign_engine.domain.priority import priority_change
from campaign_engine.domain.tenancy import campaign_ref, namespaced_id
from campaign_engine.domain.types import format_ts, next_after, parse_ts, truncated
from campaign_engine.domain.webhook_events import Event, EventType
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.rules.segment_check import check_segment
from campaign_engine.graph.webhook_outbox import record_dispatch_events, record_events, subscribers_for

__all__ = [
    "CampaignPage",
    "audit_change",
    "campaign_from_node",
    "create_campaign",
    "emit_event",
    "get_campaign",
    "list_campaigns",
    "load_definition",
    "locked_campaign",
    "node_properties",
    "set_status",
    "shown_before",
    "update_campaign",
]


class CampaignPage(CamelModel):
    records: list[CampaignPublic]
    cursor: str | None
    has_more: bool


def node_properties(definition: CampaignDefinition) -> dict[str, Any]:
    """The stored JSON plus the flat, queryable copies derived from it."""
    wire = definition.wire()
    return {
        "definition": json.dumps(wire, separators=(",", ":"), sort_keys=True),
        "name": definition.name,
        "channels": list(definition.channels),
        "startsAt": wire.get("startsAt"),
        "endsAt": wire.get("endsAt"),
        "excludeMinors": definition.exclude_minors,
        "discoverable": definition.discoverable,
        "hasInAppMessage": definition.has_in_app_message(),
        "messagePriority": definition.message.priority if definition.message else 0,
        # The live segment campaigns getMyCampaigns evaluates for its callers (segment_reach.py).
        "hasSegment": definition.segment is not None,
        # The A/B variants' ids and weights, what assignment hashes over, for the statements
        # that stamp a recipient's variant without the whole definition (recordEvent); null removes it.
        "abVariants": json.dumps(
            [{"id": v.id, "weight": v.weight} for v in definition.variants], separators=(",", ":")
        )
        if definition.variants
        else None,
        # Read by the walks to choose the routed statements; null (exclude) removes it.
        "minors": "guardians" if definition.minors == "guardians" else None,
        # The worker lane and the pacing rules a critical send skips; null (normal) removes it.
        "priority": None if definition.priority == "normal" else definition.priority,
    }


def shown_before(node: dict[str, Any], *, going_live: bool, now: datetime) -> dict[str, Any]:
    """Properties a write under an approval policy adds so that nothing unapproved shows before its
    review: going live shows nothing yet; a campaign live before the policy keeps what it showed so
    far (members added in this very transaction wait for the review)."""
    if node.get("shownVersion") is not None:
        return {}
    if going_live:
        return {"shownVersion": ""}
    if node.get("status") != "live":
        return {}
    return {
        "shownDefinition": node["definition"],
        "shownVersion": node["updatedAt"],
        "shownSince": format_ts(now - _MILLISECOND),
    }


def load_definition(node: dict[str, Any]) -> CampaignDefinition:
    return CampaignDefinition.model_validate(json.loads(node["definition"]), context=STORED)


# The storage id (domain/tenancy.py): the ref itself while no other tenant's campaign holds or held it,
# else the namespaced form. The (tenantId, ref) constraint refuses a second campaign of the same ref in
# one tenant; a race with another tenant for the plain id fails on campaign_id and is retried.
_CREATE = "campaign_create"  # cypher/campaigns/campaign_create.cypher
_CREATE_ATTEMPTS = 3


def create_campaign(
    graph: Graph,
    *,
    data: CampaignCreate,
    tenant_id: str,
    now: datetime,
    audit: AuditContext | None = None,
    adult_age: int | None = None,
    editors: list[str] | None = None,
) -> CampaignPublic:
    """A draft in ``tenant_id``; CONFLICT only when that tenant already has the id. ``adult_age``
    (CAMPAIGN_ADULT_AGE, as the API passes it) also checks a segment's age conditions against the
    campaign's age policy. ``editors``: a copy's source's editors since its last approved send, kept in
    the entry so two-person approval counts them as the copy's (``sending/approval_people.py``)."""
    definition = CampaignDefinition.model_validate(data.model_dump(by_alias=True, exclude={"id"}))
    props = node_properties(definition)
    params: dict[str, Any] = {
        "ref": data.id,
        "namespaced": namespaced_id(tenant_id, data.id),
        "tenantId": tenant_id,
    }

    def tx_fn(tx: Tx) -> dict[str, Any]:
        if definition.segment is not None:
            check_segment(
                tx, definition.segment, tenant_id=tenant_id, own_ref=data.id,
                excludes_minors=definition.exclude_minors, adult_age=adult_age,
            )  # fmt: skip
        record = tx.run(statement(_CREATE), now=format_ts(now), props=props, **params).single()
        if record is None:
            raise Conflict(f"campaign '{data.id}' already exists")
        node = dict(record["campaign"])
        detail = ({} if editors is None else {"editors": editors}) | priority_change(None, node)
        audit_change(tx, audit, node, before=None, after=node, detail=detail or None)
        emit_event(tx, graph, "campaign.created", node, now)
        return node

    for attempt in range(_CREATE_ATTEMPTS):
        try:
            return campaign_from_node(graph.write(tx_fn))
        except ConstraintError as exc:  # a concurrent create took the ref here, or the plain id elsewhere
            if attempt == _CREATE_ATTEMPTS - 1:
                raise Conflict(f"campaign '{data.id}' already exists") from exc
    raise AssertionError("unreachable")


def _read_node(tx: Tx, campaign_id: str) -> dict[str, Any] | None:
    record = tx.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS campaign", id=campaign_id).single()
    return None if record is None else dict(record["campaign"])


def get_campaign(graph: Graph, campaign_id: str) -> CampaignPublic:
    node = graph.read(_read_node, campaign_id)
    if node is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    return campaign_from_node(node)


# One tenant's campaigns by ref, seeking the campaign_tenant_ref constraint's index.
_LIST = "campaign_list"  # cypher/campaigns/campaign_list.cypher


def list_campaigns(
    graph: Graph, *, tenant_id: str, status: CampaignStatus | None, cursor: str | None, limit: int
) -> CampaignPage:
    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        rows = tx.run(
            statement(_LIST), tenantId=tenant_id, cursor=cursor or "", status=status, limit=limit + 1
        )
        return [dict(row["campaign"]) for row in rows]

    nodes = graph.read(tx_fn)
    page = [campaign_from_node(node) for node in nodes[:limit]]
    has_more = len(nodes) > limit
    cursor_out = campaign_ref(page[-1].id) if page and has_more else None
    return CampaignPage.model_construct(records=page, cursor=cursor_out, has_more=has_more)  # read STORED


_SAVE = "campaign_save"  # cypher/campaigns/campaign_save.cypher


def audit_change(
    tx: Tx,
    audit: AuditContext | None,
    node: dict[str, Any],
    *,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    detail: dict[str, Any] | None = None,
) -> None:
    """The entry of a campaign write: the node before it (None: created) and after it (None: deleted)."""
    record_audit(
        tx,
        audit,
        target_type="campaign",
        target_id=node["id"],
        campaign=node,
        revision_before=None if before is None else before["revision"],
        revision_after=None if after is None else after["revision"],
        detail=detail,
    )


_SENDING = "MATCH (d:Dispatch {status: 'sending'})-[:DISPATCH_OF]->(:Campaign {id: $id}) RETURN d.id AS id"


def emit_event(
    tx: Tx, graph: Graph, event_type: EventType, node: dict[str, Any], now: datetime, **data: Any
) -> None:
    """A ``campaign.*`` event for the event webhooks, in the transaction of the change (ids only)."""
    tenant = node.get("tenantId")
    if subscribers_for(graph).wants(tenant, event_type, tx):
        campaign = node.get("ref") or node["id"]
        record_events(tx, graph, tenant, [Event.of(event_type, format_ts(now), campaignId=campaign, **data)])


def locked_campaign(tx: Tx, campaign_id: str) -> dict[str, Any]:
    node = lock_campaign(tx, campaign_id)
    if node is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    return node


_MILLISECOND = timedelta(milliseconds=1)


def _is_current(expected: datetime, stored: str) -> bool:
    return truncated(expected, _MILLISECOND) == truncated(parse_ts(stored), _MILLISECOND)


def _save(tx: Tx, node: dict[str, Any], props: dict[str, Any], now: datetime) -> dict[str, Any]:
    record = tx.run(
        statement(_SAVE),
        id=node["id"],
        props=props,
        updatedAt=next_after(now, node["updatedAt"], resolution=_MILLISECOND),
    ).single()
    assert record is not None
    return dict(record["campaign"])


def _patched(current: CampaignDefinition, changes: dict[str, Any]) -> CampaignDefinition:
    merged = current.wire()
    for key, value in changes.items():
        if value is None:
            if key not in CLEARABLE_FIELDS:
                raise BadRequest(
                    f"'{key}' cannot be cleared", issues=[{"path": [key], "message": "cannot be null"}]
                )
            merged.pop(key, None)
        else:
            merged[key] = value
    try:
        return CampaignDefinition.model_validate(merged)
    except ValidationError as exc:
        raise bad_request_from(exc, "the patched campaign is not valid") from exc


def update_campaign(
    graph: Graph,
    *,
    patch: CampaignPatch,
    now: datetime,
    audit: AuditContext | None = None,
    adult_age: int | None = None,
    shown: bool = False,
) -> CampaignPublic:
    """``shown``: the tenant has an approval policy; a live campaign keeps showing its approved
    revision (``shown_before``) until ``sending/approval_publish.py`` reviews the change."""
    changes = patch.changes()

    def tx_fn(tx: Tx) -> dict[str, Any]:
        node = locked_campaign(tx, patch.campaign_id)
        expected = patch.expected_updated_at
        if expected is not None and not _is_current(expected, node["updatedAt"]):
            raise Conflict("the campaign changed since it was read (expectedUpdatedAt is stale)")
        if node["status"] == "archived":
            raise BadRequest("archived campaigns cannot be edited")
        definition = _patched(load_definition(node), changes)
        if definition.segment is not None and {"segment", "excludeMinors"} & changes.keys():
            check_segment(
                tx, definition.segment, tenant_id=node.get("tenantId"), own_ref=node.get("ref") or node["id"],
                excludes_minors=definition.exclude_minors, adult_age=adult_age,
            )  # fmt: skip
        pinned = shown_before(node, going_live=False, now=now) if shown else {}
        saved = _save(tx, node, {**node_properties(definition), **pinned}, now)
        detail = {"fields": sorted(changes)} | priority_change(node, saved)
        audit_change(tx, audit, node, before=node, after=saved, detail=detail)
        emit_event(tx, graph, "campaign.updated", saved, now, fields=sorted(changes))
        return saved

    return campaign_from_node(graph.write(tx_fn))


def set_status(
    graph: Graph,
    *,
    campaign_id: str,
    status: CampaignStatus,
    now: datetime,
    audit: AuditContext | None = None,
    shown: bool = False,
) -> CampaignPublic:
    """``shown``: the tenant has an approval policy; going live shows nothing until
    ``sending/approval_publish.py`` reviews it."""

    def tx_fn(tx: Tx) -> dict[str, Any]:
        node = locked_campaign(tx, campaign_id)
        if not allowed_transition(node["status"], status):
            raise BadRequest(f"cannot change status from {node['status']} to {status}")
        going_live = status == "live" and node["status"] != "live"
        pinned = shown_before(node, going_live=True, now=now) if shown and going_live else {}
        saved = _save(tx, node, {"status": status, **pinned}, now)
        audit_change(tx, audit, node, before=node, after=saved, detail={"from": node["status"], "to": status})
        emit_event(tx, graph, "campaign.status_changed", saved, now, **{"from": node["status"], "to": status})
        if status == "paused":  # its sending dispatches hold at the gate until it is live again
            sending = [str(r["id"]) for r in tx.run(_SENDING, id=campaign_id)]
            record_dispatch_events(tx, graph, "dispatch.paused", sending, now=format_ts(now))
        return saved

    return campaign_from_node(graph.write(tx_fn))
