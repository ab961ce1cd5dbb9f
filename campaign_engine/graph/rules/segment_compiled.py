"""What a live segment compiles to (``segment.py`` compiles it, ``segment_statements.py`` spells the
statements): the seeks that find its candidates and the rule they test, fixed text beside the values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from campaign_engine.domain.age_policy import adult_dob_cutoff
from campaign_engine.graph.rules.segment_facts import bind_view

__all__ = ["Arm", "CompiledSegment"]


@dataclass(frozen=True)
class Arm:
    """One seek a compiled segment finds candidates with (``segment_statements.py`` spells it)."""

    match: str  # MATCH ... binding p (with its index hint)
    where: str  # the anchor's own index predicate
    order: str  # the keyset order key (an index-ordered one where there is one)
    estimate: int
    exact: bool = False  # what the seek finds meets its condition: the arm need not test it again
    residual: str | None = None  # what the arm must still test (None: the whole rule)
    viewed: str | None = None  # the seek's own test that reads p's view (``segP``), once it is bound
    more: tuple[tuple[str, str], ...] = ()  # further (match, where) seeks united with this one's


@dataclass(frozen=True)
class CompiledSegment:
    """A segment as Cypher: ``predicate`` and ``arms`` are fixed text (hashable, so statements built
    from them are cached); ``params`` are the values, with age cutoffs computed per evaluation."""

    predicate: str  # the rule as one expression over ``p`` (it binds p's view itself)
    rule: str  # the rule over ``p`` and ``segP``, p's view as an arm binds it (``segment_facts.bind_view``)
    tenant: str  # the parameter holding the campaign's tenant
    arms: tuple[Arm, ...]
    leaves: tuple[tuple[str, str, bool, str], ...]
    """(path, condition, negated, predicate of the condition alone) per leaf, for explainRecipient."""
    values: tuple[tuple[str, Any], ...] = field(compare=False)
    ages: tuple[tuple[str, int], ...] = field(compare=False)

    @property
    def size(self) -> int:
        """Characters of the rule's own text (limit 'compiled size'): the predicate, and every seek with
        what it tests (its view's binding, ``bind_view``, where it tests anything)."""
        bind = len(bind_view(self.tenant))
        return len(self.predicate) + sum(
            len(a.match) + len(a.where) + sum(len(m) + len(w) for m, w in a.more)
            + len(a.viewed or "") + len(a.residual or "")
            + (bind if a.viewed or (a.residual or self.rule) != "true" else 0)
            for a in self.arms
        )  # fmt: skip

    def params(self, now: datetime) -> dict[str, Any]:
        today = now.astimezone(UTC).date()
        return {**dict(self.values), **{name: adult_dob_cutoff(today, years) for name, years in self.ages}}
