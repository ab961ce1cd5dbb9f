"""Live segments compiled into Cypher: who a segment matches, evaluated where it is read.

A campaign's audience is its static members (``IN_CAMPAIGN_AUDIENCE``) plus every profile of its tenant
its ``segment`` matches at that moment. ``compile_segment`` turns the rule tree into:

- one boolean **predicate** over ``p`` (every condition a fixed fragment, every value a parameter:
  nothing the admin typed is ever spelled into the statement), and
- the **arms** to find candidates with: each seeks an index for a positive condition the rule cannot
  match without (an ``all`` takes its most selective child, estimated from degrees and bounded index
  counts; an ``any`` needs one per branch). ``memberOf`` and the audience itself read the
  ``audience_member`` relationship index in profileId order, a tag the ``tag_member`` one; a
  connection and an engagement seek their node by its unique key and expand; locale, zone and age seek
  ``profile_locale``, ``profile_time_zone`` and ``profile_dob`` and, for a tenant's campaign, the
  same facts on its views (``tenant_view_*``). So a page costs the segment's candidates, never all
  profiles. Each arm carries what a candidate it finds must still meet (its ``residual``: the
  conditions its path through the rule leaves open), which it tests once the seek has found ``p``.

Every fact is read as the campaign's tenant reads it (docs/people.md, ``segment_facts.py``): its view's
property over the shared one, its own tag and connection lists once its view named them, never another
tenant's; the tenant is a parameter of the compiled rule, so the predicate needs nothing bound.

The statements built from a compiled segment (the audience page every reader starts with, the
counts, the per-leaf verdicts) are ``graph/rules/segment_statements.py``.

Referenced campaigns are the tenant's refs, resolved in the campaign's own tenant when the segment is
compiled (a walk compiles once, ``SegmentCache``); a ``memberOf`` campaign's own segment joins its members
(cycles are refused by ``segment_check.py`` and cut here too). A missing campaign matches nobody.

Past 350 lines on purpose: the compiler and the limits its ``memberOf`` expansion keeps are one walk.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from campaign_engine.domain import segment as limits
from campaign_engine.domain.segment import ENGAGED_PROPERTY, Segment, condition_of
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Statements
from campaign_engine.graph.rules.segment_compiled import Arm, CompiledSegment
from campaign_engine.graph.rules.segment_facts import (
    fact_seeks,
    own_list,
    own_list_of_p,
    view_fact,
    with_view,
)

__all__ = [
    "Arm",
    "CompiledSegment",
    "SegmentCache",
    "compile_for",
    "compile_segment",
    "resolve_refs",
    "segment_of",
]

# Index counts stop here: an estimate only has to rank the candidates of one `all`.
_ESTIMATE_CAP = 20_000


def segment_of(campaign: Mapping[str, Any]) -> Segment | None:
    """The segment a stored campaign node carries, if any."""
    raw = json.loads(campaign.get("definition") or "{}").get("segment")
    return None if raw is None else Segment.model_validate(raw)


_RESOLVE = "segment_resolve_refs"  # cypher/graph/rules/segment_resolve_refs.cypher


def resolve_refs(tx: Statements, tenant_id: str | None, refs: set[str]) -> dict[str, dict[str, Any]]:
    """The tenant's campaigns among ``refs``: storage id and definition by ref (None tenant: none)."""
    if not refs or tenant_id is None:
        return {}
    rows = tx.run(statement(_RESOLVE), tenantId=tenant_id, refs=sorted(refs))
    return {str(r["ref"]): {"id": r["id"], "definition": r["definition"]} for r in rows}


# ---------------------------------------------------------------------------------------------------
# Compiling


