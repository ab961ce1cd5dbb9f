"""Languages: which variant of a campaign a recipient reads, and which way it is written.

One rule for every path (in-app cards, notification payloads, emails, self-tests, previews, explain):
the profile's ``locale`` is matched against the tags a campaign has content in by the *lookup* of
RFC 4647 §3.4. The requested tag is tried whole, then with subtags removed from the end (a single-letter
subtag left last goes with the one after it), so ``es-MX`` takes ``es-MX``, else ``es``; tags compare
case-insensitively and ``_`` reads as ``-`` (profiles written by some systems spell ``pt_BR``). No match,
or no locale, is the base content. Well-formedness is BCP 47's ``langtag`` (RFC 5646 §2.1) without
extensions' inner grammar: language, optional script, region and variants, then extensions and private
use as opaque subtags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

__all__ = [
    "LANGUAGE_TAG_PATTERN",
    "Direction",
    "direction",
    "is_well_formed",
    "language_of",
    "lookup",
    "normalized",
]

Direction = Literal["ltr", "rtl"]

# language (2-3 letters, optional extlang, or 4-8), script, region, variants, extensions, private use.
LANGUAGE_TAG_PATTERN = (
    r"^[A-Za-z]{2,8}(-[A-Za-z]{3}){0,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?"
    r"(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*(-[0-9A-WY-Za-wy-z](-[A-Za-z0-9]{2,8})+)*"
    r"(-[Xx](-[A-Za-z0-9]{1,8})+)?$"
)
_TAG = re.compile(LANGUAGE_TAG_PATTERN)

# Languages written right to left (their default script), and the right-to-left scripts that make any
# language so when a tag names them (``az-Arab``, ``pa-Arab``).
_RTL_LANGUAGES = frozenset(
    {"ar", "arc", "ckb", "dv", "fa", "he", "iw", "khw", "ks", "lrc", "mzn", "nqo", "pnb", "ps", "sd", "syr",
     "ug", "ur", "yi"}
)  # fmt: skip
_RTL_SCRIPTS = frozenset({"adlm", "arab", "hebr", "mand", "mend", "nkoo", "rohg", "samr", "syrc", "thaa"})
_LTR_SCRIPTS = frozenset({"latn", "cyrl", "deva", "grek", "hans", "hant", "jpan", "kore"})


def normalized(tag: str) -> str:
    """``tag`` for comparison: ``-`` between subtags, lower case."""
    return tag.strip().replace("_", "-").lower()


def is_well_formed(tag: str) -> bool:
    return _TAG.fullmatch(tag.strip().replace("_", "-")) is not None


def _fallbacks(tag: str) -> Iterable[str]:
    """RFC 4647 §3.4: the tag, then shorter and shorter prefixes of it."""
    subtags = normalized(tag).split("-")
    while subtags:
        yield "-".join(subtags)
        subtags.pop()
        if subtags and len(subtags[-1]) == 1:  # never end on a singleton (an extension's or "x")
            subtags.pop()


def lookup(requested: str | None, available: Iterable[str]) -> str | None:
    """The available tag (spelled as given) that best matches ``requested``; None for no match."""
    if not requested or not requested.strip():
        return None
    by_key = {normalized(tag): tag for tag in available}
    for candidate in _fallbacks(requested):
        if candidate in by_key:
            return by_key[candidate]
    return None


def language_of(tag: str) -> str:
    """The primary language subtag, lower case: what a translation is "for" when counting gaps."""
    return normalized(tag).split("-")[0]


def direction(tag: str | None) -> Direction:
    """Which way text in ``tag`` runs: its script subtag decides, else its language."""
    if not tag:
        return "ltr"
    subtags = normalized(tag).split("-")
    for subtag in subtags[1:]:
        if len(subtag) == 4 and subtag.isalpha():
            if subtag in _RTL_SCRIPTS:
                return "rtl"
            if subtag in _LTR_SCRIPTS:
                return "ltr"
    return "rtl" if subtags[0] in _RTL_LANGUAGES else "ltr"
