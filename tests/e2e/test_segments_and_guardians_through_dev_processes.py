"""Live segments and guardian routing, end to end through ``make dev``'s processes
(``bench/audience_routing.py``, here on a small fixture; the same run at 100,000 profiles is the bench): a
live segment reaches a profile tagged after its dispatch started in a later wave, and a guardian-routed
campaign reaches no minor and exactly one announcement per consenting adult guardian and adult member, as an
independent Cypher count says."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.audience_routing import run
from campaign_engine.graph.graph import Graph

pytestmark = pytest.mark.e2e


def test_a_live_segment_and_guardian_routing_through_the_dev_processes(
    tmp_path: Path,
    neo4j_uri: str,
    graph: Graph,  # the session's Neo4j, emptied
) -> None:
    figures = run(tmp_path, profiles=600, page_size=50, say=lambda _: None, graph_uri=neo4j_uri)
    assert figures["segment_recipients"] == 259  # every `news` profile, the late one included
    assert figures["routed_recipients"] > figures["guardians"] > 0
