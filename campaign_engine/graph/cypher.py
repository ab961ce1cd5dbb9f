"""Named Cypher from the top-level ``cypher/`` folder, read once and cached.

Hot-path queries live in files so they can be read, EXPLAINed and reviewed as Cypher, not as Python
strings. The folder sits beside the package: in the repository, and at the root of the Lambda zip
(``make lambda-package`` puts it there). Its subfolders are rooms that mirror the package
(``cypher/delivery/email/`` beside ``campaign_engine/delivery/email/``); a statement is named by its file
name alone, unique across the rooms, so moving it between rooms changes no caller.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["cypher_dir", "query", "statement_paths"]


def cypher_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "cypher"


@cache
def statement_paths() -> dict[str, Path]:
    """Every statement file by name; two files of one name are refused (a name must say which)."""
    paths: dict[str, Path] = {}
    for path in sorted(cypher_dir().rglob("*.cypher")):
        if path.stem in paths:
            raise ValueError(f"two statements named {path.stem}: {paths[path.stem]} and {path}")
        paths[path.stem] = path
    return paths


@cache
def query(name: str) -> str:
    """The text of ``cypher/<room>/<name>.cypher``."""
    path = statement_paths().get(name)
    if path is None:
        raise KeyError(f"no statement named {name} under {cypher_dir()}")
    return path.read_text(encoding="utf-8")
