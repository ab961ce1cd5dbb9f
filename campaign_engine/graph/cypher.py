"""Named Cypher from the top-level ``cypher/`` folder, read once and cached.

Hot-path queries live in files so they can be read, EXPLAINed and reviewed as Cypher, not as Python
strings. The folder sits beside the package: in the repository, and at the root of the Lambda zip
(``make lambda-package`` puts it there).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["cypher_dir", "query"]


def cypher_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "cypher"


@cache
def query(name: str) -> str:
    """The text of ``cypher/<name>.cypher``."""
    return (cypher_dir() / f"{name}.cypher").read_text(encoding="utf-8")
