"""The notification worker's last step: what the receivers answered, written in one transaction.

Positives get ``notifiedAt`` under ascending profile locks (``record_notified``), negatives and
suppressions are held (``held.py``), and the Dispatch's counters move in that same transaction. Only the
worker's process knows what the receivers answered, so this write is re-run when its commit is cut off
(``Graph.write_idempotent``) and is written so that a second application changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from campaign_engine.delivery.notify.held import record_held
from campaign_engine.delivery.notify.verdicts import Verdict
from campaign_engine.domain.dispatch import DeliveryJob
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_events, subscribers_for

__all__ = ["record_notified", "statement_variants", "write_outcomes"]

log = logging.getLogger(__name__)

# The outcome write is re-run when its commit was cut off (``Graph.write_idempotent``), so a second
# application must change nothing. ``acknowledged`` adds only first acknowledgements (notify_record), a
# second run finds none. ``rejected`` and ``suppressed`` are plain additions: a row that carries any
# names its batch (``k.batch``), and a Dispatch remembers the last _COUNTED_BATCHES of those names, so a
# re-run after a commit that did land adds nothing. (A re-run follows its cut-off commit as soon as the
# graph answers again, with at most the other delivery threads' writes in between.)
_COUNTED_BATCHES = 64


def _count_statement() -> str:
    """cypher/delivery/notify/dispatch_count_outcomes.cypher, keeping _COUNTED_BATCHES names per Dispatch."""
    return statement("dispatch_count_outcomes", COUNTED_BATCHES=str(_COUNTED_BATCHES))


def statement_variants(samples: Sequence[object]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    yield "dispatch_count_outcomes", _count_statement()


def write_outcomes(
    tx: Tx,
    jobs: list[DeliveryJob],
    verdicts: dict[str, Verdict],
    *,
    batch: str,
    now: str,
    variant_ids: Mapping[str, str | None],
    graph: Graph,
) -> int:
    """Writes the outcomes; returns how many were first acknowledgements (the Dispatch's count).
    Idempotent (see ``_count_statement``): ``batch`` names this write for every attempt of it."""
    acks = [
        {
            "profileId": j.profile_id,
            "campaignId": j.campaign_id,
            "campaignCreatedAt": j.campaign_created_at,
            "dispatchId": j.dispatch_id,
            "variantId": variant_ids.get(j.delivery_id),
            "standsIn": bool(j.paged_member or j.routed_from),
        }
        for j in jobs
        if verdicts[j.delivery_id] == "positive" and j.campaign_test_id is None
    ]
    counts: dict[str, dict[str, Any]] = {}

    def bump(dispatch_id: str | None, key: str, by: int = 1) -> None:
        if dispatch_id is not None:
            entry = counts.setdefault(
                dispatch_id,
                {"dispatchId": dispatch_id, "acknowledged": 0, "rejected": 0, "suppressed": 0},
            )
            entry[key] += by

    for dispatch_id, firsts in record_notified(tx, acks, now=now, graph=graph).items():
        bump(dispatch_id, "acknowledged", firsts)
    routed = [
        {"profileId": j.profile_id, "campaignId": j.campaign_id}
        for j in jobs
        if j.routed_from and verdicts[j.delivery_id] == "positive" and j.campaign_test_id is None
    ]
    if routed:  # GetStats counts the guardians reached (under the locks just taken)
        tx.run(statement("guardian_mark"), marks=routed, channel="notify").consume()
    held = [
        {"profileId": j.profile_id, "dispatchId": j.dispatch_id,
         "outcome": "suppressed" if verdicts[j.delivery_id] == "suppressed" else "rejected"}
        for j in jobs
        if j.campaign_test_id is None and j.dispatch_id is not None
        and verdicts[j.delivery_id] in ("negative", "blocked", "suppressed")
    ]  # fmt: skip
    for dispatch_id, outcome, firsts in record_held(tx, held, batch=batch):
        bump(dispatch_id, outcome, firsts)
    for entry in counts.values():
        entry["batch"] = batch if entry["rejected"] or entry["suppressed"] else None
        entry["at"] = now  # lastOutcomeAt: when a walked send really finished (campaigns/sending/plan.py)
    if counts:
        tx.run(_count_statement(), counts=[counts[k] for k in sorted(counts)]).consume()
    return sum(int(entry["acknowledged"]) for entry in counts.values())


def record_notified(
    tx: Tx, acks: list[dict[str, Any]], *, now: str, graph: Graph | None = None
) -> dict[str | None, int]:
    """Sets ``notifiedAt`` for acknowledged deliveries under their profile locks (taken by the statement
    itself, ascending); returns, by dispatch id, how many of them were the profile's first
    acknowledgement. A person no longer in the audience under their lock (removed after the POST)
    gets no ``notifiedAt``, is not counted, and is logged. A (profile, campaign) acknowledged twice in
    one batch (two dispatches) is written once: the statement must see each pair once, and only one of
    them can be first anyway. With ``graph``, each first acknowledgement is a ``recipient.notified``
    event for the endpoints that take it."""
    unique = {(a["profileId"], a["campaignId"]): a for a in reversed(acks)}  # reversed: the first wins
    ordered = sorted(unique.values(), key=lambda a: str(a["profileId"]))
    if not ordered:
        return {}
    view = subscribers_for(graph) if graph is not None else None
    wanted = view is not None and view.any("recipient.notified", tx)
    rows = [r.data() for r in tx.run(statement("notify_record"), acks=ordered, now=now, events=wanted)]
    if graph is not None and wanted:
        for row in rows:  # the first acknowledgements, as events, in this same transaction
            events = [
                Event.of("recipient.notified", now, campaignId=row["campaignId"],
                         dispatchId=row["dispatchId"], profileId=profile_id)
                for profile_id in row["profiles"]
            ]  # fmt: skip
            record_events(tx, graph, row["tenantId"], events)
    counts: dict[str | None, int] = {}
    for row in rows:
        counts[row["dispatchId"]] = counts.get(row["dispatchId"], 0) + int(row["firsts"])
        if row["removed"]:
            log.info(
                "notify.not_counted",
                extra={"reason": "not_member", "campaignId": row["campaignId"],
                       "dispatchId": row["dispatchId"], "profileIds": sorted(row["removed"])},
            )  # fmt: skip
    return counts
