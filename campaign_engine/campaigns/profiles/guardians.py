"""Guardians as data: ``GUARDIAN_OF`` links from an adult to a minor, with consent.

A link is written only in a transaction that has locked the minor and every named guardian in ascending
profileId (``lock_profiles``, the order of docs/architecture.md §5) and then checked them under those
locks (``cypher/profiles/guardians_check.cypher``): a guardian must be a profile of the minor's tenant (of the
caller's, for a tenant credential) that the age policy holds for an adult, never the minor themself.
``profiles.upsert`` refuses the whole batch on the first problem (BAD_REQUEST naming it, nothing
written); the file imports (CSV, OneRoster, SDS) check a batch first and report each bad link by its
line, leaving that minor's set as it was. Routing to guardians (item 3) reads the links from the minor:
``(g:Profile)-[:GUARDIAN_OF {consent: 'granted'}]->(m)``, an expansion from a node the walk already holds.

Each writer has links of its own (docs/people.md): a tenant credential (``tenant``) writes, replaces and
removes only links carrying its ``tenantId``, so it never changes or deletes another tenant's link or
consent; a platform credential (``tenant=None``) only the shared links, which carry none. A pair may so
hold a link per tenant and a shared one; a campaign reads its tenant's, else the shared one
(``graph/rules/routing.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, Literal

from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.profile import Consent, ProfileIn
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.rules.policy import policy_params

__all__ = ["LinkPair", "LinkRow", "Provenance", "Source", "import_links", "set_guardians", "upsert_rows"]

Source = Literal["api", "csv", "oneroster", "sds"]
_BATCH = 500  # minors per transaction of an import


@dataclass(frozen=True)
class Provenance:
    """How a link came to be: the write path, the audit entry of the write, its actor, its instant."""

    source: Source
    now: datetime
    audit: AuditContext | None = None

    def params(self) -> dict[str, Any]:
        ref = None if self.audit is None else self.audit.entry_id
        by = None if self.audit is None else self.audit.actor
        return {"source": self.source, "sourceRef": ref, "setBy": by, "now": format_ts(self.now)}


@dataclass(frozen=True)
class LinkPair:
    """One guardian named for a minor, with where a file named it (for its report)."""

    guardian: str
    consent: Consent | None  # None: the source carries no consent (a new link is `revoked`)
    line: int = 0
    column: str | None = None


@dataclass(frozen=True)
class LinkRow:
    minor: str
    pairs: tuple[LinkPair, ...]

    def statement_row(self) -> dict[str, Any]:
        guardians = [{"profileId": p.guardian, "consent": p.consent} for p in self.pairs]
        return {"profileId": self.minor, "guardians": guardians}


def upsert_rows(profiles: Sequence[ProfileIn]) -> list[LinkRow]:
    """The guardian sets a ``profiles.upsert`` batch names (rows that omit ``guardians`` keep theirs)."""
    return [
        LinkRow(p.profile_id, tuple(LinkPair(g.profile_id, g.consent) for g in p.guardians or []))
        for p in sorted(profiles, key=lambda p: p.profile_id)
        if p.named("guardians")
    ]


def _problems(
    tx: Tx,
    rows: Sequence[LinkRow],
    tenant: str | None,
    adult_age: int,
    now: datetime,
    assumed: frozenset[str] = frozenset(),
    new_tenant: str | None = None,
) -> dict[tuple[str, str], str]:
    """(minor, guardian) -> why that link cannot be written; a minor not found is keyed (minor, '')."""
    if not any(r.pairs for r in rows):
        return {}
    statement_rows = [r.statement_row() for r in rows]
    found = tx.run(
        statement("guardians_check"),
        rows=statement_rows,
        tenant=tenant,
        assumed=sorted(assumed),
        newTenant=new_tenant,
        **policy_params(now, adult_age),
    )
    problems: dict[tuple[str, str], str] = {}
    for record in found:
        minor, guardian = str(record["minor"]), str(record["guardian"])
        if not record["minorFound"]:
            problems[(minor, "")] = f"profile '{minor}' not found"
        elif not record["found"]:
            problems[(minor, guardian)] = f"guardian '{guardian}' is not a profile of this tenant"
        elif not record["adult"]:
            problems[(minor, guardian)] = (
                f"guardian '{guardian}' is a minor (or managed with no known age) under the age policy"
            )
    return problems


def set_guardians(
    tx: Tx, rows: Sequence[LinkRow], *, tenant: str | None, adult_age: int, provenance: Provenance
) -> int:
    """Check and write ``rows`` in ``tx``, whose caller locked the minors and guardians; BAD_REQUEST on
    the first problem (the caller's transaction rolls back). Returns links created or changed."""
    problems = _problems(tx, rows, tenant, adult_age, provenance.now)
    if problems:
        (minor, _), reason = min(problems.items())
        raise BadRequest(f"guardians of '{minor}': {reason}; nothing was written")
    record = tx.run(statement("guardians_write"), rows=[r.statement_row() for r in rows], tenant=tenant,
                    **provenance.params()).single()  # fmt: skip
    return 0 if record is None else int(record["changed"])


def lock_ids(rows: Sequence[LinkRow]) -> list[str]:
    """Every profile a guardian write touches, for ``lock_profiles`` (which sorts them)."""
    return [r.minor for r in rows] + [p.guardian for r in rows for p in r.pairs]


Reject = Callable[[int, str | None, str], None]


def import_links(
    graph: Graph,
    rows: Sequence[LinkRow],
    *,
    tenant: str | None,
    adult_age: int,
    clock: Clock,
    provenance: Provenance,
    reject: Reject,
    dry_run: bool = False,
    assume_existing: frozenset[str] = frozenset(),
    new_tenant: str | None = None,
) -> int:
    """The links of a file, after all its profiles: each batch checked, each bad link reported at its
    line (its minor's set is then left as it was), the rest written in one transaction with one audit
    entry. A dry run counts the links the check passes; a profile the dry run would have created
    (``assume_existing``, joining ``new_tenant``) is judged as far as the graph can: a guardian among them
    at the real run. Returns links created or changed (or checked)."""
    merged: dict[str, LinkRow] = {}
    for row in rows:  # in file order: a minor named again takes its later set
        merged[row.minor] = row
    ordered = [merged[m] for m in sorted(merged)]
    written = 0
    for start in range(0, len(ordered), _BATCH):
        batch = ordered[start : start + _BATCH]
        now = clock()
        assumed = assume_existing if dry_run else frozenset()
        check = partial(_problems, rows=batch, tenant=tenant, adult_age=adult_age, now=now, assumed=assumed,
                        new_tenant=new_tenant)  # fmt: skip
        problems = graph.read(check)
        good: list[LinkRow] = []
        for row in batch:
            bad = [
                (p, problems[(row.minor, p.guardian)])
                for p in row.pairs
                if (row.minor, p.guardian) in problems
            ]
            if dry_run:
                bad = [(p, why) for p, why in bad if p.guardian not in assume_existing]
            if (row.minor, "") in problems:
                first = row.pairs[0] if row.pairs else LinkPair("", None)
                reject(first.line, first.column, problems[(row.minor, "")])
            elif bad:
                for pair, why in bad:
                    reject(
                        pair.line,
                        pair.column,
                        f"{why}; the guardians of '{row.minor}' were left as they were",
                    )
            else:
                good.append(row)
        if dry_run:
            written += sum(len(r.pairs) for r in good)
            continue
        if good:
            entry = None if provenance.audit is None else provenance.audit.next_entry(now)
            written += _write_batch(graph, good, tenant, adult_age, replace(provenance, now=now, audit=entry),
                                    reject)  # fmt: skip
    return written


def _write_batch(
    graph: Graph,
    rows: list[LinkRow],
    tenant: str | None,
    adult_age: int,
    provenance: Provenance,
    reject: Reject,
) -> int:
    def tx_fn(tx: Tx) -> int:
        lock_profiles(tx, lock_ids(rows))
        changed = set_guardians(tx, rows, tenant=tenant, adult_age=adult_age, provenance=provenance)
        record_audit(tx, provenance.audit, target_type="profile", target_id="batch",
                     detail={"guardiansOf": len(rows), "guardianLinks": changed,
                             "profileIds": [r.minor for r in rows][:20]})  # fmt: skip
        return changed

    try:
        return graph.write(tx_fn)
    except BadRequest as exc:  # changed since the check: none of this batch was written
        for row in rows:
            first = row.pairs[0] if row.pairs else LinkPair("", None)
            reject(first.line, first.column, f"{exc.message} (re-run the file to retry)")
        return 0
