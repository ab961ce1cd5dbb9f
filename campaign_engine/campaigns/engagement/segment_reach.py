"""The in-app side of live segments: which of some profiles a campaign's segment matches now.

A page walk reaches a segment's matches without a membership; the app must show them the same campaign
and let them record what they did with it. ``getMyCampaigns`` asks ``visible_by_segment`` which callers
the live in-app segment campaigns of their tenants match (its read finds those campaigns);
``recordEvent`` asks ``matched_pairs`` for the events the membership check refused. Both evaluate the
rule per profile (``cypher/engagement/segment_reach.cypher``, one unique seek per profile), so the cost
grows with the callers and the live segment campaigns of their tenants, never with a segment's size.

Compiled rules are kept per (campaign, updatedAt) and minute (``SegmentCache``): a rule's values are
parameters evaluated at each read, so a cached rule is only stale in what compiling resolves (a campaign
a ``memberOf``/``engaged`` condition names, created after the compile), for at most a minute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Statements
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.segment import SegmentCache
from campaign_engine.graph.rules.segment_statements import segment_query

__all__ = ["Reached", "matched_pairs", "visible_by_segment"]

# profileId -> [(campaignId, updatedAt, state or None, abTest, locale)]: the shape of my_campaigns' read,
# each row in the language of the campaign tenant's view of the reader (docs/people.md)
Reached = dict[str, list[tuple[Any, ...]]]

_RULES = SegmentCache(size=256)

_CAMPAIGNS_BY_ID = "segment_reach_campaigns"  # cypher/engagement/segment_reach_campaigns.cypher


def _matches(
    tx: Statements, campaign: Mapping[str, Any], profile_ids: Sequence[str], *, policy: Policy
) -> list[Any]:
    minute = int(policy.now.timestamp() // 60)
    compiled = _RULES.get(tx, dispatch_id=f"in-app:{minute}", campaign=campaign)
    if compiled is None or not profile_ids:
        return []
    text = segment_query("segment_reach", compiled)
    params = {**policy.params(), **compiled.params(policy.now)}
    return list(tx.run(text, campaignId=campaign["id"], profileIds=list(profile_ids), **params))


def visible_by_segment(
    tx: Statements, campaigns: Iterable[Mapping[str, Any]], profile_ids: Sequence[str], *, policy: Policy
) -> Reached:
    """Of the live, in-window in-app ``campaigns`` with a segment (the ``segmentCampaigns`` part of
    ``cypher/engagement/my_campaigns.cypher``), those each profile sees through the rule (not a
    membership), with their state; profiles reached by none are absent."""
    found: Reached = {}
    for campaign in campaigns:
        for record in _matches(tx, campaign, profile_ids, policy=policy):
            state = None if record["state"] is None else dict(record["state"])
            found.setdefault(record["profileId"], []).append(
                (campaign["id"], campaign["updatedAt"], state, campaign.get("abTest"), record["locale"])
            )
    return found


def matched_pairs(
    tx: Statements, pairs: Iterable[tuple[str, str]], *, policy: Policy
) -> set[tuple[str, str]]:
    """Of (profileId, campaignId) pairs, those whose campaign shows an in-app card (the card is what a
    match who was never sent anything can engage with) and has a segment matching the profile now,
    admitting them under its age policy (liveness and the window are the caller's check)."""
    by_campaign: dict[str, set[str]] = {}
    for profile_id, campaign_id in pairs:
        by_campaign.setdefault(campaign_id, set()).add(profile_id)
    if not by_campaign:
        return set()
    rows = tx.run(statement(_CAMPAIGNS_BY_ID), campaignIds=sorted(by_campaign))
    matched: set[tuple[str, str]] = set()
    for campaign in [dict(record["campaign"]) for record in rows]:
        profile_ids = sorted(by_campaign[campaign["id"]])
        for record in _matches(tx, campaign, profile_ids, policy=policy):
            matched.add((str(record["profileId"]), str(campaign["id"])))
    return matched
