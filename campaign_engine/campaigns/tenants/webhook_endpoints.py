"""Event-webhook endpoints: a tenant's subscriptions to its own events, managed by its admins.

An endpoint is a URL (checked against the egress rules by the API before it gets here), the event types
it takes (``*`` for all) and its own ``whsec_`` secret, answered once at creation and on rotation and
stored only sealed under ``CAMPAIGN_SECRETS_KEY`` (``domain/webhook_keys.py``, the one rule for
receiver secrets: a rotation keeps the old secret signing beside the new for the overlap). Events reach
it through the outbox (``graph/webhook_outbox.py``) and the relay (``delivery/webhook_relay.py``).
Another tenant's endpoint is NOT_FOUND, never FORBIDDEN: its existence is not disclosed.
"""

from __future__ import annotations

import secrets as random
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_keys import KeyRing, RingUnreadable, SecretBox, generate_secret
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import subscribers_for

__all__ = [
    "DeliveryAttempt",
    "DeliveryPage",
    "EndpointCreated",
    "EndpointList",
    "EndpointPublic",
    "create_endpoint",
    "delete_endpoint",
    "endpoint_tenant",
    "list_attempts",
    "list_endpoints",
    "replay_endpoint",
    "rotate_endpoint_secret",
    "update_endpoint",
]

_NO_KEY = "CAMPAIGN_SECRETS_KEY is not set: an event-webhook endpoint needs it to store its secret"
_REPLAY_BATCH = 500  # outbox batches per transaction (each up to a page of events)


class EndpointPublic(CamelModel):
    id: str
    url: str
    events: list[str]
    description: str | None = None
    enabled: bool
    disabled_reason: str | None = None
    created_at: str
    updated_at: str
    failures: int = Field(0, description="failed attempts in a row (0 when the last one succeeded)")
    failing_since: str | None = None
    retry_at: Annotated[str | None, Field(description="the next attempt while failing")] = None
    last_status: int | None = None
    last_attempt_at: str | None = None
    pending: int = Field(0, description="events waiting for this endpoint")


class EndpointCreated(BaseModel):
    id: str
    secret: str = Field(description="the whsec_ secret that signs its events; shown only here")


class EndpointList(BaseModel):
    records: list[EndpointPublic]


class DeliveryAttempt(CamelModel):
    event_id: str
    type: str
    occurred_at: str | None = Field(
        None, description="when the event occurred: replay from it to send it again (null: an older attempt)"
    )
    at: str
    status_code: Annotated[int | None, Field(description="null: no answer")] = None
    latency_ms: int
    error: str | None = Field(None, description="why there was no answer (a transport failure class)")
    next_retry_at: str | None = None


class DeliveryPage(CamelModel):
    records: list[DeliveryAttempt]
    cursor: str | None = Field(description="pass back for the next (older) page; null at the end")


_CREATE = "webhook_endpoint_create"  # cypher/tenants/webhook_endpoint_create.cypher
_GET = "MATCH (e:WebhookEndpoint {id: $id}) RETURN e {.*} AS e"
_LOCK = "MATCH (e:WebhookEndpoint {id: $id}) SET e.lock = coalesce(e.lock, 0) + 1 RETURN e {.*} AS e"
_SET = "MATCH (e:WebhookEndpoint {id: $id}) SET e += $props RETURN e {.*} AS e"
_DELETE = "webhook_endpoint_delete"  # cypher/tenants/webhook_endpoint_delete.cypher
# Bounded per transaction: an endpoint deleted after a long outage may leave many queued batches.
_DELETE_MESSAGES = (
    "webhook_endpoint_delete_messages"  # cypher/tenants/webhook_endpoint_delete_messages.cypher
)
_DELETE_ATTEMPTS = (
    "webhook_endpoint_delete_attempts"  # cypher/tenants/webhook_endpoint_delete_attempts.cypher
)


def _public(node: dict[str, Any], pending: int = 0) -> EndpointPublic:
    fields = {k: v for k, v in node.items() if k not in ("keys", "tenantId", "lock", "leaseUntil")}
    return EndpointPublic.model_validate(
        {**fields, "failures": node.get("failures") or 0, "pending": pending}
    )


def _box(box: SecretBox | None) -> SecretBox:
    if box is None:
        raise BadRequest(_NO_KEY)
    return box


