"""Every statement in ``cypher/``, filled as the code fills it, is EXPLAINed once against the real Neo4j
with the schema applied: a typo, an unknown function or a hint on a missing index fails here, not in a
send. The variants come from the code (``graph/catalog.py``: each filler's ``statement_variants``), and
the live-segment ones from sample segments compiled here, one per condition and combinator, so every
arm shape and the referenced-campaign paths are planned.

EXPLAIN in Neo4j 5 plans without the parameters (it warns that the plan cannot be cached), so none are
passed: what fails is what the statement text gets wrong. ``schema.cypher`` is applied by the session
fixture itself (``apply_schema``), which is how it is checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from neo4j.exceptions import CypherSyntaxError, Neo4jError

from campaign_engine.domain.segment import Segment
from campaign_engine.graph.catalog import filled_statements
from campaign_engine.graph.cypher import statement, statement_paths
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.segment import CompiledSegment, compile_segment

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


# Planning is the costly part (minutes for every variant on two cores): the statements are dealt into
# shards, so the suite's workers plan them side by side; together the shards plan every one.
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_statement_and_variant_plans(graph: Graph, shard: int) -> None:
    statements = list(filled_statements(_samples(graph)))
    failures: list[str] = []
    with graph.driver.session(database=graph.database, notifications_min_severity="OFF") as session:
        for name, text in statements[shard::SHARDS]:
            try:
                session.run("EXPLAIN " + text).consume()
            except Neo4jError as exc:
                failures.append(f"{name}: {exc.message}")
    assert not failures, "\n\n".join(failures)


def test_the_shards_cover_every_statement_and_variant(graph: Graph) -> None:
    statements = list(filled_statements(_samples(graph)))
    planned = {name for name, _ in statements}
    assert planned == {n for n, p in statement_paths().items() if p.parent.name != "fragments"} - {"schema"}
    assert len(statements) > len(planned)  # the segment, cap, routing, event and audit variants too
    dealt = [pair for shard in range(SHARDS) for pair in statements[shard::SHARDS]]
    assert sorted(dealt) == sorted(statements)


def test_a_typo_fails_the_explain(graph: Graph) -> None:
    text = statement("dispatch_advance")
    with graph.driver.session(database=graph.database, notifications_min_severity="OFF") as session:
        session.run("EXPLAIN " + text).consume()
        with pytest.raises(CypherSyntaxError):
            session.run("EXPLAIN " + "RETRUN".join(text.rsplit("RETURN", 1))).consume()
