"""The text rules of identifiers and contacts, each spelled once, in a regex every checker reads alike.

One pattern is read by four regex dialects: pydantic's (Rust ``regex``) when a request is validated,
ECMA-262 when a client or schemathesis reads ``/openapi.json``, Python ``re`` in the domain, and Java
when Cypher compares with ``=~``. Their ``\\s`` differ: Rust's includes U+0085, ECMA-262's includes
U+FEFF but not U+0085, Python's adds U+001C..U+001F, Java's is ASCII only. So the patterns never say
``\\s`` or ``\\S``: they exclude ``WHITESPACE``, the union of all four, written out, and a value the
document calls valid is one the server accepts.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

__all__ = [
    "DID_PATTERN",
    "EMAIL_PATTERN",
    "INTERNAL_PATH_PATTERN",
    "PROFILE_ID_PATTERN",
    "SLUG_PATTERN",
    "WEBHOOK_PATTERN",
    "WHITESPACE",
    "DidStr",
    "ProfileIdStr",
    "Slug",
]

WHITESPACE = r"\t\n\x0b\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""Every character some dialect's ``\\s`` matches, as the body of a character class, in escapes all four
read alike (``\\x0b``, not ``\\v``, a class in Java) and an error message can quote."""

PROFILE_ID_PATTERN = f"^[^{WHITESPACE},]+$"
DID_PATTERN = f"^did:[a-z0-9]+:[^{WHITESPACE}]+$"
SLUG_PATTERN = r"^[a-z0-9][a-z0-9-_.]{0,63}$"
EMAIL_PATTERN = f'^[^@{WHITESPACE}<>"(),;:]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9-]+)+$'
"""One mailbox, ``local@domain``: no whitespace, quoting or list separators; a dotted host name."""
WEBHOOK_PATTERN = f"^https?://[^/{WHITESPACE}]+"
"""An http(s) URL with a host (a prefix rule: the rest of the URL is the receiver's business)."""

_PCHAR = r"(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})"
INTERNAL_PATH_PATTERN = f"^/(?:{_PCHAR}(?:{_PCHAR}|/)*)?(?:\\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?$"
"""An app path, as RFC 3986's path-absolute plus query and fragment, ASCII only: one leading ``/``, never
``//`` or ``/\\`` (which WHATWG URL parsers read as another host), no backslash, whitespace or control
character anywhere (parsers strip tabs and newlines, so ``/\\t/evil.example`` would become ``//``)."""

ProfileIdStr = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=PROFILE_ID_PATTERN)]
DidStr = Annotated[str, StringConstraints(min_length=5, max_length=512, pattern=DID_PATTERN)]
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
