"""Every statement in ``cypher/``, filled as the code fills it, is EXPLAINed once against the real Neo4j
with the schema applied: a typo, an unknown function or a hint on a missing index fails here, not in a
send. The variants come from the code (``graph/catalog.py``: each filler's ``statement_variants``), and
the live-segment ones from sample segments compiled here, one per condition and combinator, so every
arm shape and the referenced-campaign paths are planned.

A live segment's audience head (``audience_head``) is the same text in every statement that reads the
audience, inside a ``CALL () {`` that imports nothing, so Neo4j plans it alone wherever it sits: each
head is planned once (in the first statement that carries it) and each statement around it once (with
the first sample's head), not every head in every statement (196 s of planning on two cores, 55 s so).

EXPLAIN in Neo4j 5 plans without the parameters (it warns that the plan cannot be cached), so none are
passed: what fails is what the statement text gets wrong. ``schema.cypher`` is applied by the session
fixture itself (``apply_schema``), which is how it is checked."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from neo4j.exceptions import CypherSyntaxError, Neo4jError

from campaign_engine.domain.segment import Segment
from campaign_engine.graph.catalog import filled_statements
from campaign_engine.graph.cypher import statement, statement_paths
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.segment import CompiledSegment, compile_segment
from campaign_engine.graph.rules.segment_statements import audience_head

# One of every condition and combinator; memberOf and engaged name campaigns that exist (a missing one
# compiles to `false`), and the memberOf target has a segment of its own, so it is inlined.
_SEGMENTS: list[dict[str, Any]] = [
    {"tag": "vip"},
    {"connectedTo": "u1"},
    {"locale": "fr"},
    {"timeZone": "Europe/Paris"},
    {"all": [{"ageAtLeast": 30}, {"ageBelow": 60}]},
    {"memberOf": "other"},
    {"engaged": {"campaignId": "other", "event": "shown"}},
    {"all": [{"tag": "a"}, {"locale": "en"}, {"tag": "b", "not": True}]},
    {"any": [{"tag": "a"}, {"connectedTo": "u2"}, {"memberOf": "other"}]},
]


def _samples(graph: Graph) -> list[CompiledSegment | None]:
    graph.run(
        "CREATE (:Campaign {id: 'c-other', tenantId: 't', ref: 'other', definition: $definition})",
        definition=json.dumps({"segment": {"tag": "inner"}}),
    )
    compiled: list[CompiledSegment | None] = [None]
    for raw in _SEGMENTS:
        segment = Segment.model_validate(raw)
        compiled.append(
            graph.read(lambda tx, s=segment: compile_segment(tx, s, tenant_id="t", own_ref="own"))
        )
    return compiled


_HEAD, _RULE = "{{HEAD}}", "{{RULE}}"
# Every variable a compiled segment binds is named seg...: a statement around one that named its own so
# could collide with some segments' variables only, which planning one sample would not show.
_SEGMENT_VARIABLE = re.compile(r"\bseg[A-Z]\w*")


def _parts(text: str, samples: list[CompiledSegment]) -> tuple[str | None, str | None, str]:
    """The segment head and rule ``text`` carries (the longest that occur) and ``text`` around them."""
    head = max((h for h in (audience_head(s) for s in samples) if h in text), key=len, default=None)
    shell = text if head is None else text.replace(head, _HEAD)
    rule = max((r for r in (s.predicate for s in samples) if r in shell), key=len, default=None)
    return head, rule, shell if rule is None else shell.replace(rule, _RULE)


def _to_plan(samples: list[CompiledSegment | None]) -> list[tuple[str, str]]:
    """Every statement and variant whose plan is not already another's. A segment's head
    (``audience_head``) is an import-free ``CALL () {`` and its rule a predicate over ``p``: Neo4j plans
    either the same in any statement, so a text is planned when it brings a head, a rule or a statement
    around them (its shell) not planned yet."""
    segments = [s for s in samples if s is not None]
    assert all(audience_head(s).startswith("CALL () {\n") for s in segments)
    seen: set[str | None] = {None}
    chosen: list[tuple[str, str]] = []
    for name, text in filled_statements(samples):
        head, rule, shell = _parts(text, segments)
        if head is None and (rule is None or _SEGMENT_VARIABLE.search(shell)):
            chosen.append((name, text))  # no segment, or one in another shape (a filtered head)
            continue
        assert not _SEGMENT_VARIABLE.search(shell), f"{name} names a variable as a segment does"
        if not {head, rule, shell} <= seen:
            seen |= {head, rule, shell}
            chosen.append((name, text))
    assert {audience_head(s) for s in segments} | {s.predicate for s in segments} <= seen
    return chosen


# Planning is the costly part (a minute on two cores): the statements are dealt into shards, so the
# suite's workers plan them side by side; together the shards plan every one.
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_statement_and_variant_plans(graph: Graph, shard: int) -> None:
    statements = _to_plan(_samples(graph))
    failures: list[str] = []
    with graph.driver.session(database=graph.database, notifications_min_severity="OFF") as session:
        for name, text in statements[shard::SHARDS]:
            try:
                session.run("EXPLAIN " + text).consume()
            except Neo4jError as exc:
                failures.append(f"{name}: {exc.message}")
    assert not failures, "\n\n".join(failures)


def test_the_shards_cover_every_statement_and_variant(graph: Graph) -> None:
    samples = _samples(graph)
    statements = _to_plan(samples)
    planned = {name for name, _ in statements}
    assert planned == {n for n, p in statement_paths().items() if p.parent.name != "fragments"} - {"schema"}
    assert len(statements) > len(planned)  # the segment, cap, routing, event and audit variants too
    dealt = [pair for shard in range(SHARDS) for pair in statements[shard::SHARDS]]
    assert sorted(dealt) == sorted(statements)
    # Every variant left out is a planned shell around a head and a rule that are planned too.
    segments = [s for s in samples if s is not None]
    planned_parts = {part for _, text in statements for part in _parts(text, segments)}
    for name, text in filled_statements(samples):
        assert set(_parts(text, segments)) - {None} <= planned_parts, name


def test_a_typo_fails_the_explain(graph: Graph) -> None:
    text = statement("dispatch_advance")
    with graph.driver.session(database=graph.database, notifications_min_severity="OFF") as session:
        session.run("EXPLAIN " + text).consume()
        with pytest.raises(CypherSyntaxError):
            session.run("EXPLAIN " + "RETRUN".join(text.rsplit("RETURN", 1))).consume()
