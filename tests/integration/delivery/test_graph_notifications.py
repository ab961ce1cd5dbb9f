"""open_graph turns server notifications off (no "property does not exist" log per query); errors stay."""

from __future__ import annotations

import logging

import pytest
from neo4j.exceptions import CypherSyntaxError

from campaign_engine.graph.graph import Graph


def test_advice_is_not_logged_but_errors_still_raise(graph: Graph, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="neo4j"):
        graph.run("MATCH (p:Profile) WHERE p.propertyNobodyEverSet IS NOT NULL RETURN p LIMIT 1")
    assert [r for r in caplog.records if r.name.startswith("neo4j.notifications")] == []
    with pytest.raises(CypherSyntaxError):
        graph.run("MATCH (p:Profile RETURN p")
