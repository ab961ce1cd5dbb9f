"""A large live segment's pages, this tree against a baseline release (not a test): prints both side by side.

    .venv/bin/python -m bench.segment_pages [--profiles 20000] [--baseline-ref b6eaec8] [--rounds 5]

Seeds ``--profiles`` profiles of one tenant (``NEO4J_URI`` names a database, which is wiped; else the
local launcher) and a campaign whose segment has the shape of the largest rule the limits admit
(``all`` of an ``any`` and a ``memberOf``, both ``memberOf`` campaigns' own segments inlined), matching
about a third of them. Then walks, ``--rounds`` times and alternating, the whole audience page
(``audience_segment_page``, getAudience's read) and the dispatch confirmation's preview
(``dispatch_preview``) with this tree's statements and the baseline's (``git archive REF``: its
``campaign_engine`` and ``cypher`` compile the same campaign in a child process), on the same graph.
Prints each walk's Neo4j CPU seconds (wall seconds where the database is not a local launcher) and
pages; then the first walk of each (it plans the statements) and the medians of the others, and a
RESULT line of the ratios (this tree / baseline). Both releases' walks must read the same profiles.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.local_neo4j import LocalNeo4j, repo_root
from campaign_engine.graph.schema import apply_schema

_PAGE = 500
_SEGMENT = {
    "all": [
        {"any": [{"all": [{"tag": "a"}, {"locale": "fr"}]}, {"memberOf": "one"}]},
        {"memberOf": "two"},
    ]
}
_CAMPAIGNS = {"one": {"tag": "c"}, "two": {"ageAtLeast": 21}, "big": _SEGMENT}

# Run in the child (and here): the texts and parameters one release reads the campaign's pages with.
_TEXTS = """
import json, sys
from datetime import datetime
from campaign_engine.config import Settings
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query
uri, now = sys.argv[1], datetime.fromisoformat(sys.argv[2])
graph = open_graph(Settings(neo4j_uri=uri, neo4j_user="neo4j", neo4j_password="", _env_file=None))
campaign = graph.read(lambda tx: tx.run("MATCH (c:Campaign {id: 'big'}) RETURN c {.*} AS c").single()["c"])
compiled = graph.read(lambda tx: compile_for(tx, campaign))
params = {**policy_params(now, 18), **compiled.params(now)}
texts = {n: segment_query(n, compiled) for n in ("audience_segment_page", "dispatch_preview")}
print(json.dumps({"texts": texts, "params": params}, default=str))
graph.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=20_000)
    # The release before each seek tested the rule once after binding the view (docs/audiences.md).
    parser.add_argument("--baseline-ref", default="b6eaec8")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        uri = os.environ.get("NEO4J_URI")
        if not uri:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            server = LocalNeo4j(data_dir=Path(tmp) / "neo4j", port=port, heap="2g", pagecache="1g")
            server.start(timeout=300)
            uri = server.uri
        try:
            run(uri, args, Path(tmp))
        finally:
            if server is not None:
                server.stop()


