"""Campaign stats: distinct-profile counts, read in one query.

Engagement counts come from CAMPAIGN_STATE only; admin self-tests live on CAMPAIGN_TEST and never
count. ``notified`` and ``emailed`` are written by the delivery workers (zero until they run); ``bounced``
(hard bounces) and ``complained`` by provider feedback on the send it names, found by the provider's
message id (``feedback/store.py``). ``capped``: profiles the frequency cap held back on a channel and
that have not received the campaign on it since (``CAMPAIGN_FREQUENCY_CAPS``). ``emailClicked``:
recipients who followed the email's tracked CTA at least once (``emailClickedAt``). ``unsubscribed``:
recipients who opted out of the tenant's email through this campaign's unsubscribe link (a link names
its campaign, signed; an opt-out through another tenant's link or an older link counts for none). No
client procedure can set any of them. ``variants``: the same per A/B content variant.
``guardians``: of ``notified`` and ``emailed``, the guardians reached in place of excluded minors.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import count_audience

__all__ = ["CampaignStats", "GuardianStats", "VariantStats", "get_stats"]


class VariantStats(CamelModel):
    """One A/B content variant's recipients: distinct profiles whose state names the variant
    (stamped at their first delivery or in-app event), and of them how many reached each step."""

    recipients: int = 0
    notified: int = 0
    emailed: int = 0
    shown: int = 0
    clicked: int = 0
    email_clicked: int = 0
    bounced: int = 0
    complained: int = 0
    unsubscribed: int = 0


class GuardianStats(BaseModel):
    """Guardians reached in place of members the age policy excludes, per channel
    (distinct profiles; they are counted in ``notified`` / ``emailed`` too)."""

    notified: int = 0
    emailed: int = 0


class CampaignStats(CamelModel):
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
    email_clicked: int
    unsubscribed: int = Field(
        description="recipients who opted out of the tenant's email through this campaign's unsubscribe link"
    )
    variants: dict[str, VariantStats] = Field(
        default_factory=dict,
        description="per A/B content variant id: each of the campaign's variants (zeros until it reaches"
        " someone) and any variant recorded before the variants were edited; {} without variants",
    )
    guardians: GuardianStats = Field(default_factory=GuardianStats)


def _stats(record: dict[str, Any]) -> CampaignStats:
    rows = record.pop("variantRows")
    current = [v["id"] for v in json.loads(record.pop("abVariants") or "[]")]
    variants = {vid: VariantStats() for vid in current}
    for row in rows:
        variants[str(row.pop("id"))] = VariantStats.model_validate(row)
    guardians = GuardianStats(
        notified=record.pop("guardiansNotified"), emailed=record.pop("guardiansEmailed")
    )
    return CampaignStats.model_validate({**record, "variants": variants, "guardians": guardians})


_SEGMENT_OF = "MATCH (c:Campaign {id: $id}) RETURN c {.id, .ref, .tenantId, .definition} AS c"


def get_stats(graph: Graph, *, campaign_id: str, policy: Policy) -> CampaignStats:
    def tx_fn(tx: Tx) -> CampaignStats | None:
        record = tx.run(statement("campaign_stats"), campaignId=campaign_id, **policy.params()).single()
        if record is None:
            return None
        stats = _stats(record.data())
        node = tx.run(_SEGMENT_OF, id=campaign_id).single()
        segment = None if node is None else compile_for(tx, dict(node["c"]))
        if segment is None:
            return stats
        # The audience of a campaign with a live segment is its members and the matches now.
        audience = count_audience(
            tx, segment, campaign_id=campaign_id, now=policy.now, params=policy.params()
        )
        return stats.model_copy(update={"audience": audience})

    stats = graph.read(tx_fn)
    if stats is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    return stats
