"""A user's own announcement preferences: email and push opt-outs.

Only the profile itself reads or changes them (these fields never appear in projections for others).
An update is a partial patch under the profile lock, so it serialises with email claims and one-click
unsubscribes: an omitted choice keeps whatever a concurrent writer stored. Each opt-out keeps the time
it was first switched on (``...OptOutAt``), cleared when switched off.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["AnnouncementPreferences", "get_announcement_preferences", "update_announcement_preferences"]


@dataclass(frozen=True)
class AnnouncementPreferences:
    email_opt_out: bool
    push_opt_out: bool


_GET = "preferences_get"  # cypher/engagement/preferences_get.cypher

# A null choice leaves the stored value (and its timestamp) untouched.
_UPDATE = "preferences_update"  # cypher/engagement/preferences_update.cypher


def _preferences(record: Any) -> AnnouncementPreferences:
    return AnnouncementPreferences(email_opt_out=bool(record["email"]), push_opt_out=bool(record["push"]))


def get_announcement_preferences(graph: Graph, profile_id: str) -> AnnouncementPreferences:
    def tx_fn(tx: Tx) -> AnnouncementPreferences | None:
        record = tx.run(statement(_GET), profileId=profile_id).single()
        return None if record is None else _preferences(record)

    found = graph.read(tx_fn)
    if found is None:
        raise NotFound("profile not found")
    return found


def update_announcement_preferences(
    graph: Graph,
    profile_id: str,
    *,
    email_opt_out: bool | None,
    push_opt_out: bool | None,
    now: datetime,
) -> AnnouncementPreferences:
    """Apply the given choices (None = unchanged) and return the stored result."""
    stamp = format_ts(now)

    def tx_fn(tx: Tx) -> AnnouncementPreferences | None:
        record = tx.run(
            statement(_UPDATE), profileId=profile_id, email=email_opt_out, push=push_opt_out, now=stamp
        ).single()
        return None if record is None else _preferences(record)

    updated = graph.write(tx_fn)
    if updated is None:
        raise NotFound("profile not found")
    return updated
