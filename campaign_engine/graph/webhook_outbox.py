"""Event webhooks' outbox: events written beside the change they report, for the relay.

``record_events(tx, graph, tenant_id, events)`` runs inside the use case's own transaction (the notify
record, the email record, a campaign update, ...), so an event exists exactly when its change committed,
and writes one ``:WebhookBatch`` per subscribed endpoint holding the call's events for it, in one
UNWIND: a page of a thousand recipients is one node and two index entries per endpoint, not a thousand of
each (recording must not slow a send). Base layer, so ``campaigns``, ``delivery``,
``feedback`` and ``unsubscribe`` all record through this one function.

Recording must not slow a send, so which endpoints want which types is a per-process view of the
enabled endpoints (one small read, kept ``ttl_seconds``, 5 s; ``invalidate`` after an endpoint edit in
this process), and a tenant with no subscriber costs a dictionary lookup: ``wants`` lets a caller skip
even building its events.

Which endpoints got events is remembered for the relay's kick (``delivery/relay_kick.py``): inside a
``touched_scope`` (a request, a worker's batch) in that scope, whose owner knows when its transactions
have committed; anywhere else (a background writer's thread) in the process's own set.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from campaign_engine.domain.webhook_events import Event, EventType, matches
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "Subscribers",
    "expire_delivered",
    "record_dispatch_events",
    "record_events",
    "subscribers_for",
    "touched_scope",
]

DEFAULT_TTL_SECONDS = 5.0

_scope: ContextVar[set[str] | None] = ContextVar("webhook_touched_scope", default=None)


@contextmanager
def touched_scope() -> Iterator[set[str]]:
    """Collect the endpoints this context queues events for: a thread the work is handed to with the
    context (``run_in_threadpool``, ``asyncio.to_thread``) adds to the same set. Its owner kicks them once
    the work returned, so after their commit."""
    touched: set[str] = set()
    token = _scope.set(touched)
    try:
        yield touched
    finally:
        _scope.reset(token)


class Subscribers:
    """Enabled endpoints by tenant, each with its subscribed types; reloaded once ``ttl_seconds`` old.

    Asked from inside a transaction (every change that records events is one), the reload runs in that
    transaction (``tx``): a read on a second session inside a write's transaction function would commit
    on its own, and one cut off by a lost connection would fail the write that the write's own
    idempotent re-run (``Graph.write_idempotent``) was there to save."""

    def __init__(
        self,
        graph: Graph,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._graph = graph
        self._ttl = ttl_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._loaded_at: float | None = None
        self._by_tenant: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._touched: set[str] = set()

    def touch(self, endpoint_ids: Sequence[str]) -> None:
        """Endpoints this process just queued events for (a hint: the transaction may yet roll back):
        into the current ``touched_scope``, else the process's set for ``take_touched``."""
        scope = _scope.get()
        with self._lock:
            (self._touched if scope is None else scope).update(endpoint_ids)

    def touched(self) -> bool:
        """Some endpoint was touched since the last ``take_touched`` (a read without I/O)."""
        return bool(self._touched)

    def take_touched(self) -> list[str]:
        """The endpoints touched since the last call, so a process can start their relay at once."""
        with self._lock:
            touched, self._touched = self._touched, set()
        return sorted(touched)

    def invalidate(self) -> None:
        with self._lock:
            self._loaded_at = None

    def endpoints(self, tenant_id: str, event_type: str, tx: Tx | None = None) -> list[str]:
        """Ids of the tenant's enabled endpoints subscribed to ``event_type``."""
        return [eid for eid, types in self._current(tx).get(tenant_id, ()) if matches(types, event_type)]

    def wants(self, tenant_id: str | None, event_type: str, tx: Tx | None = None) -> bool:
        return tenant_id is not None and bool(self.endpoints(tenant_id, event_type, tx))

    def any(self, event_type: str, tx: Tx | None = None) -> bool:
        """Some tenant's endpoint takes ``event_type`` (a statement can skip naming what nobody takes)."""
        return any(matches(types, event_type) for eps in self._current(tx).values() for _, types in eps)

    def _current(self, tx: Tx | None) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
        now = self._monotonic()
        with self._lock:
            if self._loaded_at is not None and now - self._loaded_at < self._ttl:
                return self._by_tenant
        # Outside the lock: a slow read must not hold every caller. In the caller's transaction if any.
        rows = _load(tx) if tx is not None else self._graph.read(_load)
        by_tenant: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for row in rows:
            by_tenant.setdefault(str(row["tenantId"]), []).append(
                (str(row["id"]), tuple(row["events"] or ()))
            )
        with self._lock:
            self._by_tenant, self._loaded_at = by_tenant, now
        return by_tenant


