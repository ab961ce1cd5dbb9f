"""The rows of the isolation matrix and the one way each is checked.

A ``Row`` is one write path that touches a person (a tRPC procedure, an HTTP route, a CLI command),
with the access it needs and the call that writes A's marked values (``shared_people.a_rows``) through it.
``check_row`` runs it under every credential of tenant A: an admitted call must succeed and, where the
row says how, show its write in A's own answers (so no row passes by writing nothing); a refused one
must be refused. After each call, every answer B gets must equal B's answers before A wrote anything,
and hold none of A's markers; after the row, one real send of B's campaign must reach the same
receivers, signed with the same secrets, at the same addresses, in the same language and variant.

A row that fails rebuilds the world before it reports, so the next row starts from B's baseline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign_engine.api.access import Access, role_satisfies
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.isolation import Credential, World, leaks, reseed, shared_world
from tests.support.postmark_standin import PostmarkStandin

__all__ = ["Baseline", "Row", "check_row", "module_world"]


@dataclass(frozen=True)
class Row:
    """``write`` makes the call as ``credential`` and answers its HTTP status; ``shows`` (optional)
    answers whether A's own answers now hold the write."""

    path: str
    access: Access
    write: Callable[[World, Credential], int]
    shows: Callable[[World], bool] | None = None


@dataclass(frozen=True)
class Baseline:
    answers: dict[str, Any]
    deliveries: dict[str, Any]


def module_world(
    base: Settings,
    graph: Graph,
    standin: PostmarkStandin,
    folder: Path,
    prepare: Callable[[World], None] | None = None,
) -> Iterator[tuple[World, Baseline]]:
    """The module's world and B's baseline, taken after ``prepare`` (what the rows need of A first)."""
    with shared_world(base, graph, standin, folder, prepare=prepare) as world:
        baseline = Baseline(answers=world.b_answers(), deliveries=world.b_deliveries())
        held = [name for name, answer in baseline.answers.items() if leaks(answer)] + leaks(
            baseline.deliveries
        )
        assert not held, f"B's baseline holds a marker of A's, before A wrote: fix the world ({held})"
        yield world, baseline


def _admitted(row: Row, credential: Credential) -> bool:
    if row.access in ("public", "user"):
        return True
    return role_satisfies(credential.role, row.access)  # type: ignore[arg-type]


def _differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    found = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            was, now = (json.dumps(x, sort_keys=True, default=str) for x in (before.get(key), after.get(key)))
            cut = next(
                (i for i, (x, y) in enumerate(zip(was, now, strict=False)) if x != y), min(len(was), len(now))
            )
            start = max(0, cut - 60)
            marked = leaks(after.get(key))
            found.append(
                f"  {key}{f' (holds A marker {marked})' if marked else ''}:\n"
                f"    before ...{was[start : cut + 120]}\n    after  ...{now[start : cut + 120]}"
            )
    return found


def check_row(world: World, baseline: Baseline, row: Row, credentials: list[Credential]) -> None:
    """Runs ``row`` under each credential; fails naming the row, the credential and what B saw change."""
    problems: list[str] = []
    for credential in credentials:
        where = f"{row.path} as {credential.name}"
        status = row.write(world, credential)
        admitted = _admitted(row, credential)
        # An API key is no person: a procedure acting on the caller writes nothing of the person's, and
        # may find nothing of its own.
        keyless = credential.api_key and row.access == "user"
        if admitted and status != 200 and not (keyless and status in (400, 404)):
            problems.append(f"{where}: admitted by its access but answered {status}")
        elif not admitted and status not in (401, 403):
            problems.append(f"{where}: needs {row.access} but answered {status}")
        elif admitted and not keyless and row.shows is not None and not row.shows(world):
            problems.append(f"{where}: answered 200 but A's own answers do not show the write")
        if admitted:
            changed = _differences(baseline.answers, world.b_answers())
            if changed:
                problems.append(f"{where} changed B's answers:\n" + "\n".join(changed))
        if problems:
            break
    if not problems:
        changed = _differences(baseline.deliveries, world.b_deliveries())
        if changed:
            problems.append(f"{row.path} changed what B's send delivered:\n" + "\n".join(changed))
    if problems:
        reseed(world)
        raise AssertionError("\n".join(problems))
