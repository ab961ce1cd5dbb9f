"""What every benchmark starts the same way: a free loopback port and a Neo4j to measure against."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from campaign_engine.graph.local_neo4j import LocalNeo4j

__all__ = ["free_port", "neo4j_uri", "wait_until_ok"]


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


def wait_until_ok(url: str, process: subprocess.Popen[bytes], *, timeout: float, log: str) -> None:
    """Poll ``url`` until it answers 200; fail early if ``process`` exits, late after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the process serving {url} exited; see {log}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer 200 within {timeout:.0f} s; see {log}")
        time.sleep(0.1)
