"""Named Cypher from the top-level ``cypher/`` folder, read once and cached.

Hot-path queries live in files so they can be read, EXPLAINed and reviewed as Cypher, not as Python
strings. ``CAMPAIGN_CYPHER_DIR`` overrides the folder for packaged deployments.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

__all__ = ["cypher_dir", "query"]


def cypher_dir() -> Path:
    override = os.environ.get("CAMPAIGN_CYPHER_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "cypher"


@cache
def query(name: str) -> str:
    """The text of ``cypher/<name>.cypher``."""
    return (cypher_dir() / f"{name}.cypher").read_text(encoding="utf-8")
