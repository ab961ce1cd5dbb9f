"""Statements built from a compiled live segment (``graph/rules/segment.py`` compiles the rule).

``audience_head`` puts a compiled segment's arms beside the static members in one
``CALL { .. UNION .. }`` that every audience reader starts with (``{{AUDIENCE_PAGE}}`` in
``dispatch_page``, ``email_page``, ``dispatch_preview``): each arm keysets after ``$cursor`` and stops
at ``$limit``, the union is ordered by profileId and cut at ``$limit`` again, so the walks' cursor
protocol is unchanged. A campaign without a segment gets the static head alone, the very statement it
had before.

The fixed templates are files of ``cypher/`` (``SEGMENT_TEMPLATES`` names them and the slots this module
fills); what is generated here is only what the rule decides: the arms of the union, the counts' union,
the per-leaf verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from campaign_engine.graph.cypher import fill, statement
from campaign_engine.graph.graph import Statements
from campaign_engine.graph.rules.policy import STATIC_AUDIENCE_PAGE
from campaign_engine.graph.rules.segment import Arm, CompiledSegment
from campaign_engine.graph.rules.segment_facts import bind_view

__all__ = [
    "SEGMENT_TEMPLATES",
    "audience_head",
    "count_audience",
    "count_matches",
    "count_query",
    "leaf_verdicts",
    "segment_query",
    "statement_variants",
]


def _arm_text(
    arm: Arm, compiled: CompiledSegment, *, tenant: str, extra: str, bind_c: bool, paged: bool
) -> str:
    """One arm of the union. A seek that is not already in profileId order (every one but memberOf's and
    tag's) runs in its own subquery: the planner plans it alone, so it cannot trade the anchor's seek for
    a range over every profileId after the cursor (it did, reading all profiles, before this shape). A
    keyset seek (memberOf, tag) pages inside a subquery over the bound campaign too: alone there, the
    index's order serves the ORDER BY and the LIMIT stops the seek, where beside the campaign's own
    match a plan kept from other statistics could sort everything after the cursor (a full test run
    planned a tag page so, reading 1,000 links for 50).

    The rule is tested in a WITH of its own, after the seek and p's view are bound (``_tests``): in the
    seek's WHERE the planner solved it again for every plan it weighed, and each of its subqueries
    with it (the largest admitted rule planned in 3.7 s of CPU, its three arms 0.5 s each)."""
    carried = "p, c" if bind_c else "p"
    # The hint: on a graph of a few campaigns the planner may otherwise scan the label for `c`.
    lines = ["MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)" if bind_c else ""]
    admitted = f"{tenant} IN coalesce(p.tenants, [])"
    if arm.order == "p.profileId":
        cursor = "p.profileId > $cursor AND " if paged else ""
        # DISTINCT: an expansion may reach a profile twice (a connection stored both ways), and a
        # duplicate inside the LIMIT would let the union's page skip a match after it.
        seeks = "\n  UNION\n  ".join(
            f"{m}\n  WHERE {w}\n  RETURN p" for m, w in ((arm.match, arm.where), *arm.more)
        )
        distinct = "" if arm.more else "DISTINCT "  # a UNION is distinct itself
        lines += [f"CALL () {{\n  {seeks.replace('RETURN p', f'RETURN {distinct}p')}\n}}",
                  f"WITH {carried}", f"WHERE {cursor}{admitted}"]  # fmt: skip
        lines += _tests(arm, compiled, carried, extra)
        lines += [f"WITH p, c ORDER BY {arm.order} LIMIT $limit", "RETURN p, c"] if paged else ["RETURN p"]
        return "\n".join(line for line in lines if line)
    # The composite hint needs a predicate on both keys: unpaged, profileId's is its existence.
    unpaged = re.sub(r"(seg[MG])\.profileId > \$cursor", r"\1.profileId IS NOT NULL", arm.where)
    where = arm.where if paged else unpaged
    edge = arm.order.split(".", 1)[0]  # the seek's relationship, whose keys order the page
    tests = _tests(arm, compiled, f"{carried}, {edge}", extra)
    if paged and bind_c:
        page = f"  WITH p ORDER BY {arm.order} LIMIT $limit"
        lines += ["CALL (c) {", f"  {arm.match}", f"  WHERE {where} AND {admitted}",
                  *(f"  {line}" for line in tests), page, "  RETURN p", "}", "RETURN p, c"]  # fmt: skip
        return "\n".join(line for line in lines if line)
    lines += [arm.match, f"WHERE {where} AND {admitted}", *tests]
    if paged:
        lines += [f"WITH p, c ORDER BY {arm.order} LIMIT $limit", "RETURN p, c"]
    else:
        lines += ["RETURN p"]
    return "\n".join(line for line in lines if line)


def _tests(arm: Arm, compiled: CompiledSegment, carried: str, extra: str) -> list[str]:
    """What an arm tests once its seek has found ``p``: the seek's own view check, the rule (or what is
    left of it) and ``extra`` (over ``view``, the same view), with ``p``'s view bound once for them all
    as ``segP``; nothing to test binds nothing."""
    rule = compiled.rule if arm.residual is None else arm.residual
    tests = [test for test in (arm.viewed, None if rule == "true" else rule, extra or None) if test]
    if not tests:
        return []
    alias = ", segP AS view" if extra else ""
    return [bind_view(compiled.tenant), f"WITH {carried}, segP{alias}", f"WHERE {' AND '.join(tests)}"]


def audience_head(compiled: CompiledSegment | None, *, age_filtered: bool = False) -> str:
    """The audience page every reader starts with: ``p`` and ``c`` for the members after ``$cursor``
    in profileId order, at most ``$limit``. ``age_filtered``: every arm keeps only the members the
    campaign may hold (``AUDIENCE_AGE_OK``) before its LIMIT, so a filtered page is still a full page when
    more remain."""
    static = STATIC_AUDIENCE_PAGE
    if age_filtered:
        static = static.replace(
            "AND m.profileId > $cursor", "AND m.profileId > $cursor AND {{AUDIENCE_AGE_OK_HERE}}"
        )
    if compiled is None:
        return static
    arms = [f"{static}\nRETURN p, c"]
    extra = "{{AUDIENCE_AGE_OK}}" if age_filtered else ""
    for arm in compiled.arms:
        arms.append(_arm_text(arm, compiled, tenant="c.tenantId", extra=extra, bind_c=True, paged=True))
    body = "\n  UNION\n".join(arms)
    return f"CALL () {{\n{body}\n}}\nWITH p, c\nORDER BY p.profileId\nLIMIT $limit"


# The segment templates and the slots this module fills in each (a caller adds its own, as email_page's
# EMAIL_CAP): graph/cypher.py refuses a slot a template lacks, and any it leaves unfilled.
# getAudience lists members the campaign may hold (AUDIENCE_AGE_OK), filtered in every arm.
SEGMENT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "dispatch_page": ("AUDIENCE_PAGE",),
    "dispatch_preview": ("AUDIENCE_PAGE",),
    "email_page": ("AUDIENCE_PAGE",),
    "test_wave_page": ("AUDIENCE_PAGE",),
    "audience_segment_page": ("AUDIENCE_PAGE",),
    "export_segment_recipients": ("AUDIENCE_PAGE",),
    "segment_reach": ("SEGMENT_RULE",),
}
_AGE_FILTERED = {"audience_segment_page"}
_CALLER_SLOTS = {"email_page"}  # delivery/frequency_cap.py, delivery/test_wave_page.py fill its EMAIL_CAP


@lru_cache(maxsize=256)  # thread-safe and bounded; the worker's polling threads share it
def segment_query(name: str, compiled: CompiledSegment | None, **slots: str) -> str:
    """``cypher/<room>/<name>.cypher`` with its ``{{AUDIENCE_PAGE}}`` for this segment and its
    ``{{SEGMENT_RULE}}`` (the predicate over ``p``; no segment: ``false``), as ``SEGMENT_TEMPLATES``
    declares, and the caller's ``slots``; the same segment gives the same text (Neo4j's plan cache keys
    on it), built once per process."""
    own = {
        "AUDIENCE_PAGE": lambda: audience_head(compiled, age_filtered=name in _AGE_FILTERED),
        "SEGMENT_RULE": lambda: compiled.predicate if compiled is not None else "false",
    }
    return statement(name, **{slot: own[slot]() for slot in SEGMENT_TEMPLATES[name]}, **slots)


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every segment statement this module fills alone, per sample segment (tests EXPLAIN them all)."""
    for name in SEGMENT_TEMPLATES.keys() - _CALLER_SLOTS:
        for compiled in samples:
            yield name, segment_query(name, compiled)


