"""Self-enrolment: ``discover`` discoverable campaigns, ``enroll`` in one, ``leave`` it again.

Enrol and leave change a campaign's audience, so they take the campaign lock like ``addAudience``:
membership creation has one serialisation point, and an admin add racing a self-enrolment still
yields one membership. Eligibility (live, in window, discoverable, age policy) is read before the lock,
so a refusal takes none (any signed-in user can ask about any campaign id), and again under it; an
ineligible or unknown campaign is NOT_FOUND, so discovery leaks nothing about the others. Likewise
``leave`` locks only when there is a self-enrolled membership to remove.
"""

from __future__ import annotations

from pydantic import BaseModel

from campaign_engine.campaigns.engagement.cards import card_from_node
from campaign_engine.campaigns.engagement.models import CampaignCard
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign, lock_profiles
from campaign_engine.graph.rules.policy import Policy

__all__ = ["DISCOVER_LIMIT", "Discovered", "Enrolled", "Left", "discover", "enroll", "leave"]

DISCOVER_LIMIT = 100


class Discovered(BaseModel):
    campaigns: list[CampaignCard]


class Enrolled(BaseModel):
    enrolled: bool = True
    created: bool


class Left(BaseModel):
    left: bool


def discover(graph: Graph, *, profile_id: str, policy: Policy) -> Discovered:
    def tx_fn(tx: Tx) -> list[CampaignCard]:
        rows = tx.run(statement("discover"), profileId=profile_id, now=format_ts(policy.now),
                      limit=DISCOVER_LIMIT, **policy.params())  # fmt: skip
        return [card_from_node(dict(row["campaign"]), row["locale"], profile_id) for row in rows]

    return Discovered(campaigns=graph.read(tx_fn))


def enroll(graph: Graph, *, profile_id: str, campaign_id: str, policy: Policy) -> Enrolled:
    """Idempotent: enrolling again (or when an admin already added the caller) creates nothing."""
    params = {"profileId": profile_id, "campaignId": campaign_id, "now": format_ts(policy.now)}

    def tx_fn(tx: Tx) -> bool:
        eligible = tx.run(statement("enroll_eligible"), {**params, **policy.params()}).single()
        if eligible is None or not eligible["eligible"] or lock_campaign(tx, campaign_id) is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        record = tx.run(statement("enroll"), {**params, **policy.params()}).single()
        if record is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        return bool(record["created"])

    return Enrolled(created=graph.write(tx_fn))


def leave(graph: Graph, *, profile_id: str, campaign_id: str) -> Left:
    """Removes the caller's self-enrolled membership; memberships an admin created are kept."""

    def tx_fn(tx: Tx) -> bool:
        found = tx.run(statement("leave_member"), profileId=profile_id, campaignId=campaign_id).single()
        if found is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        if not found["member"]:
            return False
        if lock_campaign(tx, campaign_id) is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        lock_profiles(tx, [profile_id])  # an acknowledgement rechecks membership under this lock
        record = tx.run(statement("leave"), profileId=profile_id, campaignId=campaign_id).single()
        return record is not None and int(record["removed"]) > 0

    return Left(left=graph.write(tx_fn))