def _load(tx: Tx) -> list[dict[str, Any]]:
    return [record.data() for record in tx.run(statement("webhook_subscribers"))]


_registry: weakref.WeakKeyDictionary[Graph, Subscribers] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def subscribers_for(graph: Graph) -> Subscribers:
    """This process's view of ``graph``'s endpoints (one per graph, shared by the API and the worker)."""
    with _registry_lock:
        view = _registry.get(graph)
        if view is None:
            view = _registry[graph] = Subscribers(graph)
        return view


def record_events(tx: Tx, graph: Graph, tenant_id: str | None, events: Sequence[Event]) -> int:
    """Queue ``events`` for every endpoint of ``tenant_id`` that subscribes to them, inside ``tx``, as
    one ``:WebhookBatch`` per endpoint; returns how many events were queued in all (0, and no
    statement, when nobody subscribes)."""
    if tenant_id is None or not events:
        return 0
    view = subscribers_for(graph)
    batches: dict[str, dict[str, list[Any]]] = {}
    for event in sorted(events, key=lambda e: e.order_key):
        endpoints = view.endpoints(tenant_id, event.type, tx)
        if not endpoints:
            continue
        body = event.body()
        for endpoint_id in endpoints:
            batch = batches.setdefault(endpoint_id, {name: [] for name in _BATCH_LISTS})
            batch["eventIds"].append(event.id)
            batch["types"].append(event.type)
            batch["bodies"].append(body)
            batch["orderKeys"].append(event.order_key)
            batch["recipientKeys"].append(event.recipient_key)
            batch["sent"].append(False)
    if not batches:
        return 0
    rows = [
        {"endpointId": endpoint_id, "orderKey": lists["orderKeys"][-1], **lists}
        for endpoint_id, lists in batches.items()
    ]
    tx.run(statement("webhook_outbox_record"), batches=rows, tenantId=tenant_id).consume()
    view.touch(list(batches))
    return sum(len(lists["eventIds"]) for lists in batches.values())


_BATCH_LISTS = ("eventIds", "types", "bodies", "orderKeys", "recipientKeys", "sent")


_DISPATCH_CAMPAIGNS = "webhook_dispatch_campaigns"  # cypher/graph/webhook_dispatch_campaigns.cypher


def record_dispatch_events(
    tx: Tx, graph: Graph | None, event_type: EventType, dispatch_ids: Sequence[str], *, now: str, **data: Any
) -> int:
    """``event_type`` (a ``dispatch.*``) for each dispatch, inside the transaction that changed its status.
    Reads the dispatches' campaigns only when some endpoint takes the type: a send pays nothing otherwise."""
    if graph is None or not dispatch_ids or not subscribers_for(graph).any(event_type, tx):
        return 0
    written = 0
    for row in tx.run(statement(_DISPATCH_CAMPAIGNS), dispatchIds=list(dispatch_ids)):
        ids = {"campaignId": row["campaignId"], "dispatchId": row["dispatchId"], "channel": row["channel"]}
        event = Event.of(event_type, now, **ids, **data)
        written += record_events(tx, graph, row["tenantId"], [event])
    return written


_EXPIRE_BATCH = 5_000


def expire_delivered(graph: Graph, *, before: str) -> int:
    """Delete delivered events and attempts older than ``before`` (retention), in bounded transactions
    until none is left; returns how many events and attempts went. A batch with an event still queued
    stays whatever its age."""
    deleted = 0
    while True:
        row = graph.write(
            lambda tx: tx.run(statement("webhook_expire"), before=before, limit=_EXPIRE_BATCH).single()
        )
        if row is None:  # no endpoint at all
            return deleted
        deleted += int(row["events"] or 0) + int(row["attempts"] or 0)
        if max(int(row["most"] or 0), int(row["mostAttempts"] or 0)) < _EXPIRE_BATCH:
            return deleted
