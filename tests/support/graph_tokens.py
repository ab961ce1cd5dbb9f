"""Every label, relationship type and property key the package's statements name, created up front in
a test session's database.

Neo4j plans a statement that names a token the database has never held (a label no node ever had) and
plans it again, in full, once that token appears, whatever ``dbms.cypher.min_replan_interval`` says. A
session database starts empty, so nearly every statement was planned twice on each worker: over
``tests/integration/campaigns`` (4 workers) 713 of 1,589 plans were such repeats, 139 of 313 s of
planning. Tokens outlive ``MATCH (n) DETACH DELETE n``, so creating them once serves the whole run.

The names are read from the statement texts (``cypher/`` and the rules compiled in ``graph/rules``)
by pattern, generously: a name that is no token (a map key, a variable) only adds an unused token.
"""

from __future__ import annotations

import re

from campaign_engine.graph.cypher import cypher_dir
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.local_neo4j import repo_root

__all__ = ["create_tokens", "statement_tokens"]

_COMMENT = re.compile(r"//[^\n]*")
_AFTER_COLON = re.compile(r"[:|]\s*`?([A-Za-z_][A-Za-z0-9_]*)`?")
_PROPERTY = re.compile(r"\.\s*`?([a-z_][A-Za-z0-9_]*)`?")
_MAP_KEY = re.compile(r"\b([a-z_][A-Za-z0-9_]*)\s*:")


def _texts() -> list[str]:
    rules = repo_root() / "campaign_engine" / "graph" / "rules"
    files = [*cypher_dir().rglob("*.cypher"), *rules.rglob("*.py")]
    return [_COMMENT.sub("", path.read_text()) for path in files]


def statement_tokens() -> tuple[set[str], set[str], set[str]]:
    """(labels, relationship types, property keys) the statements may name."""
    labels: set[str] = set()
    types: set[str] = set()
    properties: set[str] = set()
    for text in _texts():
        for name in _AFTER_COLON.findall(text):
            if name[0].isupper():
                (types if name.isupper() else labels).add(name)
        properties.update(_PROPERTY.findall(text))
        properties.update(_MAP_KEY.findall(text))
    return labels, types, properties


def create_tokens(graph: Graph) -> None:
    labels, types, properties = statement_tokens()
    graph.run("UNWIND $names AS name CALL db.createLabel(name)", names=sorted(labels))
    graph.run("UNWIND $names AS name CALL db.createRelationshipType(name)", names=sorted(types))
    graph.run("UNWIND $names AS name CALL db.createProperty(name)", names=sorted(properties))