def create_endpoint(
    graph: Graph,
    box: SecretBox | None,
    *,
    tenant_id: str,
    url: str,
    events: list[str],
    description: str | None,
    now: datetime,
    audit: AuditContext | None,
) -> EndpointCreated:
    sealer = _box(box)
    endpoint_id, secret = "wep_" + random.token_hex(12), generate_secret()

    def tx_fn(tx: Tx) -> None:
        tx.run(
            statement(_CREATE), id=endpoint_id, tenantId=tenant_id, url=url, events=events,
            description=description, keys=sealer.seal(KeyRing(secret)), now=format_ts(now),
        ).consume()  # fmt: skip
        detail = {"events": events}
        record_audit(tx, audit, target_type="webhookEndpoint", target_id=endpoint_id, detail=detail)

    graph.write(tx_fn)
    subscribers_for(graph).invalidate()
    return EndpointCreated(id=endpoint_id, secret=secret)


def endpoint_tenant(graph: Graph, endpoint_id: str) -> str | None:
    row = graph.read(lambda tx: tx.run(_GET, id=endpoint_id).single())
    return None if row is None else str(row["e"]["tenantId"])


def list_endpoints(graph: Graph, *, tenant_id: str) -> EndpointList:
    rows = graph.read(
        lambda tx: [r.data() for r in tx.run(statement("webhook_endpoint_list"), tenantId=tenant_id)]
    )
    return EndpointList(records=[_public(dict(r["endpoint"]), int(r["pending"])) for r in rows])


def update_endpoint(
    graph: Graph,
    *,
    endpoint_id: str,
    changes: dict[str, Any],
    now: datetime,
    audit: AuditContext,
) -> EndpointPublic:
    """Set the named fields (url, events, description, enabled). Enabling a disabled endpoint clears its
    failure state, so its queued events go out again from the oldest."""
    props = dict(changes)
    if props.get("enabled") is True:
        props.update(disabledReason=None, failures=0, failingSince=None, retryAt=None)
    props["updatedAt"] = format_ts(now)

    def tx_fn(tx: Tx) -> dict[str, Any]:
        if tx.run(_LOCK, id=endpoint_id).single() is None:
            raise NotFound(f"webhook endpoint '{endpoint_id}' not found")
        row = tx.run(_SET, id=endpoint_id, props=props).single(strict=True)
        detail = {k: v for k, v in changes.items() if k != "url"} | (
            {"url": True} if "url" in changes else {}
        )
        record_audit(tx, audit, target_type="webhookEndpoint", target_id=endpoint_id, detail=detail)
        return dict(row["e"])

    node = graph.write(tx_fn)
    subscribers = subscribers_for(graph)
    subscribers.invalidate()
    if props.get("enabled") is True:  # resumed: its queue goes out at once (the kick), not at the sweep
        subscribers.touch([endpoint_id])
    return _public(node)


def delete_endpoint(graph: Graph, *, endpoint_id: str, audit: AuditContext) -> None:
    def tx_fn(tx: Tx) -> None:
        if tx.run(_LOCK, id=endpoint_id).single() is None:
            raise NotFound(f"webhook endpoint '{endpoint_id}' not found")
        tx.run(statement(_DELETE), id=endpoint_id).consume()
        record_audit(
            tx, audit, target_type="webhookEndpoint", target_id=endpoint_id, detail={"deleted": True}
        )

    graph.write(tx_fn)
    subscribers_for(graph).invalidate()
    for text in (
        statement(_DELETE_MESSAGES),
        statement(_DELETE_ATTEMPTS),
    ):  # its queue and history, in bounded steps
        while graph.write(_delete_some, statement=text, endpoint_id=endpoint_id):
            pass


