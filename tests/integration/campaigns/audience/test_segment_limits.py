"""Rules with a budget, against the real Neo4j: a rule at every limit is admitted and one past it is
BAD_REQUEST naming the limit (through the API, as the console shows it); the largest rule the limits
admit compiles and every statement it feeds plans in under a second; and a rule's values are
parameters, so two rules of one shape are one statement text (one plan in Neo4j's cache)."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.config import Settings
from campaign_engine.domain.segment import LIMITS, MAX_CONDITIONS, MAX_DEPTH, MAX_INLINED, Segment
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.segment import compile_segment
from campaign_engine.graph.rules.segment_check import check_segment
from campaign_engine.graph.rules.segment_statements import SEGMENT_TEMPLATES, count_query, segment_query
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import make_campaign

_FACTS: list[dict[str, Any]] = [{"locale": "fr"}, {"timeZone": "Europe/Paris"}, {"ageAtLeast": 30}]

# The largest rule the limits admit, by what Neo4j must plan: every condition, each level of nesting,
# an any (each branch is a seek of its own) and both memberOf expansions (with their conditions).
LARGEST: dict[str, Any] = {
    "all": [
        {"any": [{"all": [{"tag": "a"}, {"locale": "fr"}]}, {"memberOf": "one"}]},
        {"memberOf": "two"},
    ]
}
# The largest admitted rule plans in under 1 s of CPU on this machine in the JVM production runs (C2),
# for every statement it feeds: the audience page, the export, the preview count, the dispatch
# confirmation (this test alone on a 2-core machine shared with other work, Bolt threads, lower of two:
# export_segment_recipients 0.61 s, dispatch_preview 0.60 s, audience_segment_page 0.54 s,
# count_matches 0.22 s; the shape before, the whole rule in every seek's WHERE, planned the export in
# 3.4 s and the audience page in 3.7 s). The suite's Neo4j may meet this test before C2 has compiled its
# planner (tests/conftest.py: SESSION_JIT), and a planner compiled by C1 only plans these at 2.1 to 2.5
# times the CPU (export and audience page 1.37 s alone), so the budget is 2.5 times as large: the shape
# before planned its export in 6.2 s under C1, and fails it.
_COLD_JIT_FACTOR = 2.5
_PLAN_BUDGET_SECONDS = 1.0 * _COLD_JIT_FACTOR
# The reads of a segment a request waits for: getAudience, the export, previewSegment, the dispatch
# confirmation's preview.
_READS = ("audience_segment_page", "export_segment_recipients", "count_matches", "dispatch_preview")


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    make_campaign(graph, "one", segment={"tag": "c"})
    make_campaign(graph, "two", segment={"ageAtLeast": 21})
    make_campaign(graph, "three", segment={"tag": "d"})
    make_campaign(graph, "wide", segment={"all": [{"tag": f"w{i}"} for i in range(MAX_CONDITIONS)]})
    with api_client(base_settings, graph) as client:
        yield client


def _preview(api: TrpcClient, segment: dict[str, Any]) -> Any:
    return api.mutate("campaigns.previewSegment", {"segment": segment}, as_=ADMIN_ID, admin=True)


def _nested(depth: int) -> dict[str, Any]:
    rule: dict[str, Any] = {"tag": "deep"}
    for _ in range(depth - 1):
        rule = {"all": [rule]}
    return rule


PAST: dict[str, dict[str, Any]] = {
    "depth": _nested(MAX_DEPTH + 1),
    "conditions": {"all": [{"tag": f"t{i}"} for i in range(MAX_CONDITIONS + 1)]},
    "memberOf expansion": {"any": [{"memberOf": ref} for ref in ("one", "two", "three")]},
    "memberOf conditions": {"all": [{"tag": "x"}, {"memberOf": "wide"}]},
    "compiled size": {"any": [_FACTS[i % 3] for i in range(MAX_CONDITIONS)]},  # two seeks per fact
}  # fmt: skip


def test_a_rule_at_every_limit_is_admitted(api: TrpcClient) -> None:
    assert len(PAST["memberOf expansion"]["any"]) == MAX_INLINED + 1
    for rule in (LARGEST, _nested(MAX_DEPTH), {"all": [{"tag": f"t{i}"} for i in range(MAX_CONDITIONS)]}):
        assert ok(_preview(api, rule)) == {"matches": 0}, rule


@pytest.mark.parametrize("limit", sorted(PAST))
def test_a_rule_past_a_limit_is_bad_request_naming_it(api: TrpcClient, limit: str) -> None:
    response = _preview(api, PAST[limit])
    assert error_code(response) == "BAD_REQUEST", response.text
    named = limit.replace("memberOf conditions", "conditions")
    assert f"limit '{named}' is {LIMITS[named]}" in response.text, response.text


# The JVM's own service threads: their CPU is compilation and collection, not this statement's planning.
_SERVICE_THREADS = ("C1 CompilerThre", "C2 CompilerThre", "GC Thread", "G1 ", "VM Thread", "VM Periodic")


def _neo4j_cpu(uri: str) -> float | None:
    """CPU seconds of the local launcher serving ``uri`` (None: not ours to read), less its JVM service
    threads. Planning is CPU in one Bolt thread: timing it so holds on a machine shared with other runs,
    where wall time does not, and leaves out the JIT compiling and collecting for the whole suite."""
    port = uri.rsplit(":", 1)[-1]
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"neo4j-launcher.jar" in b" ".join(argv) and port.encode() in argv:
            return sum(_thread_cpu(task) for task in (proc / "task").iterdir())
    return None


def _thread_cpu(task: Path) -> float:
    try:
        if (task / "comm").read_text().startswith(_SERVICE_THREADS):
            return 0.0
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # the thread ended while it was read
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _plan_seconds(graph: Graph, text: str, uri: str) -> float:
    """One planning of ``text`` (a fresh comment: Neo4j caches plans by text)."""
    cpu, wall = _neo4j_cpu(uri), time.monotonic()
    with graph.driver.session(database=graph.database) as session:
        session.run(f"EXPLAIN {text}\n// {random.random()}").consume()
    after = _neo4j_cpu(uri)
    return after - cpu if cpu is not None and after is not None else time.monotonic() - wall


def test_the_largest_admitted_rule_compiles_and_plans_within_its_budget(
    api: TrpcClient, graph: Graph, base_settings: Settings
) -> None:
    segment = Segment.model_validate(LARGEST)
    started = time.process_time()
    compiled = graph.read(lambda tx: check_segment(tx, segment, tenant_id="default", own_ref="c1"))
    compiling = time.process_time() - started
    uri = base_settings.neo4j_uri
    texts = {
        n: count_query(n, compiled) if n == "count_matches" else segment_query(n, compiled) for n in _READS
    }
    plans = {  # the lower of two plannings: the first may pay for planner code paths not yet run
        name: min(_plan_seconds(graph, text, uri) for _ in (1, 2)) for name, text in texts.items()
    }
    worst = max(plans, key=plans.__getitem__)
    print(f"compiled in {compiling:.3f} s; planned (Neo4j CPU s): {plans}")
    assert compiling + plans[worst] < _PLAN_BUDGET_SECONDS, (compiling, plans)


def test_two_rules_of_one_shape_are_one_statement_text(api: TrpcClient, graph: Graph) -> None:
    def compiled(values: tuple[str, str, int]) -> Any:
        tag, locale, age = values
        rule = {"all": [{"tag": tag}, {"any": [{"locale": locale}, {"ageAtLeast": age}]}]}
        segment = Segment.model_validate(rule)
        return graph.read(lambda tx: compile_segment(tx, segment, tenant_id="default", own_ref=None))

    first, second = compiled(("alpha", "fr", 30)), compiled(("beta", "de", 65))
    assert first == second  # the texts compare; the values do not
    for name in SEGMENT_TEMPLATES.keys() - {"email_page"}:
        assert segment_query(name, first) == segment_query(name, second)
    assert dict(first.values) != dict(second.values)
    assert "alpha" not in segment_query("dispatch_page", first)