@lru_cache(maxsize=256)
def count_query(name: str, compiled: CompiledSegment) -> str:
    """The text ``count_matches`` or ``count_audience`` (``name``) reads for this segment: the union of
    its arms counted (with the static members and the age rule for ``count_audience``), built once."""
    if name == "count_matches":
        arms = [
            _arm_text(arm, compiled, tenant="$tenantId", extra="", bind_c=False, paged=False)
            for arm in compiled.arms
        ]
    else:
        static = "MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign {id: $campaignId})\n"
        arms = [f"{static}WHERE {{{{AUDIENCE_AGE_OK_HERE}}}}\nRETURN p"] + [
            _arm_text(
                arm, compiled, tenant="c.tenantId", extra="{{AUDIENCE_AGE_OK}}", bind_c=True, paged=False
            )
            for arm in compiled.arms
        ]
    return fill("CALL () {\n" + "\n  UNION\n".join(arms) + "\n}\nRETURN count(p) AS n", name=name, slots={})


def count_matches(
    tx: Statements, compiled: CompiledSegment, *, tenant_id: str, now: datetime, params: dict[str, Any]
) -> int:
    """How many of the tenant's profiles the segment matches now (``campaigns.previewSegment``)."""
    if not compiled.arms:
        return 0
    text = count_query("count_matches", compiled)
    row = tx.run(text, tenantId=tenant_id, **params, **compiled.params(now)).single()
    return 0 if row is None else int(row["n"])


def count_audience(
    tx: Statements, compiled: CompiledSegment, *, campaign_id: str, now: datetime, params: dict[str, Any]
) -> int:
    """The distinct profiles a segmented campaign reaches now: static members and the segment's
    matches in its tenant, each passing the campaign age policy or routed to guardians (``AUDIENCE_AGE_OK``;
    ``getStats.audience``). One pass over the members and the segment's candidates, as the static count
    is one pass over the members."""
    text = count_query("count_audience", compiled)
    row = tx.run(text, campaignId=campaign_id, **params, **compiled.params(now)).single()
    return 0 if row is None else int(row["n"])


def leaf_verdicts(
    tx: Statements, compiled: CompiledSegment, *, profile_id: str, now: datetime, params: dict[str, Any]
) -> list[bool]:
    """Each leaf condition's own verdict (before its ``not``) for one profile: one unique seek."""
    if not compiled.leaves:
        return []
    listed = ", ".join(f"coalesce({predicate}, false)" for *_, predicate in compiled.leaves)
    row = tx.run(
        f"MATCH (p:Profile {{profileId: $profileId}}) RETURN [{listed}] AS verdicts",
        profileId=profile_id,
        **params,
        **compiled.params(now),
    ).single()
    return [] if row is None else [bool(v) for v in row["verdicts"]]