def rotate_endpoint_secret(
    graph: Graph,
    box: SecretBox | None,
    *,
    endpoint_id: str,
    overlap_seconds: int,
    now: datetime,
    audit: AuditContext,
) -> str:
    """A new secret, returned once; the one it replaces keeps signing beside it for ``overlap_seconds``."""
    sealer = _box(box)
    new = generate_secret()

    def tx_fn(tx: Tx) -> None:
        row = tx.run(_LOCK, id=endpoint_id).single()  # locked first: two rotations keep one old secret
        if row is None:
            raise NotFound(f"webhook endpoint '{endpoint_id}' not found")
        try:
            ring = sealer.open(row["e"]["keys"]).rotated(
                new, now=int(now.timestamp()), overlap_seconds=overlap_seconds
            )
        except RingUnreadable:
            ring = KeyRing(new)  # sealed under a key now gone: nothing left that could sign
        tx.run(_SET, id=endpoint_id, props={"keys": sealer.seal(ring), "updatedAt": format_ts(now)}).consume()
        detail = {"overlapSeconds": overlap_seconds}
        record_audit(tx, audit, target_type="webhookEndpoint", target_id=endpoint_id, detail=detail)

    graph.write(tx_fn)
    return new


def list_attempts(graph: Graph, *, endpoint_id: str, cursor: str | None, limit: int) -> DeliveryPage:
    """Attempts newest first: rounds newest first, each round's POSTs last to first. The cursor is
    ``<round orderKey>#<index>``: the next page starts before that attempt. Rounds are read lazily, so a
    page costs the rounds it shows. ``limit + 2`` rounds hold ``limit + 1`` attempts, whatever is left of
    the cursor's own round."""
    key, _, index = (cursor or "\uffff").partition("#")
    start = int(index) if index.isdigit() else 0  # a cursor of the release before rounds: the key's older

    def read(tx: Tx) -> list[tuple[str, int, dict[str, Any]]]:
        found: list[tuple[str, int, dict[str, Any]]] = []
        rounds = tx.run(
            statement("webhook_attempt_list"), endpointId=endpoint_id, before=key, limit=limit + 2
        )
        for r in rounds:
            indexes = range(len(r["eventIds"]) - 1, -1, -1)
            for i in (j for j in indexes if r["orderKey"] != key or j < start):
                status = int(r["statusCodes"][i]) or None
                delivered = status is not None and 200 <= status < 300
                occurred = r["occurredAts"][i] if i < len(r["occurredAts"]) else None
                found.append((r["orderKey"], i, {
                    "eventId": r["eventIds"][i], "type": r["types"][i], "occurredAt": occurred, "at": r["at"],
                    "statusCode": status,
                    "latencyMs": r["latencyMs"], "error": r["errors"][i] or None,
                    "nextRetryAt": None if delivered else r["retryAt"],
                }))  # fmt: skip
            if len(found) > limit:
                break
        return found

    rows = graph.read(read)
    more = len(rows) > limit
    last_key, last_index, _ = rows[limit - 1] if more else ("", 0, None)
    return DeliveryPage(
        records=[DeliveryAttempt.model_validate(r) for _, _, r in rows[:limit]],
        cursor=f"{last_key}#{last_index}" if more else None,
    )


def replay_endpoint(graph: Graph, *, endpoint_id: str, since: datetime, audit: AuditContext) -> int:
    """Queue again every event recorded for the endpoint since ``since``; returns how many. The endpoint
    counts as touched, so the process kicks its relay as it does for new events."""
    stamp = format_ts(since)

    def audit_tx(tx: Tx) -> None:
        if tx.run(_LOCK, id=endpoint_id).single() is None:
            raise NotFound(f"webhook endpoint '{endpoint_id}' not found")
        detail = {"since": stamp}
        record_audit(tx, audit, target_type="webhookEndpoint", target_id=endpoint_id, detail=detail)

    graph.write(audit_tx)
    total, after = 0, ""
    while True:
        batches, events, last = graph.write(_replay_step, endpoint_id=endpoint_id, since=stamp, after=after)
        total += events
        if batches < _REPLAY_BATCH:
            break
        after = last
    if total:  # the relay starts at once (the API kicks it after the request), not at the next sweep
        subscribers_for(graph).touch([endpoint_id])
    return total


def _replay_step(tx: Tx, *, endpoint_id: str, since: str, after: str) -> tuple[int, int, str]:
    row = tx.run(
        statement("webhook_replay"), endpointId=endpoint_id, since=since, after=after, limit=_REPLAY_BATCH
    ).single(strict=True)
    return int(row["n"]), int(row["events"] or 0), str(row["last"] or "")


def _delete_some(tx: Tx, *, statement: str, endpoint_id: str) -> int:
    return int(tx.run(statement, id=endpoint_id).single(strict=True)["n"])
