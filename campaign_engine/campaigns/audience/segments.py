"""Live segments at the API: ``campaigns.previewSegment`` counts a rule's matches before it
is saved, and ``explain_segment`` gives ``explainRecipient`` each condition's verdict for one profile.

Both compile the rule with ``graph/rules/segment.py``, the compiler every audience reader uses (preview,
page walks, getAudience), so a count or an explanation cannot disagree with a send.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.domain.segment import Segment, SegmentPreview, SegmentRule
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.segment import CompiledSegment
from campaign_engine.graph.rules.segment_check import check_segment
from campaign_engine.graph.rules.segment_statements import count_matches, leaf_verdicts

__all__ = [
    "ConditionVerdict",
    "SegmentExplanation",
    "SegmentInput",
    "explain_segment",
    "preview_segment",
]


class SegmentInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    segment: SegmentRule


def preview_segment(
    graph: Graph, *, segment: Segment, tenant_id: str, now: datetime, adult_age: int
) -> SegmentPreview:
    """How many of the tenant's profiles ``segment`` matches now (before any campaign's age policy,
    opt-outs or caps: those apply per campaign and channel, as ``previewDispatch`` counts them)."""

    def tx_fn(tx: Tx) -> int:
        compiled = check_segment(tx, segment, tenant_id=tenant_id, own_ref="")
        return count_matches(tx, compiled, tenant_id=tenant_id, now=now, params=policy_params(now, adult_age))

    return SegmentPreview(matches=graph.read(tx_fn))


class ConditionVerdict(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    path: str = Field(description="where the condition sits in the rule, e.g. all.1")
    condition: str
    negated: bool
    holds: bool = Field(description="whether the condition itself holds for the profile")
    ok: Annotated[bool, Field(description="holds, or not when negated: what the rule counts")]


class SegmentExplanation(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    matched: bool
    conditions: list[ConditionVerdict]


def explain_segment(
    tx: Tx,
    compiled: CompiledSegment,
    segment: Segment,
    *,
    profile_id: str,
    now: datetime,
    params: dict[str, Any],
) -> SegmentExplanation:
    """Each leaf condition's verdict for one profile, and the whole rule's, folded in Python the way
    the compiled predicate folds it in Cypher."""
    holds = leaf_verdicts(tx, compiled, profile_id=profile_id, now=now, params=params)
    conditions = [
        ConditionVerdict(path=path, condition=name, negated=negated, holds=h, ok=h != negated)
        for (path, name, negated, _), h in zip(compiled.leaves, holds, strict=True)
    ]
    verdicts = {c.path: c.ok for c in conditions}
    return SegmentExplanation(matched=_fold(segment, "", verdicts), conditions=conditions)


def _fold(node: Segment, path: str, verdicts: dict[str, bool]) -> bool:
    if isinstance(node.not_, Segment):
        return not _fold(node.not_, f"{path}.not".lstrip("."), verdicts)
    if node.all is not None:
        return all(_fold(child, f"{path}.all.{i}".lstrip("."), verdicts) for i, child in enumerate(node.all))
    if node.any is not None:
        return any(_fold(child, f"{path}.any.{i}".lstrip("."), verdicts) for i, child in enumerate(node.any))
    return verdicts.get(path, False)
