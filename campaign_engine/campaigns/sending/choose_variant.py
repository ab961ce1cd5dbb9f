"""``campaigns.chooseVariant``: an admin decides a test wave early, by hand.

The decision is ``graph/test_wave.py:decide`` (the same compare-and-set the page walks run on time), so
a hand and the system cannot both decide; the Dispatches waiting for it start their rest pass here,
after the commit.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import cast

from campaign_engine.campaigns.sending.dispatch import start_pages
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, get_dispatch
from campaign_engine.domain.dispatch import DeliveryChannel, PageJob
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.test_wave import decide
from campaign_engine.queue.port import Queue

__all__ = ["choose_variant"]

log = logging.getLogger(__name__)

_OF = "choose_variant_of"  # cypher/sending/choose_variant_of.cypher


def choose_variant(
    graph: Graph, queue: Queue, *, dispatch_id: str, variant_id: str, now: datetime, audit: AuditContext
) -> DispatchPublic:
    """Decide a testing Dispatch's test wave by hand: CONFLICT when it is not testing or already
    decided, BAD_REQUEST for a variant the campaign does not have. The rest pass of each of the
    confirmation's Dispatches waiting for the decision is enqueued after the commit."""
    stamp = format_ts(now)

    def tx_fn(tx: Tx) -> tuple[str, str, list[tuple[str, str]]]:
        row = tx.run(statement(_OF), dispatchId=dispatch_id).single()
        if row is None:
            raise NotFound(f"dispatch '{dispatch_id}' not found")
        test = json.loads(row["abTest"] or "{}")
        if row["phase"] != "testing" or dispatch_id not in (test.get("dispatchIds") or []):
            raise Conflict("this dispatch is not testing variants (no test wave, or already decided)")
        try:
            decision = decide(tx, campaign_id=row["campaignId"], now=stamp, audit=audit, chosen=variant_id,
                              only_if_due=False)  # fmt: skip
        except ValueError:
            raise BadRequest(
                f"variantId: the campaign has no variant '{variant_id}'",
                issues=[{"path": ["variantId"], "message": "not a variant of this campaign"}],
            ) from None
        if decision is None:
            raise Conflict("this dispatch's test wave is already decided (or was abandoned)")
        return str(row["campaignId"]), str(row["createdAt"]), decision.restart

    campaign_id, created_at, restart = graph.write(tx_fn)
    jobs = [
        PageJob(
            dispatch_id=did,
            campaign_id=campaign_id,
            campaign_created_at=created_at,
            channel=cast(DeliveryChannel, channel),
        )
        for did, channel in restart
    ]
    if jobs:  # committed: a lost enqueue is re-armed by the sweeper, as for dispatch
        start_pages(queue, jobs, campaign_id=campaign_id)
    log.info("dispatch.variant_chosen dispatch_id=%s variant_id=%s", dispatch_id, variant_id)
    return get_dispatch(graph, dispatch_id)
