"""Routing to guardians as Cypher: who a page's excluded members are replaced by.

A campaign with ``minors: "guardians"`` reads each audience page as every campaign does (the static
head or a live segment's, ``graph/rules/segment_statements.py:audience_head``), then, in a statement
of its own, expands the page's members that a channel's age rule excludes (notify: ``CAMPAIGN_AGE_OK``; email:
``EMAIL_AGE_OK``) to their guardians: one ``GUARDIAN_OF`` expansion per excluded member of the page,
no index of its own, never a scan of profiles. A guardian is routed when the link's consent is
``granted``, the guardian is of the campaign's tenant, and then passes every rule a recipient of that
channel passes (the statement's own tail: opt-out, the age rule as an adult, notified / claimed,
suppression, a verified address, readiness, the frequency cap).

**The campaign tenant's links only** (docs/people.md): per pair (guardian, child) the link the
campaign's tenant recorded (``tenantId``) where it recorded one, else the shared link (no tenantId); a
link another tenant recorded is never read, so no tenant's consent decides another's sends. Every age
read (the child's, each earlier child's, the guardian's) is of that person's view in the campaign's
tenant (``{{TENANT_VIEW}}``, bound before the age rule reads ``view``).

**One announcement per guardian and channel, whatever the pages.** A guardian is routed from the page
holding their *first* routing child (the least profileId among their children who are members,
excluded on that channel, and linked with consent granted): a page skips a guardian with such a
child before its own first one, so a walk reaches them once per pass whatever the page boundaries,
and the preview counts them once however its pages fall. A guardian who is also a member of the
campaign is never routed: they get the campaign as a member, once. (A child who joins, leaves or turns
18 between two pages can move the first child; the email claim and the notify recheck's
``notifiedAt`` still hold each guardian to one announcement per campaign.)

Campaigns with ``minors: "exclude"`` never run these statements: their walks and preview are the
statements they always were. ``routed_guardian`` is the same rule for one profile, for readers that
ask about one guardian (the in-app card, ``explainRecipient``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Literal

from campaign_engine.graph.cypher import fragment, statement
from campaign_engine.graph.rules.policy import CAMPAIGN_AGE_OK
from campaign_engine.graph.rules.segment import CompiledSegment
from campaign_engine.graph.rules.segment_statements import audience_head

__all__ = [
    "ROUTED_GUARDIAN",
    "ROUTED_TEMPLATES",
    "link_of_tenant",
    "member_predicate",
    "routed_query",
    "statement_variants",
]

RouteChannel = Literal["notify", "email"]
_AGE = {"notify": "{{CAMPAIGN_AGE_OK}}", "email": "{{EMAIL_AGE_OK}}"}

# cypher/graph/rules/fragments/route_to_guardians.cypher: the guardians one page routes on a channel:
# `members` (the page, bound with `c`) -> rows of `p` (a guardian), `view` (theirs, in the campaign's
# tenant) and `via` (the page's members routed to them, ascending). {{AGE_OK}} is the channel's age rule
# over `p` and `view`, {{MEMBER}} whether `p` is in the campaign's audience (static or segment),
# {{LINK_OF_TENANT}} whether a link is the campaign tenant's for its pair.
# The links are read by pattern comprehensions from the bound profile: always an expansion of that
# profile, whatever the statistics (a MATCH may be planned as a scan of every Profile and an
# expand-into when the label looks small, as it does on a young or just-wiped graph). For the same
# reason whether a guardian is a member is {{MEMBER}} over the bound guardian (`g AS p`), never a
# MATCH of the guardian by key, and the far end of a link carries no label (GUARDIAN_OF only joins
# profiles): a full test run solved a labelled child by a scan of the profile_dob index its age rule's
# `p.dob =~` allows, then an expand-into from the guardian.

# A seek of the audience_member index (campaignId, profileId), not an expansion of `p`: a guardian's
# relationships grow with every campaign they have state or membership in, and the routing asks this
# of every guardian and earlier child (bench.dispatch --guardians: a third of the routing's db hits).
_STATIC_MEMBER = (
    "EXISTS { MATCH (:Profile)-[member:IN_CAMPAIGN_AUDIENCE]->(:Campaign)"
    " USING INDEX SEEK member:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)"
    " WHERE member.campaignId = c.id AND member.profileId = p.profileId }"
)


# Whether profile `p` is a guardian campaign `c` routes, for a reader holding one profile and one
# campaign (the in-app card of `getMyCampaigns`): the campaign routes minors,
# `p` is an adult of its tenant under the campaign age policy, and some child of `p` linked with consent
# granted is a static member that policy excludes. Filled in (no placeholders left); reads $adultDob and
# $dobPattern (graph/rules/policy.py:policy_params). One expansion of `p`'s GUARDIAN_OF links.


def link_of_tenant(guardian: str, child: str) -> str:
    """Whether ``link`` (a GUARDIAN_OF from ``guardian`` to ``child``) is the one campaign ``c`` reads
    for that pair: its tenant's own, or the shared one where its tenant recorded none."""
    return (
        "(link.tenantId = c.tenantId OR (link.tenantId IS NULL AND NOT EXISTS {"
        f" ({guardian})-[own:GUARDIAN_OF]->({child}) WHERE own.tenantId = c.tenantId }}))"
    )


