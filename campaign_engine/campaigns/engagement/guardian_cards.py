"""The in-app side of routing to guardians: the cards a routed guardian sees.

A campaign with ``minors: "guardians"`` reaches a consenting adult guardian in place of a member the age
policy excludes; on the notify and email walks (``graph/rules/routing.py``), and here in the app:
``getMyCampaigns`` shows the guardian the campaign in the guardian copy's message (where it has one,
else the campaign's), and ``recordEvent`` accepts what they do with it. Both read ``ROUTED_GUARDIAN``,
the one in-app rule: static members only (a segment's routed guardians are reached by the walks, whose
jobs carry the routing, but get no card: evaluating every campaign's rule over a caller's children on
each app start is not worth its cost yet).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any

from campaign_engine.campaigns.engagement.segment_reach import Reached
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Statements
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.routing import ROUTED_GUARDIAN

__all__ = ["GUARDIAN_ROW", "routed_pairs", "statement_variants", "visible_as_guardian"]

GUARDIAN_ROW = "guardian"
"""The sixth element of a visible row (campaign id, version, state, abTest, locale, GUARDIAN_ROW): the
reader is a routed guardian, who reads the guardian copy."""


@cache
def _routed_pairs() -> str:
    return statement("routed_pairs", ROUTED_GUARDIAN=ROUTED_GUARDIAN)


def statement_variants(samples: Sequence[object]) -> Iterator[tuple[str, str]]:
    """The one statement this module fills (tests EXPLAIN it)."""
    yield "routed_pairs", _routed_pairs()


def visible_as_guardian(rows: Iterable[Sequence[Any]]) -> Reached:
    """The live, in-window in-app campaigns each profile sees as a routed guardian, with their state,
    from the ``guardians`` part of ``cypher/engagement/my_campaigns.cypher`` (``[profileId, visible]``
    pairs); profiles who guard no member of such a campaign are absent."""
    return {
        profile_id: [
            (cid, at, None if state is None else dict(state), None, locale, GUARDIAN_ROW)
            for cid, at, state, locale in visible
        ]
        for profile_id, visible in rows
    }


def routed_pairs(tx: Statements, pairs: Iterable[tuple[str, str]], *, policy: Policy) -> set[tuple[str, str]]:
    """Of (profileId, campaignId) pairs, those whose campaign shows an in-app card and routes to the
    profile as a guardian (liveness and the window are the caller's check)."""
    listed = sorted({(pid, cid) for pid, cid in pairs})
    if not listed:
        return set()
    rows = tx.run(_routed_pairs(), pairs=[list(p) for p in listed], **policy.params())
    return {(str(r["profileId"]), str(r["campaignId"])) for r in rows}
