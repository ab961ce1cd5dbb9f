"""The two locks of docs/architecture.md, taken as the first write of a transaction.

Incrementing a property takes Neo4j's node write lock until commit, so a second writer blocks (or is
picked as a deadlock victim and retried by the managed transaction). Profiles are always locked in
ascending ``profileId`` order, which makes deadlocks between batched writers impossible by construction.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx

__all__ = ["lock_campaign", "lock_profiles"]

# The label is checked again once the lock is held: a delete that committed while this waited has
# retired the node (campaigns/definitions.py), and a retired campaign is not found.
_LOCK_CAMPAIGN = "lock_campaign"  # cypher/graph/lock_campaign.cypher

_LOCK_PROFILES = "lock_profiles"  # cypher/graph/lock_profiles.cypher


def lock_campaign(tx: Tx, campaign_id: str) -> dict[str, Any] | None:
    """Lock the campaign node and return its properties, or None when it does not exist."""
    record = tx.run(statement(_LOCK_CAMPAIGN), campaignId=campaign_id).single()
    return None if record is None else dict(record["campaign"])


def lock_profiles(tx: Tx, profile_ids: list[str]) -> list[str]:
    """Lock the existing profiles among ``profile_ids`` in ascending order; returns the ids locked."""
    ordered = sorted(set(profile_ids))
    return [record["profileId"] for record in tx.run(statement(_LOCK_PROFILES), profileIds=ordered)]
