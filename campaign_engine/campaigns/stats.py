"""Campaign stats: distinct-profile counts, read in one query.

Engagement counts come from CAMPAIGN_STATE only; admin self-tests live on CAMPAIGN_TEST and never
count. ``notified`` and ``emailed`` are written by the delivery workers (zero until they run); ``bounced``
(hard bounces) and ``complained`` by provider feedback on the send it names, found by the provider's
message id (``feedback/store.py``). ``capped``: profiles the frequency cap held back on a channel and
that have not received the campaign on it since (``CAMPAIGN_FREQUENCY_CAPS``). No client procedure can
set any of them.
"""

from __future__ import annotations

from pydantic import BaseModel

from campaign_engine.campaigns.audience import Policy
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.policy import policy_query
from campaign_engine.graph.segment import compile_for, count_audience

__all__ = ["CampaignStats", "get_stats"]


class CampaignStats(BaseModel):
    audience: int
    enrolled: int
    shown: int
    clicked: int
    dismissed: int
    notified: int
    emailed: int
    bounced: int
    complained: int
    capped: int


_SEGMENT_OF = "MATCH (c:Campaign {id: $id}) RETURN c {.id, .ref, .tenantId, .definition} AS c"


def get_stats(graph: Graph, *, campaign_id: str, policy: Policy) -> CampaignStats:
    def tx_fn(tx: Tx) -> CampaignStats | None:
        record = tx.run(policy_query("campaign_stats"), campaignId=campaign_id, **policy.params()).single()
        if record is None:
            return None
        stats = CampaignStats.model_validate(record.data())
        node = tx.run(_SEGMENT_OF, id=campaign_id).single()
        segment = None if node is None else compile_for(tx, dict(node["c"]))
        if segment is None:
            return stats
        # Issue 27: the audience of a campaign with a live segment is its members and the matches now.
        audience = count_audience(
            tx, segment, campaign_id=campaign_id, now=policy.now, params=policy.params()
        )
        return stats.model_copy(update={"audience": audience})

    stats = graph.read(tx_fn)
    if stats is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    return stats
