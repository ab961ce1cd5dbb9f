"""``explainRecipient``'s share of routing to guardians: for a guardian, which members
routed the campaign to them; for an excluded member, where it was routed, or why not.

Both read one profile's ``GUARDIAN_OF`` links (an expansion from a unique seek) with the rules the walks
use (``graph/rules/routing.py``: the link's consent, the channel's age rule, membership static or by the live
segment, a guardian who is a member gets it as a member), and only the links the campaign's tenant reads
(its own for a pair, else the shared one; docs/people.md). They name profiles by id only, and only
those the admin can already read: a guardian's children that are members of the campaign (its
audience), a member's guardians of the campaign's tenant.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from campaign_engine.domain.camel import CamelModel
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx
from campaign_engine.graph.rules.routing import link_of_tenant, member_predicate
from campaign_engine.graph.rules.segment import CompiledSegment

__all__ = [
    "GuardianRoute",
    "RoutedTo",
    "guardian_route",
    "routed_children",
    "routed_to",
    "statement_variants",
]


Outcome = Literal["routed", "consent_revoked", "guardian_not_eligible", "guardian_is_a_member"]


class GuardianRoute(CamelModel):
    """This profile as a guardian: the members routed to them, and per channel whether they would
    receive it as a guardian now (every rule of the channel but membership holds, and some member
    routed to them is excluded on that channel)."""

    routed_from: list[str]
    channels: dict[str, bool]


class RoutedTo(CamelModel):
    """One guardian of an excluded member, and whether the campaign is routed to them."""

    guardian_id: str
    outcome: Outcome


# Who guards whom in each statement: (guardian, child) of its GUARDIAN_OF `link`.
_ENDS = {"guardian_children": ("g", "p"), "guardian_routes": ("p", "child")}


def _statement(name: str, compiled: CompiledSegment | None) -> str:
    return statement(name, MEMBER=member_predicate(compiled), LINK_OF_TENANT=link_of_tenant(*_ENDS[name]))


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    for name in ("guardian_children", "guardian_routes"):
        for compiled in samples:
            yield name, _statement(name, compiled)


def routed_children(
    tx: Tx, *, campaign_id: str, profile_id: str, compiled: CompiledSegment | None, params: dict[str, Any]
) -> list[dict[str, Any]]:
    """The members ``profile_id`` is a consenting guardian of, each with the channels excluding it."""
    result = tx.run(
        _statement("guardian_children", compiled), campaignId=campaign_id, profileId=profile_id, **params
    )
    return [r.data() for r in result]


def guardian_route(
    children: list[dict[str, Any]], *, member: bool, passes: dict[str, bool]
) -> GuardianRoute | None:
    """``children``: ``routed_children``; ``passes``: per channel, whether every rule but membership
    holds for the profile. None when no member is routed to the profile."""
    routed = [r for r in children if r["notify"] or r["email"]]
    if not routed:
        return None
    channels = {ch: not member and passes[ch] and any(r[ch] for r in routed) for ch in ("notify", "email")}
    return GuardianRoute(routed_from=[r["id"] for r in routed], channels=channels)


def routed_to(
    tx: Tx, *, campaign_id: str, profile_id: str, compiled: CompiledSegment | None, params: dict[str, Any]
) -> list[RoutedTo]:
    """Each guardian of the member ``profile_id`` (whom the age policy excludes) and the outcome; an
    empty list: no guardian to route to."""
    rows = tx.run(
        _statement("guardian_routes", compiled), campaignId=campaign_id, profileId=profile_id, **params
    )
    out: list[RoutedTo] = []
    for row in rows:
        outcome: Outcome = "routed"
        if row["consent"] != "granted":
            outcome = "consent_revoked"
        elif not row["eligible"]:
            outcome = "guardian_not_eligible"
        elif row["member"]:
            outcome = "guardian_is_a_member"
        out.append(RoutedTo(guardian_id=str(row["id"]), outcome=outcome))
    return out