class _Compiler:
    def __init__(self, tx: Statements, tenant_id: str | None, *, strict: bool = False) -> None:
        self._tx = tx
        self._tenant = tenant_id
        self._strict = strict  # refuse a memberOf expansion past the limits (else: inline no more)
        self.conditions = 0  # counting the inlined campaigns' own (limit 'conditions')
        self.values: dict[str, Any] = {}
        self.ages: dict[str, int] = {}
        self.leaves: list[tuple[str, str, bool, str]] = []
        self._inlined = 0
        self._tenant_name: str | None = None

    def _tenant_param(self) -> str:
        """The parameter holding the campaign's tenant, whose view of each person the rule reads."""
        if self._tenant_name is None:
            self._tenant_name = self._param(self._tenant)
        return self._tenant_name

    def _fact_arms(self, prop: str, op: str, value: str, estimated: Any) -> list[Arm]:
        """The arms of ``prop op $value`` (``segment_facts.fact_seeks``); ``estimated``: the value to
        estimate each seek with (None: not estimated, as an age's cutoff is computed per evaluation).
        One arm unites the seeks (the shared fact's and the views'): they find candidates for the same
        tests, and each arm costs its own planning (about 0.1 s of CPU)."""
        tenant = None if self._tenant is None else self._tenant_param()
        first, *rest = fact_seeks(prop, op, value, tenant)
        more = tuple((seek.match, seek.where) for seek in rest)
        if estimated is None:
            return [Arm(first.match, first.where, "p.profileId", _ESTIMATE_CAP, more=more)]
        n = sum(self._count(seek.estimate, s=estimated, t=self._tenant) for seek in (first, *rest))
        return [Arm(first.match, first.where, "p.profileId", n, more=more)]

    def _param(self, value: Any) -> str:
        name = f"seg{len(self.values) + len(self.ages)}"
        self.values[name] = value
        return name

    def _age(self, years: int) -> str:
        name = f"seg{len(self.values) + len(self.ages)}"
        self.ages[name] = years
        return name

    def _campaign(self, ref: str) -> dict[str, Any] | None:
        return resolve_refs(self._tx, self._tenant, {ref}).get(ref)

    def _count(self, statement: str, **params: Any) -> int:
        row = self._tx.run(statement, cap=_ESTIMATE_CAP, **params).single()
        return 0 if row is None or row["n"] is None else int(row["n"])

    # A compiled rule: (predicate, arms or None when it cannot be sought)
    def rule(self, node: Segment, path: str, visiting: frozenset[str]) -> tuple[str, list[Arm] | None]:
        """The node's predicate and its arms (None: it cannot be sought), each arm's ``residual`` what a
        candidate it finds must still meet to match the node: an arm tests only the conditions its own
        path through the rule leaves open, not the whole rule (each condition an arm tests costs its
        planning, and the largest admitted rule's arms tested all six)."""
        if isinstance(node.not_, Segment):
            inner, _ = self.rule(node.not_, f"{path}.not", visiting)
            return f"(NOT {inner})", None
        if node.all is not None:
            parts = [self.rule(child, f"{path}.all.{i}", visiting) for i, child in enumerate(node.all)]
            sought = [(k, arms) for k, (_, arms) in enumerate(parts) if arms is not None]
            chosen = min(sought, key=lambda ka: sum(a.estimate for a in ka[1])) if sought else None
            predicate = "(" + " AND ".join(p for p, _ in parts) + ")"
            if chosen is None:
                return predicate, None
            k, best = chosen  # what the chosen child's arms find must meet every other child too
            rest = [p for i, (p, _) in enumerate(parts) if i != k]
            return predicate, [replace(arm, residual=_and(arm.residual or "true", *rest)) for arm in best]
        if node.any is not None:
            # An arm finds candidates for its own branch: meeting that branch, they meet the any.
            parts = [self.rule(child, f"{path}.any.{i}", visiting) for i, child in enumerate(node.any)]
            arms = None if any(a is None for _, a in parts) else [x for _, a in parts for x in a or []]
            return "(" + " OR ".join(p for p, _ in parts) + ")", arms
        condition = condition_of(node)
        assert condition is not None
        self.conditions += 1
        predicate, arms = self.condition(node, condition, visiting, path)
        self.leaves.append((path.lstrip("."), _wire_name(condition), node.negated, predicate))
        if node.negated:
            return f"(NOT {predicate})", None
        exact = len(arms) == 1 and arms[0].exact  # what the one seek finds is what the condition matches
        return predicate, [
            arm if arm.residual is not None else replace(arm, residual="true" if exact else predicate)
            for arm in arms
        ]

    def condition(
        self, node: Segment, condition: str, visiting: frozenset[str], path: str
    ) -> tuple[str, list[Arm]]:
        if condition == "tag":
            s, t = self._param(node.tag), self._tenant_param()
            n = self._count(
                "OPTIONAL MATCH (t:Tag {slug: $s}) RETURN COUNT { (t)<-[:HAS_TAG]-() } AS n", s=node.tag
            )
            predicate = (
                f"EXISTS {{ (p)-[segTag:HAS_TAG]->(:Tag {{slug: ${s}}}) WHERE {own_list_of_p('segTag', t)} }}"
            )
            return predicate, [
                Arm("MATCH (p:Profile)-[segG:HAS_TAG]->(:Tag)"
                     " USING INDEX SEEK segG:HAS_TAG(slug, profileId)",
                     f"segG.slug = ${s} AND segG.profileId > $cursor", "segG.slug, segG.profileId", n,
                     exact=True, viewed=own_list_of_p("segG", t))
            ]  # fmt: skip
        if condition == "connected_to":
            s, t = self._param(node.connected_to), self._tenant_param()
            n = self._count(
                "OPTIONAL MATCH (q:Profile {profileId: $s}) RETURN COUNT { (q)-[:CONNECTED_WITH]-() } AS n",
                s=node.connected_to,
            )
            # The named person's connections in the tenant (their list there), and only if they are
            # of the tenant: a connection outside it is nobody's business of this tenant.
            of_tenant = f"${t} IN coalesce(segQ.tenants, []) AND {own_list('segQ', 'segR', t, 'connections')}"
            predicate = (
                f"EXISTS {{ (p)-[segR:CONNECTED_WITH]-(segQ:Profile {{profileId: ${s}}}) WHERE {of_tenant} }}"
            )
            return predicate, [
                Arm(f"MATCH (segQ:Profile {{profileId: ${s}}})-[segR:CONNECTED_WITH]-(p:Profile)"
                     " USING INDEX segQ:Profile(profileId)", of_tenant, "p.profileId", n, exact=True)
            ]  # fmt: skip
        if condition == "locale":
            s, dash = self._param(node.locale), self._param(f"{node.locale}-")
            locale = view_fact("locale")
            predicate = f"coalesce({locale} = ${s} OR {locale} STARTS WITH ${dash}, false)"
            return predicate, self._fact_arms("locale", "STARTS WITH", s, node.locale)
        if condition == "time_zone":
            s = self._param(node.time_zone)
            arms = self._fact_arms("timeZone", "=", s, node.time_zone)
            return f"coalesce({view_fact('timeZone')} = ${s}, false)", arms
        if condition in ("age_at_least", "age_below"):
            # Only a known age matches (the age policy's dob rule, domain/age_policy.py); the campaign's
            # age policy still applies to whoever matches, as to static members.
            years = node.age_at_least if condition == "age_at_least" else node.age_below
            assert years is not None
            s = self._age(years)
            op = "<=" if condition == "age_at_least" else ">"
            dob = view_fact("dob")
            arms = self._fact_arms("dob", op, s, None)
            return f"coalesce({dob} =~ $dobPattern AND {dob} {op} ${s}, false)", arms
        if condition == "member_of":
            return self.member_of(node.member_of or "", visiting, path)
        assert node.engaged is not None
        target = self._campaign(node.engaged.campaign_id)
        if target is None:
            return "false", []
        s = self._param(target["id"])
        prop = ENGAGED_PROPERTY[node.engaged.event]
        n = self._count(
            "OPTIONAL MATCH (x:Campaign {id: $s}) RETURN COUNT { (x)<-[:CAMPAIGN_STATE]-() } AS n",
            s=target["id"],
        )
        predicate = (
            f"EXISTS {{ (p)-[segS:CAMPAIGN_STATE]->(:Campaign {{id: ${s}}}) WHERE segS.{prop} IS NOT NULL }}"
        )
        return predicate, [
            Arm(f"MATCH (segX:Campaign {{id: ${s}}})<-[segS:CAMPAIGN_STATE]-(p:Profile)"
                 " USING INDEX segX:Campaign(id)", f"segS.{prop} IS NOT NULL", "p.profileId", n, exact=True)
        ]  # fmt: skip

    def member_of(self, ref: str, visiting: frozenset[str], path: str) -> tuple[str, list[Arm]]:
        target = self._campaign(ref)
        if target is None or ref in visiting:
            return "false", []
        s = self._param(target["id"])
        n = self._count(
            "OPTIONAL MATCH (x:Campaign {id: $s}) RETURN COUNT { (x)<-[:IN_CAMPAIGN_AUDIENCE]-() } AS n",
            s=target["id"],
        )
        predicate = f"EXISTS {{ (p)-[:IN_CAMPAIGN_AUDIENCE]->(:Campaign {{id: ${s}}}) }}"
        arms = [
            Arm("MATCH (p:Profile)-[segM:IN_CAMPAIGN_AUDIENCE]->(:Campaign)"
                 " USING INDEX SEEK segM:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)",
                 f"segM.campaignId = ${s} AND segM.profileId > $cursor", "segM.campaignId, segM.profileId", n,
                 exact=True)
        ]  # fmt: skip
        inner = segment_of(target)
        if inner is not None and self._fits(inner, ref, path):
            arms = [replace(arms[0], residual="true")]  # a member meets the memberOf; so does the inner
            self._inlined += 1  # segment's match, each inner arm testing what its path leaves open
            leaves = len(self.leaves)
            inner_predicate, inner_arms = self.rule(inner, "", visiting | {ref})
            del self.leaves[leaves:]  # the explanation names this memberOf, not the other campaign's rules
            predicate = f"({predicate} OR {inner_predicate})"
            arms += inner_arms or []
        return predicate, arms

    def _fits(self, inner: Segment, ref: str, path: str) -> bool:
        """Whether ``ref``'s own segment may join the rule (limits 'memberOf expansion', 'conditions'):
        past one a strict compile refuses, a read of an older rule inlines no more (members only)."""
        conditions = self.conditions + limits.conditions_in(inner)
        if self._inlined < limits.MAX_INLINED and conditions <= limits.MAX_CONDITIONS:
            return True
        if self._strict:
            where = (*[int(p) if p.isdigit() else p for p in path.split(".") if p], "memberOf")
            if self._inlined >= limits.MAX_INLINED:
                limits.refuse(
                    where,
                    limits.over_limit("memberOf expansion", self._inlined + 1, "too many segments inlined"),
                )
            limits.refuse(
                where,
                limits.over_limit("conditions", conditions, f"too many conditions with campaign '{ref}'"),
            )
        return False


