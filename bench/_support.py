"""What every benchmark starts the same way: a free loopback port and a Neo4j to measure against."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from campaign_engine.graph.local_neo4j import LocalNeo4j

__all__ = ["free_port", "neo4j_uri"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def neo4j_uri(*, heap: str = "2g", pagecache: str = "1g") -> Iterator[str]:
    """``NEO4J_URI`` when set (that database is wiped by the benchmark), else a fresh local launcher."""
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    with tempfile.TemporaryDirectory(prefix="bench-neo4j-") as data:
        server = LocalNeo4j(data_dir=Path(data), port=free_port(), heap=heap, pagecache=pagecache)
        server.start()
        try:
            yield server.uri
        finally:
            server.stop()
