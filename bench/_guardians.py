"""``bench.dispatch --guardians``: routed delivery against the same recipients as
static adult members, side by side in one run.

Each of the first N bench profiles (``bench-0000000``...) becomes the guardian, with consent granted, of
one minor (``bench-kid-0000000``..., managed, born ``MINOR_DOB``). Rounds alternate (the order swapped
every round) between a campaign whose members are the N adults (today's statements) and a
``minors: "guardians"`` campaign whose members are the N minors, which the walk replaces by their
guardians: the same N recipients, reached through the routing statements. ``families`` is also the
generator the 100,000-profile fixture can use (any count, one to three children per guardian).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from datetime import UTC, datetime

from bench._support import PROFILE_ID_CYPHER, SEED_BATCH, side_by_side
from campaign_engine.campaigns import definitions
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph

__all__ = ["MINOR_DOB", "families", "seed_routed", "with_guardians"]

MINOR_DOB = "2016-04-01"
KID_PREFIX = "bench-kid-"

# Guardian i (an existing or new profile of `$prefix`) and its children `$kidPrefix` i*per..i*per+per-1:
# every child a managed minor of the tenant, linked with consent granted (revoked for every
# `$revokedEvery`-th guardian, 0: none). One statement per SEED_BATCH guardians.
_FAMILIES = f"""
UNWIND range($first, $last) AS i
WITH i, {PROFILE_ID_CYPHER} AS gid
MERGE (g:Profile {{profileId: gid}})
  ON CREATE SET g.announcementPushOptOut = false, g.announcementEmailOptOut = false
SET g.tenants = [$tenant]
WITH i, g
UNWIND range(0, $perGuardian - 1) AS j
WITH i, g, $kidPrefix + right('000000' + toString(i * $perGuardian + j), 7) AS kid
MERGE (k:Profile {{profileId: kid}})
  ON CREATE SET k.announcementPushOptOut = false, k.announcementEmailOptOut = false
SET k.tenants = [$tenant], k.dob = $minorDob, k.isManaged = true
MERGE (g)-[link:GUARDIAN_OF]->(k)
SET link.consent = CASE WHEN $revokedEvery > 0 AND i % $revokedEvery = $revokedEvery - 1
                        THEN 'revoked' ELSE 'granted' END,
    link.source = 'api'
"""

_KID_MEMBERS = """
UNWIND range($first, $last) AS i
MATCH (k:Profile {profileId: $kidPrefix + right('000000' + toString(i), 7)})
MATCH (c:Campaign {id: $campaignId})
CREATE (k)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: k.profileId, addedAt: $now,
                                  source: 'bench', selfEnrolled: false}]->(c)
"""


def families(
    graph: Graph,
    *,
    guardians: int,
    tenant: str,
    per_guardian: int = 1,
    revoked_every: int = 0,
    prefix: str = "bench-",
    kid_prefix: str = KID_PREFIX,
) -> int:
    """Writes ``guardians`` guardians with ``per_guardian`` minor children each (directly, in batches:
    the fixture generator, not the import path); returns the number of children."""
    for first in range(0, guardians, SEED_BATCH):
        graph.run(
            _FAMILIES, first=first, last=min(first + SEED_BATCH, guardians) - 1, prefix=prefix,
            kidPrefix=kid_prefix, perGuardian=per_guardian, tenant=tenant, minorDob=MINOR_DOB,
            revokedEvery=revoked_every,
        )  # fmt: skip
    return guardians * per_guardian


def seed_routed(graph: Graph, campaign_id: str, children: int, *, tenant: str) -> str:
    """A live notify campaign routing minors to guardians whose members are the first ``children``
    bench minors."""
    now = datetime.now(UTC)
    data = {
        "id": campaign_id,
        "name": "Bench guardians",
        "channels": ["notify"],
        "notification": {"title": "Bench", "body": "Throughput"},
        "minors": "guardians",
        "guardianCopy": {"notification": {"title": "Bench", "body": "For families"}},
    }
    created = definitions.create_campaign(
        graph, data=CampaignCreate.model_validate(data), tenant_id=tenant, now=now
    )
    definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    for first in range(0, children, SEED_BATCH):
        graph.run(_KID_MEMBERS, first=first, last=min(first + SEED_BATCH, children) - 1, kidPrefix=KID_PREFIX,
                  campaignId=campaign_id, now=format_ts(now))  # fmt: skip
    return created.created_at


def with_guardians(
    graph: Graph,
    *,
    n: int,
    rounds: int,
    tenant: str,
    seed_static: Callable[[str, int], object],
    dispatch_round: Callable[[str, int], tuple[float, int]],
) -> str:
    """Rounds of ``n`` recipients, static adult members against the same adults reached as guardians of
    ``n`` minor members; the RESULT fields. ``seed_static(campaign_id, n)`` makes a static campaign,
    ``dispatch_round(campaign_id, n)`` previews, dispatches and waits: (seconds, notified)."""
    families(graph, guardians=n, tenant=tenant)
    rates: dict[str, list[float]] = {"static": [], "routed": []}
    for k in range(1, rounds + 1):
        for mode in ("static", "routed") if k % 2 else ("routed", "static"):
            campaign_id = f"bench-{mode}-guardians-{k}"
            if mode == "static":
                seed_static(campaign_id, n)
            else:
                seed_routed(graph, campaign_id, n, tenant=tenant)
            elapsed, done = dispatch_round(campaign_id, n)
            rates[mode].append(done / elapsed)
            print(f"guardians round {k}: {mode} -> {done / elapsed:.0f}/s", flush=True)
    ratio = side_by_side("recipients/s routed to guardians", rates["routed"], rates["static"], ref="static")
    return (
        f" static_adults_per_s={statistics.median(rates['static']):.0f}"
        f" routed_guardians_per_s={statistics.median(rates['routed']):.0f} guardians_ratio={ratio:.3f}"
    )
