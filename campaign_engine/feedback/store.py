"""Feedback applied to the graph, once per provider record, and the suppressions admins read and lift.

A suppression is per address and deployment-wide: every tenant sends through the same provider
account, whose sending reputation a bounce or complaint harms for all of them. A spam complaint also
records the person's opt-out, and that names the tenant whose email drew it (its view of the person,
docs/people.md): the person stays reachable by the other tenants at their other addresses. A complaint
no send of ours can be traced to opts out of every tenant.

A suppression remembers the tenants whose sends the feedback that set its reason was about
(``causedBy``, from the provider message ids), so a tenant reads the reason, the provider's detail and
the dates only of suppressions its own sends caused, and of any other only that the address is
suppressed. Feedback that outran the record of its send names no tenant yet (its complaint opts out of
every tenant, the safe side); the suppression keeps its message ids, and the send's tenant reads the
reason once the record lands.

One write transaction per record: the dedup node first (``feedback_record``), then the suppressions,
then the profiles it concerns under their locks (ascending ``profileId``, as every profile writer), so
the order is feedback record -> suppression -> profiles -> their CAMPAIGN_STATE. The email claim locks
profiles and only *reads* suppressions, so the two cannot deadlock. Ids and times are drawn before the
transaction, which the driver may re-run.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.feedback.events import Feedback, SuppressionReason, normalize_address
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.feedback_marks import count_marks, keep_pending
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles

__all__ = [
    "Applied",
    "FeedbackStore",
    "Suppression",
    "SuppressionPage",
    "expire_feedback_records",
    "get_suppression",
    "list_suppressions",
    "remove_suppression",
]

_SUPPRESSING_ACTIONS: dict[str, SuppressionReason] = {
    "hard_bounce": "hard_bounce",
    "complaint": "spam_complaint",
}


@dataclass(frozen=True)
class Applied:
    duplicate: bool  # the record was applied before (a provider retry): nothing changed now
    suppressed: int = 0
    reactivated: int = 0


class FeedbackStore:
    def __init__(
        self, graph: Graph, *, soft_bounce_limit: int, soft_bounce_window: timedelta, clock: Clock
    ) -> None:
        self._graph = graph
        self._limit = soft_bounce_limit
        self._window = soft_bounce_window
        self._clock = clock

    def apply(self, feedback: Feedback) -> Applied:
        """Apply one provider record; a record already applied (same ``key``) changes nothing."""
        now = self._clock()
        params = {
            "now": format_ts(now),
            "windowStart": format_ts(now - self._window),
            "attempt": str(uuid.uuid4()),
        }
        return self._graph.write(self._apply, feedback, params)

    def _apply(self, tx: Tx, feedback: Feedback, params: dict[str, Any]) -> Applied:
        now = params["now"]
        record = tx.run(
            statement("feedback_record"),
            key=feedback.key,
            source=feedback.source,
            now=now,
            attempt=params["attempt"],
        ).single()
        if record is None or not record["fresh"]:
            return Applied(duplicate=True)
        reactivate = sorted({e.normalized for e in feedback.events if e.action == "reactivate"})
        reactivated = 0
        if reactivate:
            reactivated = tx.run(statement("suppression_remove"), addresses=reactivate).single(strict=True)[
                "removed"
            ]
        suppress: dict[str, dict[str, str]] = {}
        soft = sorted({e.normalized: e.detail for e in feedback.events if e.action == "soft_bounce"}.items())
        if soft:
            rows = [{"address": address, "detail": detail} for address, detail in soft]
            for row in tx.run(
                statement("feedback_soft_bounce"),
                rows=rows,
                now=now,
                windowStart=params["windowStart"],
                limit=self._limit,
            ):
                suppress[row["address"]] = {
                    "address": row["address"],
                    "reason": "soft_bounce",
                    "detail": row["detail"],
                }
        for event in feedback.events:
            reason = _SUPPRESSING_ACTIONS.get(
                event.action, event.reason if event.action == "suppress" else None
            )
            if reason is not None:
                suppress[event.normalized] = {
                    "address": event.normalized,
                    "reason": reason,
                    "detail": event.detail,
                }
        suppressed = 0
        tenants = self._tenants(tx, feedback) if suppress else []  # a complaint always suppresses
        if suppress:
            rows = [suppress[address] for address in sorted(suppress)]
            suppressed = tx.run(
                statement("feedback_suppress"),
                rows=rows,
                source=feedback.source,
                now=now,
                tenants=tenants,
                messageIds=list(feedback.message_ids),
            ).single(strict=True)["suppressed"]
        self._touch_profiles(tx, feedback, now, self._graph, tenants)
        return Applied(duplicate=False, suppressed=suppressed, reactivated=reactivated)

    @staticmethod
    def _tenants(tx: Tx, feedback: Feedback) -> list[str]:
        """The tenants whose sends the record is about (by provider message id); none without ids."""
        if not feedback.message_ids:
            return []
        found = tx.run(statement("feedback_tenants"), messageIds=list(feedback.message_ids)).single()
        return [] if found is None else sorted(t for t in found["tenants"] if t is not None)

    @staticmethod
    def _touch_profiles(tx: Tx, feedback: Feedback, now: str, graph: Graph, tenants: list[str]) -> None:
        """Stats marks on the sends (by provider message id) and, for a complaint, the opt-out of the
        profiles with the address, shared or in a tenant's view: of the ``tenants`` whose email drew it
        (their views), or of every tenant when no send of ours is named. After the profile locks, like
        every other profile write."""
        bounced = any(e.action == "hard_bounce" for e in feedback.events)
        complaints = [e for e in feedback.events if e.action == "complaint"]
        if not (bounced and feedback.message_ids) and not complaints:
            return
        # Exact stored values first (index seek); a case variant stored differently is still caught by
        # the message id link, and its sends by the suppression, which compares normalized addresses.
        # A bounce's address too: its profile's lock orders this against the record of the send
        # (graph/feedback_marks.py), which may not have written the message id yet.
        about = [e for e in feedback.events if e.action in ("complaint", "hard_bounce")]
        values = sorted({v for e in about for v in (e.address.strip(), e.normalized)})
        found = tx.run(
            statement("feedback_profiles"), values=values, messageIds=list(feedback.message_ids)
        ).single()
        profile_ids: list[str] = [] if found is None else list(found["profileIds"])
        lock_profiles(tx, profile_ids)
        if feedback.message_ids:
            marked = tx.run(
                statement("feedback_link"),
                messageIds=list(feedback.message_ids),
                bounced=bounced,
                complained=bool(complaints),
                now=now,
            )
            count_marks(tx, graph, list(marked), now=now)
            keep_pending(tx, key=feedback.key, message_ids=feedback.message_ids, bounced=bounced,
                         complained=bool(complaints), now=now)  # fmt: skip
        if complaints and tenants:  # the address stays suppressed for all: the sending reputation is shared
            addresses = sorted({e.normalized for e in complaints})
            tx.run(statement("feedback_opt_out_tenant"), profileIds=sorted(profile_ids), tenants=tenants,
                   addresses=addresses, messageIds=list(feedback.message_ids), now=now).consume()  # fmt: skip
        elif complaints:
            tx.run(statement("feedback_opt_out"), profileIds=sorted(profile_ids), now=now).consume()


# --- admin reads and removal ------------------------------------------------------------------------


class Suppression(CamelModel):
    """One suppressed address. ``detailed``: the reason, source, detail and dates are shown, to a
    platform credential or to the tenant whose own sends caused the suppression; any other tenant
    holding the address learns only that it is suppressed (the other fields null)."""

    address: str
    detailed: bool = True
    reason: SuppressionReason | None = None
    source: str | None = None
    detail: str | None = None
    suppressed_at: str | None = None
    last_feedback_at: str | None = None
    feedback_count: int | None = None


class SuppressionPage(CamelModel):
    records: list[Suppression]
    cursor: str | None
    has_more: bool


def list_suppressions(
    graph: Graph,
    *,
    reason: SuppressionReason | None,
    cursor: str | None,
    limit: int,
    tenant_id: str | None = None,
) -> SuppressionPage:
    """Suppressions are per address (deliverability is the sender's); ``tenant_id`` confines the page to
    the addresses of that tenant's members, detailed only where its own sends caused them (its reason
    filter matches only those)."""

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "reason": reason,
            "cursor": cursor or "",
            "limit": limit + 1,
            "tenant": tenant_id,
        }
        rows = tx.run(statement("suppression_list"), **params)
        return [dict(row["suppression"]) for row in rows]

    nodes = graph.read(tx_fn)
    page = [Suppression.model_validate(node) for node in nodes[:limit]]
    has_more = len(nodes) > limit
    return SuppressionPage(
        records=page, cursor=page[-1].address if page and has_more else None, has_more=has_more
    )


def get_suppression(graph: Graph, address: str, *, tenant_id: str | None = None) -> Suppression:
    def tx_fn(tx: Tx) -> dict[str, Any] | None:
        params: dict[str, Any] = {"address": normalize_address(address), "tenant": tenant_id}
        record = tx.run(statement("suppression_get"), **params).single()
        return None if record is None else dict(record["suppression"])

    node = graph.read(tx_fn)
    if node is None:
        raise NotFound("this address is not suppressed")
    return Suppression.model_validate(node)


def remove_suppression(graph: Graph, address: str, *, audit: AuditContext | None = None) -> bool:
    """Lift the suppression of ``address`` (and its soft-bounce count); False when there was none.

    The audit entry names the address by its SHA-256, not in clear: the trail outlives the suppression
    and the profiles, and must not become a list of addresses; an admin who knows one can still find it."""
    normal = normalize_address(address)

    def tx_fn(tx: Tx) -> int:
        record = tx.run(statement("suppression_remove"), addresses=[normal]).single(strict=True)
        removed = int(record["removed"])
        if removed:  # nothing lifted is NOT_FOUND at the API: no change, no entry
            digest = hashlib.sha256(normal.encode()).hexdigest()
            record_audit(tx, audit, target_type="suppression", target_id=f"sha256:{digest}")
        return removed

    return graph.write(tx_fn) > 0


_EXPIRE_BATCH = 5000


def expire_feedback_records(graph: Graph, *, before: str) -> int:
    """Delete the dedup records received before ``before`` (the sweeper's call), in bounded batches;
    returns how many went. A retry of such an old record would apply again, which is why the window
    (``CAMPAIGN_FEEDBACK_DEDUP_DAYS``) is far longer than any provider retries. Feedback kept for a send
    never recorded (``graph/feedback_marks.py``) goes after the same window, uncounted."""
    totals = {"feedback_expire": 0, "pending_feedback_expire": 0}  # and feedback no send was found for
    for name in totals:
        while True:
            rows = graph.run(statement(name), before=before, limit=_EXPIRE_BATCH)
            deleted = int(rows[0]["deleted"]) if rows else 0
            totals[name] += deleted
            if deleted < _EXPIRE_BATCH:
                break
    return totals["feedback_expire"]
