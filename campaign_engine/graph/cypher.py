"""Named Cypher from the top-level ``cypher/`` folder, read once, filled by one function and cached.

Hot-path statements live in files so they can be read, EXPLAINed and reviewed as Cypher, not as Python
strings. The folder sits beside the package: in the repository, and at the root of the Lambda zip
(``make lambda-package`` puts it there). Its subfolders are rooms that mirror the package
(``cypher/delivery/email/`` beside ``campaign_engine/delivery/email/``); a statement is named by its file
name alone, unique across the rooms, so moving it between rooms changes no caller. A file under a
``fragments/`` folder is not a statement but a part one takes through a slot (the frequency caps).

A template marks a slot ``{{NAME}}``. ``statement`` fills the caller's slots, then the named fragments
of ``graph/rules/policy.py`` (the eligibility predicates and the static audience page; a fragment may
hold further slots), and refuses an unknown slot or any ``{{..}}`` left over: a typo fails where the
statement is built, never as Cypher sent to the server. Filled texts are cached, so a hot path pays a
dictionary lookup, and Neo4j's plan cache sees the same text every time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache, lru_cache
from pathlib import Path

from campaign_engine.graph.rules.policy import FRAGMENTS, check_bindings

__all__ = ["cypher_dir", "fill", "fragment", "is_fragment", "query", "statement", "statement_paths"]

_SLOT = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")
_LEFTOVER = re.compile(r"\{\{[^{}]*\}\}")
_ROUNDS = 8  # fragments nest at most a few deep (SELF_ENROLLABLE holds CAMPAIGN_AGE_OK)


def cypher_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "cypher"


@cache
def statement_paths() -> dict[str, Path]:
    """Every file by name; two files of one name are refused (a name must say which)."""
    paths: dict[str, Path] = {}
    for path in sorted(cypher_dir().rglob("*.cypher")):
        if path.stem in paths:
            raise ValueError(f"two statements named {path.stem}: {paths[path.stem]} and {path}")
        paths[path.stem] = path
    return paths


def is_fragment(name: str) -> bool:
    """A part filled into statements through a slot, never run alone."""
    return statement_paths()[name].parent.name == "fragments"


@cache
def query(name: str) -> str:
    """The raw text of ``cypher/<room>/<name>.cypher``, slots unfilled."""
    path = statement_paths().get(name)
    if path is None:
        raise KeyError(f"no statement named {name} under {cypher_dir()}")
    return path.read_text(encoding="utf-8")


def fill(text: str, *, name: str, slots: Mapping[str, str]) -> str:
    """``text`` with its ``{{SLOT}}`` placeholders filled from ``slots``, then from the named fragments.

    Raises ``ValueError`` on a slot the text never asks for (a caller filling the wrong template) and on
    any ``{{..}}`` left over (a misspelt placeholder, or a slot the caller forgot)."""
    unknown = [slot for slot in slots if not _SLOT.fullmatch(f"{{{{{slot}}}}}")]
    if unknown:
        raise ValueError(f"{name}: slot names must be upper case: {unknown}")
    used: set[str] = set()

    def _fill(match: re.Match[str]) -> str:
        slot = match.group(1)
        if slot in slots:
            used.add(slot)
            return slots[slot]
        return FRAGMENTS.get(slot, match.group(0))

    text = _SLOT.sub(lambda m: _fill(m) if m.group(1) in slots else m.group(0), text)
    check_bindings(text, name=name)
    for _ in range(_ROUNDS):
        filled = _SLOT.sub(_fill, text)
        if filled == text:
            break
        text = filled
    unused = sorted(set(slots) - used)
    if unused:
        raise ValueError(f"{name} has no slot {', '.join(unused)}")
    leftover = sorted(set(_LEFTOVER.findall(text)))
    if leftover:
        raise ValueError(f"{name} leaves {', '.join(leftover)} unfilled")
    return text


@lru_cache(maxsize=1024)  # thread-safe and bounded: the worker's polling threads share it
def statement(name: str, /, **slots: str) -> str:
    """``cypher/<room>/<name>.cypher`` filled (``fill``): the one way a template becomes Cypher."""
    if is_fragment(name):
        raise ValueError(f"{name} is a fragment: fill it into a statement's slot")
    return fill(query(name), name=name, slots=slots)


@lru_cache(maxsize=64)
def fragment(name: str, /, **slots: str) -> str:
    """A ``fragments/`` file filled like a statement, to be passed as another statement's slot."""
    if not is_fragment(name):
        raise ValueError(f"{name} is a statement, not a fragment")
    return fill(query(name), name=name, slots=slots)