def run(uri: str, args: argparse.Namespace, tmp: Path) -> None:
    graph = open_graph(Settings(neo4j_uri=uri, neo4j_user="neo4j", neo4j_password="", _env_file=None))
    apply_schema(graph)
    seed(graph, args.profiles)
    now = datetime.now(UTC)
    baseline = tmp / "baseline"
    baseline.mkdir()
    archive = subprocess.run(
        ["git", "archive", args.baseline_ref, "campaign_engine", "cypher"],
        cwd=repo_root(), check=True, capture_output=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
    reads = {"baseline": _texts(uri, now, baseline), "this tree": _texts(uri, now, repo_root())}
    figures: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for name in ("audience_segment_page", "dispatch_preview"):
            seen = {}
            for release, read in reads.items():
                seconds, pages, ids = _walk(graph, uri, name, read["texts"][name], read["params"])
                figures.setdefault((name, release), []).append(seconds)
                seen[release] = ids
                print(
                    f"round {round_ + 1} {name:22s} {release:10s} {seconds:6.2f} s  {pages} pages  {ids} read"
                )
            assert len(set(seen.values())) == 1, seen
    print()
    ratios = {}
    for name in ("audience_segment_page", "dispatch_preview"):
        first = [figures[(name, r)][0] for r in ("baseline", "this tree")]
        old, new = (statistics.median(figures[(name, r)][1:]) for r in ("baseline", "this tree"))
        print(
            f"{name:22s} first walk (with planning) baseline {first[0]:6.2f} s  this tree {first[1]:6.2f} s;"
            f" then (median) baseline {old:6.2f} s  this tree {new:6.2f} s  ratio {new / old:.2f}"
        )
        ratios[name] = (first[1] / first[0], new / old)
    page, preview = ratios["audience_segment_page"], ratios["dispatch_preview"]
    print(
        f"RESULT page_first_ratio={page[0]:.2f} page_ratio={page[1]:.2f}"
        f" preview_first_ratio={preview[0]:.2f} preview_ratio={preview[1]:.2f}"
    )
    graph.close()


def seed(graph: Graph, n: int) -> None:
    while graph.run("MATCH (n) WITH n LIMIT 5000 DETACH DELETE n RETURN count(*) AS n")[0]["n"]:
        pass
    from campaign_engine.campaigns import definitions
    from campaign_engine.domain.campaign import CampaignCreate

    for ref, segment in _CAMPAIGNS.items():
        data = {"id": ref, "name": ref, "channels": ["notify"], "segment": segment,
                "notification": {"title": "Hello", "body": "Bench"}}  # fmt: skip
        definitions.create_campaign(
            graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=datetime.now(UTC)
        )
    ids = [f"p{i:07d}" for i in range(n)]
    for start in range(0, n, 5000):
        graph.run(
            """UNWIND $ids AS id WITH id, toInteger(substring(id, 1)) AS i
            CREATE (p:Profile {profileId: id, tenants: ['default'], announcementPushOptOut: false,
                    locale: CASE WHEN i % 2 = 0 THEN 'fr' ELSE 'en' END,
                    dob: CASE WHEN i % 3 = 0 THEN '1990-01-01' ELSE '2015-01-01' END,
                    notificationsWebhook: 'http://127.0.0.1:9/hook'})
            WITH p, i
            CALL (p, i) { WITH p, i WHERE i % 2 = 1 OR i % 4 = 0
              MERGE (t:Tag {slug: CASE WHEN i % 4 = 0 THEN 'a' ELSE 'c' END})
              CREATE (p)-[:HAS_TAG {slug: t.slug, profileId: p.profileId}]->(t) }
            CALL (p, i) { WITH p, i WHERE i % 5 < 2
              MATCH (c:Campaign {id: CASE WHEN i % 5 = 0 THEN 'one' ELSE 'two' END})
              CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId}]->(c) }""",
            ids=ids[start : start + 5000],
        )


def _texts(uri: str, now: datetime, root: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", _TEXTS, uri, now.isoformat()],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out))


def _neo4j_cpu(uri: str) -> float | None:
    """CPU seconds of the local launcher serving ``uri`` (None: not one of ours): on a shared machine
    the database's CPU per walk holds where wall time does not."""
    port = uri.rsplit(":", 1)[-1].encode()
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"neo4j-launcher.jar" in b" ".join(argv) and port in argv:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return None


def _walk(graph: Graph, uri: str, name: str, text: str, params: dict[str, Any]) -> tuple[float, int, int]:
    """One whole walk of ``text``'s pages: Neo4j CPU seconds (wall seconds when that is not ours to
    read), pages, profiles read."""
    cursor, pages, read = "", 0, 0
    extra = {"notify": True, "email": False} if name == "dispatch_preview" else {}
    cpu_before = _neo4j_cpu(uri)
    started = time.monotonic()
    while True:
        rows = graph.read(
            lambda tx, c=cursor: [
                r.data() for r in tx.run(text, campaignId="big", cursor=c, limit=_PAGE, **params, **extra)
            ]
        )
        pages += 1
        if name == "dispatch_preview":
            if rows[0]["read"] == 0:
                break
            read, cursor = read + int(rows[0]["read"]), str(rows[0]["last"])
        else:
            if not rows:
                break
            read, cursor = read + len(rows), str(rows[-1]["profileId"])
    cpu_after = _neo4j_cpu(uri)
    if cpu_before is None or cpu_after is None:
        return time.monotonic() - started, pages, read
    return cpu_after - cpu_before, pages, read


if __name__ == "__main__":
    main()
