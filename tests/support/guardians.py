"""Generated families for guardian tests and, later, guardian routing (issue 27).

``families`` builds a deterministic set: each family has one or two adult guardians and one to three
minor children; every third family's guardians have consent ``revoked``, and some guardians share a
child with a co-guardian or have several children. ``upsert_families`` writes them through
``profiles.upsert`` (guardians and children in the same batch: links are written after all profiles),
so the test exercises the real path; ``granted_pairs`` is the independent expectation routing checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.support.api import TrpcClient, ok

__all__ = ["Family", "families", "granted_pairs", "upsert_families"]

ADULT_DOB = "1980-05-17"
MINOR_DOB = "2015-09-01"


@dataclass(frozen=True)
class Family:
    guardians: tuple[str, ...]
    children: tuple[str, ...]
    consent: str
    tags: tuple[str, ...] = field(default=())


def families(count: int, *, prefix: str = "fam") -> list[Family]:
    out: list[Family] = []
    for n in range(count):
        guardians = tuple(f"{prefix}{n}-g{k}" for k in range(1 + n % 2))
        children = tuple(f"{prefix}{n}-c{k}" for k in range(1 + n % 3))
        out.append(
            Family(guardians, children, "revoked" if n % 3 == 2 else "granted", (f"grade-{7 + n % 2}",))
        )
    return out


def _rows(family: Family, email_domain: str) -> Iterator[dict[str, Any]]:
    for guardian in family.guardians:
        yield {
            "profileId": guardian,
            "dob": ADULT_DOB,
            "emails": [{"address": f"{guardian}@{email_domain}", "verified": True, "primary": True}],
        }
    for child in family.children:
        yield {
            "profileId": child,
            "dob": MINOR_DOB,
            "isManaged": True,
            "tags": list(family.tags),
            "guardians": [{"profileId": g, "consent": family.consent} for g in family.guardians],
        }


def upsert_families(
    api: TrpcClient, found: list[Family], *, as_: str, email_domain: str = "example.com", batch: int = 1000
) -> int:
    """Writes ``found`` in batches of whole families; returns the links written."""
    rows: list[dict[str, Any]] = []
    links = 0

    def flush() -> None:
        nonlocal links, rows
        if rows:
            links += ok(api.mutate("profiles.upsert", {"profiles": rows}, as_=as_, admin=True))[
                "guardianLinks"
            ]
            rows = []

    for family in found:
        family_rows = list(_rows(family, email_domain))
        if len(rows) + len(family_rows) > batch:
            flush()
        rows += family_rows
    flush()
    return links


def granted_pairs(found: list[Family]) -> set[tuple[str, str]]:
    """(guardian, child) for every link with consent granted."""
    return {(g, c) for f in found if f.consent == "granted" for g in f.guardians for c in f.children}
