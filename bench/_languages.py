"""Three languages in the benches (a send in three languages within 10% of one in one).

A campaign gets its base content in ``en`` and translations into ``es`` and ``ar`` of every channel it
has; the profiles get locales spread over ``LOCALES`` (by the last digit of their profileId), so a
three-language dispatch serves every variant and nobody falls back untranslated (no guard blocks it).
The one-language campaign of the same bench runs over profiles with the same locales: the comparison
prices the translations alone (variant choice, one rendering per language), not the locale lookup.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.graph import Graph

__all__ = ["LOCALES", "set_locales", "translated"]

LOCALES: list[str | None] = ["en-GB", "es-MX", "es", "ar", None]
_MARK = {"es": "ES", "ar": "عربي"}
_CHANNELS = ("message", "notification", "email")


def translated(definition: dict[str, Any], languages: int) -> dict[str, Any]:
    """``definition`` with ``locale: en`` and, for ``languages`` 3, ``es`` and ``ar`` translations of each
    of its channels' copy (each string marked with its language, ``ar`` in Arabic script)."""
    if languages == 1:
        return definition
    if languages != 3:
        raise ValueError("the benches compare one language with three")
    translations = {
        tag: {
            channel: {
                k: f"{_MARK[tag]} {v}" if isinstance(v, str) else v for k, v in definition[channel].items()
            }
            for channel in _CHANNELS
            if channel in definition
        }
        for tag in ("es", "ar")
    }
    return {**definition, "locale": "en", "translations": translations}


def set_locales(graph: Graph, id_prefix: str) -> None:
    """Every profile whose id starts with ``id_prefix`` gets a locale of ``LOCALES`` by its last digit,
    in transactions of 10,000 (a million profiles outgrow one)."""
    with graph.driver.session(database=graph.database) as session:
        session.run(
            "MATCH (p:Profile) WHERE p.profileId STARTS WITH $prefix "
            "CALL (p) { SET p.locale = $locales[toInteger(right(p.profileId, 1)) % size($locales)] } "
            "IN TRANSACTIONS OF 10000 ROWS",
            prefix=id_prefix,
            locales=LOCALES,
        ).consume()
