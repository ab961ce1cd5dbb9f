"""Checking a live segment before it is saved: the campaigns it names are the tenant's, no
``memberOf`` leads back to the campaign itself, and no age condition is one the campaign's age policy
leaves nobody to match; and the limits only the graph can tell (``memberOf`` expansion, compiled size,
domain/segment.py ``LIMITS``), checked on the compiled rule before Neo4j ever plans it. Each refusal is
BAD_REQUEST naming the rule's path (and the limit); compiling is ``graph/rules/segment.py``."""

from __future__ import annotations

from campaign_engine.domain.segment import (
    MAX_COMPILED_BYTES,
    Segment,
    campaign_refs,
    minor_only,
    over_limit,
    refuse,
)
from campaign_engine.graph.graph import Tx
from campaign_engine.graph.rules.segment import (
    CompiledSegment,
    compile_segment,
    resolve_refs,
    segment_of,
)

__all__ = ["check_segment"]


def check_segment(
    tx: Tx,
    segment: Segment,
    *,
    tenant_id: str | None,
    own_ref: str,
    excludes_minors: bool = False,
    adult_age: int | None = None,
) -> CompiledSegment:
    """BAD_REQUEST naming the path of the first campaign the segment names that is not one of the
        tenant's, of a ``memberOf`` that would make the campaign a member of itself, or (with
        ``adult_age``) of an age condition the campaign's age policy leaves nobody to match: ``ageBelow``
        the adult age in a campaign that excludes minors (domain/age_policy.py). Returns the rule compiled
    (strictly: a ``memberOf`` expansion past the limits is refused)."""
    if excludes_minors and adult_age is not None:
        for path, node in minor_only(segment, adult_age=adult_age):
            _refuse(
                path,
                f"the campaign excludes minors (excludeMinors), so ageBelow {node.age_below} reaches"
                f" nobody: the age policy needs a known age of {adult_age} or more",
            )
    named = list(campaign_refs(segment))
    found = resolve_refs(tx, tenant_id, {ref for _, ref in named})
    for path, ref in named:
        if ref == own_ref and path[-1] == "memberOf":
            _refuse(path, "a campaign cannot be a member of its own audience")
        if ref not in found and ref != own_ref:
            _refuse(path, f"campaign '{ref}' not found")
    # memberOf cycles: the campaigns reachable through memberOf must not lead back here.
    seen: set[str] = set()
    frontier = [(path, ref) for path, ref in named if path[-1] == "memberOf"]
    while frontier:
        path, ref = frontier.pop()
        if ref in seen:
            continue
        seen.add(ref)
        inner = segment_of(found.get(ref) or {"definition": "{}"}) if ref in found else None
        if inner is None:
            continue
        inner_named = [r for p, r in campaign_refs(inner) if p[-1] == "memberOf"]
        if own_ref in inner_named:
            _refuse(path, f"campaign '{ref}' is itself a segment over this campaign (memberOf cycle)")
        more = resolve_refs(tx, tenant_id, set(inner_named) - found.keys())
        found.update(more)
        frontier += [(path, r) for r in inner_named]
    compiled = compile_segment(tx, segment, tenant_id=tenant_id, own_ref=own_ref or None, strict=True)
    if compiled.size > MAX_COMPILED_BYTES:
        _refuse((), over_limit("compiled size", compiled.size, "the rule compiles to too much Cypher"))
    return compiled


_refuse = refuse
