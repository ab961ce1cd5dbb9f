"""``make dev``'s processes (``bench/_chaos_stack.py``) for an end-to-end module, on the test session's
Neo4j: a stack of its own Neo4j paid a JVM start and a first compile of every statement it ran, most of
what such a module cost the suite's two cores."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bench._chaos_stack import Stack
from campaign_engine.graph.graph import Graph

__all__ = ["on_session_graph"]


@contextmanager
def on_session_graph(stack: Stack, session_graph: Graph) -> Iterator[Stack]:
    """``stack`` (made with the session's ``graph_uri``) started with the graph emptied, and the graph
    emptied again once it stopped: a module's journey reads the whole graph (audience ``all``), and
    while the module runs no other test of this pytest worker touches it."""
    session_graph.run("MATCH (n) DETACH DELETE n")
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
        session_graph.run("MATCH (n) DETACH DELETE n")