# The age rule over the child and the child's view, where `p` and `view` are the guardian's.
_CHILD_AGE_OK = CAMPAIGN_AGE_OK.replace("p.", "child.").replace("view.", "childView.")

# The reader binds `view` (TENANT_VIEW) for `p` and `c` before this: the guardian's age reads it.
ROUTED_GUARDIAN = (
    "(c.minors = 'guardians' AND (c.tenantId IS NULL OR c.tenantId IN coalesce(p.tenants, []))"
    f" AND {CAMPAIGN_AGE_OK}"
    " AND EXISTS { MATCH (p)-[link:GUARDIAN_OF {consent: 'granted'}]->(child:Profile)"
    f"-[:IN_CAMPAIGN_AUDIENCE]->(c) WHERE {link_of_tenant('p', 'child')}"
    " OPTIONAL MATCH (child)-[:HAS_VIEW]->(childView:TenantView) WHERE childView.tenantId = c.tenantId"
    f" WITH c, child, childView WHERE NOT {_CHILD_AGE_OK} }})"
)


def member_predicate(compiled: CompiledSegment | None) -> str:
    """Whether `p` is in the audience of `c`: a static member, or (with a live segment) a profile of the
    campaign's tenant the rule matches now."""
    if compiled is None:
        return _STATIC_MEMBER
    return f"({_STATIC_MEMBER} OR (c.tenantId IN coalesce(p.tenants, []) AND {compiled.predicate}))"


def route(channel: RouteChannel, compiled: CompiledSegment | None) -> str:
    """The routing fragment of ``channel``, filled."""
    return fragment(
        "route_to_guardians",
        AGE_OK=_AGE[channel],
        MEMBER=member_predicate(compiled),
        LINK_OF_TENANT=link_of_tenant("guardian", "p"),
        EARLIER_LINK_OF_TENANT=link_of_tenant("g", "p"),
    )


# The routing statements and the channels each routes (its ROUTE_NOTIFY / ROUTE_EMAIL slots).
ROUTED_TEMPLATES: dict[str, tuple[RouteChannel, ...]] = {
    "guardian_page": ("notify",),
    "guardian_lock": ("email",),
    "guardian_preview": ("notify", "email"),
}


# Built once per process and (statement, segment): the same segment gives the same text, which Neo4j's
# plan cache keys on. lru_cache is thread-safe (the worker's polling threads share it) and bounded.
@lru_cache(maxsize=256)
def routed_query(name: str, compiled: CompiledSegment | None) -> str:
    """``cypher/<room>/<name>.cypher`` (a routing statement) for this campaign's audience: its
    ``{{AUDIENCE_PAGE}}`` and its channels' ``{{ROUTE_NOTIFY}}`` / ``{{ROUTE_EMAIL}}`` filled in."""
    routes = {f"ROUTE_{channel.upper()}": route(channel, compiled) for channel in ROUTED_TEMPLATES[name]}
    return statement(name, AUDIENCE_PAGE=audience_head(compiled), **routes)


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every routing statement this module fills, for each sample segment (tests EXPLAIN them all)."""
    for name in ROUTED_TEMPLATES:
        for compiled in samples:
            yield name, routed_query(name, compiled)
