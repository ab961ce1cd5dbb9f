"""Every statement the package can send, filled: each file of ``cypher/`` and every variant its fillers make.

A template without slots of its own fills alone (``statement(name)``). A module that fills a template's
slots (a segment's audience page, a cap, an event name, an audit index) declares every variant it can
make in a ``statement_variants(samples)`` function beside the fill call, iterating the same finite
inputs the hot path takes; live segments are infinite, so the caller passes sample compiled segments.
``filled_statements`` imports the whole package to find those functions, so a new filler cannot hide
from the checks built on it (tests/integration/graph/test_statements.py EXPLAINs all of them), and
names any template no variant covered.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import campaign_engine
from campaign_engine.graph.cypher import fill, is_fragment, query, statement, statement_paths

__all__ = ["filled_statements", "variant_sources"]

Variants = Callable[[Sequence[Any]], Iterable[tuple[str, str]]]

# Never imported for the search: a ``__main__`` runs its command line on import.
_ENTRY_POINT = "__main__"
# Not one statement: apply_schema runs each of its statements (graph/schema.py), which checks them.
_APPLIED = {"schema"}


def variant_sources() -> dict[str, Variants]:
    """Every ``statement_variants`` function of the package, by module."""
    found: dict[str, Variants] = {}
    for info in pkgutil.walk_packages(campaign_engine.__path__, "campaign_engine."):
        if info.name.rpartition(".")[2] == _ENTRY_POINT:
            continue
        module = importlib.import_module(info.name)
        variants = module.__dict__.get("statement_variants")
        if variants is not None and getattr(variants, "__module__", None) == info.name:
            found[info.name] = variants
    return found


def filled_statements(samples: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """(name, filled text) for every statement and variant; raises naming a template nothing fills."""
    covered: dict[str, list[str]] = {}
    for variants in variant_sources().values():
        for name, text in variants(samples):
            covered.setdefault(name, []).append(text)
    every = [text for texts in covered.values() for text in texts]
    for name in sorted(statement_paths().keys() - _APPLIED):
        if is_fragment(name):
            # A fragment is checked inside the statements that take it.
            body = fill(query(name), name=name, slots={}) if "{{" not in query(name) else None
            if body is not None and not any(body in text for text in every):
                raise LookupError(f"fragment {name} is filled into no declared variant")
            continue
        texts = covered.pop(name, [])
        try:
            texts.append(statement(name))
        except ValueError as exc:
            if not texts:
                raise LookupError(f"{name} has slots no statement_variants declares: {exc}") from exc
        for text in dict.fromkeys(texts):
            yield name, text
    if covered:
        raise LookupError(f"variants of no file: {sorted(covered)}")