def _and(*tests: str) -> str:
    """The conjunction of ``tests``, ``true`` dropped."""
    kept = [t for t in tests if t != "true"]
    return "true" if not kept else kept[0] if len(kept) == 1 else "(" + " AND ".join(kept) + ")"


def _wire_name(condition: str) -> str:
    return Segment.model_fields[condition].alias or condition


def compile_segment(
    tx: Statements, segment: Segment, *, tenant_id: str | None, own_ref: str | None, strict: bool = False
) -> CompiledSegment:
    """The segment as Cypher for the campaign of ``own_ref`` in ``tenant_id``; a handful of small reads
    (referenced campaigns, the degree or bounded index count of each condition's seek). ``strict``:
    refuse a ``memberOf`` expansion past the limits (saving, previewing) instead of inlining no more."""
    compiler = _Compiler(tx, tenant_id, strict=strict)
    visiting = frozenset({own_ref}) if own_ref else frozenset()
    predicate, arms = compiler.rule(segment, "", visiting)
    tenant = compiler._tenant_param()
    # The predicate reads p's view once (segment_facts.with_view); an arm binds it once before its tests.
    return CompiledSegment(
        predicate=with_view(predicate, tenant),
        rule=predicate,
        tenant=tenant,
        arms=tuple(arms or ()),
        leaves=tuple(
            (path, name, negated, with_view(text, tenant)) for path, name, negated, text in compiler.leaves
        ),
        values=tuple(compiler.values.items()),
        ages=tuple(compiler.ages.items()),
    )


class SegmentCache:
    """Compiled segments of the walks this process serves: one compile per walk (dispatch) and
    definition, not per page. Bounded; a campaign edited mid-walk compiles again."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str, str], CompiledSegment | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tx: Statements, *, dispatch_id: str, campaign: Mapping[str, Any]) -> CompiledSegment | None:
        key = (dispatch_id, str(campaign.get("id")), str(campaign.get("updatedAt")))
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        compiled = compile_for(tx, campaign)  # outside the lock: it reads the graph
        with self._lock:
            self._items[key] = compiled
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return compiled


def compile_for(tx: Statements, campaign: Mapping[str, Any]) -> CompiledSegment | None:
    """The compiled segment of a stored campaign node (``None``: static members only)."""
    try:
        segment = segment_of(campaign)
    except ValidationError:  # a definition saved by a newer release: evaluate nobody, never everyone
        return CompiledSegment("false", "false", "", (), (), (), ())
    if segment is None:
        return None
    return compile_segment(
        tx, segment, tenant_id=campaign.get("tenantId"), own_ref=campaign.get("ref") or campaign.get("id")
    )
