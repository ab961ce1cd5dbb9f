"""The frequency cap's share of the delivery statements (the setting and its
parameters: ``domain/frequency_cap.py``; docs/architecture.md "Frequency cap").

Both channels evaluate the cap inside the batched statement they already run, under the profile lock:
notify in the recheck before the POSTs (``cypher/delivery/notify/``: ``notify_recheck.cypher`` and
``fragments/notify_cap.cypher``), email in the page claim (``cypher/delivery/email/``: ``email_page.cypher``
and ``fragments/email_cap.cypher``); where no tenant caps a channel, its statement carries none of the
cap's steps. No recipient costs an extra round trip. A capped
recipient is marked on its CAMPAIGN_STATE in that same statement, and the Dispatch's ``capped`` counter
moves in that same transaction (``count_capped``), once per (profile, dispatch): a redelivered job or a
second worker on the same page finds the mark and does not count again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import cache

from campaign_engine.graph.cypher import fragment, statement
from campaign_engine.graph.graph import Tx
from campaign_engine.graph.rules.routing import link_of_tenant
from campaign_engine.graph.rules.segment import CompiledSegment
from campaign_engine.graph.rules.segment_statements import segment_query

__all__ = ["count_capped", "email_cap_slot", "email_page_query", "notify_recheck_query", "statement_variants"]

# The profile lock, first (cypher/delivery/notify/fragments/notify_cap_lock.cypher): ordinary deliveries
# only (self-tests are exempt from the cap and from its lock). $jobs arrive sorted by profileId, so
# concurrent batches lock in one order and cannot deadlock.

# Without a cap the recheck stays the read it always was (`facts`: the recipient's receiver and locale).
_UNCAPPED = "WITH job, c, p, blocked, facts, false AS firstCapped"

_COUNT_CAPPED = "dispatch_count_capped"  # cypher/delivery/dispatch_count_capped.cypher


# A guardian's job stands for membership through the link it was routed by.
# First: a guardian's own relationships are walked for it, and it is what holds for their jobs.
# Only a link the campaign's tenant reads for the pair counts (``link_of_tenant``).
_ROUTED_MEMBER = (
    "(job.routedFrom IS NOT NULL AND c.minors = 'guardians' AND EXISTS {"
    " MATCH (p)-[link:GUARDIAN_OF {consent: 'granted'}]->(child:Profile)"
    f" WHERE child.profileId IN job.routedFrom AND {link_of_tenant('p', 'child')} }}) OR "
)


@cache
def notify_recheck_query(capped: bool, routed: bool = False) -> str:
    """The notify batch recheck: a read without a notify cap, a locking write with one; ``routed``: the
    batch holds a guardian's job (without one the statement is the one it always was)."""
    return statement(
        "notify_recheck",
        ROUTED_MEMBER=_ROUTED_MEMBER if routed else "",
        NOTIFY_CAP_LOCK=fragment("notify_cap_lock") if capped else "",
        NOTIFY_CAP=fragment("notify_cap") if capped else _UNCAPPED,
    )


def email_cap_slot(capped: bool) -> str:
    """email_page's ``{{EMAIL_CAP}}``: the cap's subqueries (``fragments/email_cap.cypher``) only when a
    tenant caps email; without one they cost ~8% of the statement for rows they never touch."""
    return fragment("email_cap") if capped else ""


def email_page_query(capped: bool, segment: CompiledSegment | None = None) -> str:
    """The email page claim, with the cap's subqueries when a tenant caps email (``email_cap_slot``).
    ``segment``: the campaign's live segment, whose matches the page reads beside its members."""
    if segment is None:
        return statement("email_page", EMAIL_CAP=email_cap_slot(capped))
    return segment_query("email_page", segment, EMAIL_CAP=email_cap_slot(capped))


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    for capped in (False, True):
        for routed in (False, True):
            yield "notify_recheck", notify_recheck_query(capped, routed)
        for segment in samples:
            yield "email_page", email_page_query(capped, segment)


def count_capped(tx: Tx, dispatch_ids: Iterable[str | None]) -> None:
    """Adds each newly capped recipient to its Dispatch's ``capped`` counter (one id per recipient), in
    the transaction that marked it; Dispatches in id order, after the profile locks (§5 lock order)."""
    counts = Counter(d for d in dispatch_ids if d)
    if counts:
        rows = [{"dispatchId": d, "capped": n} for d, n in sorted(counts.items())]
        tx.run(statement(_COUNT_CAPPED), counts=rows).consume()
