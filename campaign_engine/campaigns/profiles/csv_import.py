"""CSV import of profiles with a report: every bad row named, every good one written.

The file is what an SIS or CRM exports: a header row, then one profile per row, UTF-8 with or without a
byte-order mark, quoted fields, CRLF or LF (the standard ``csv`` reader). Columns:

- ``profileId`` (required), ``email``, ``emailVerified`` (true/false, yes/no, 1/0), ``dob``
  (YYYY-MM-DD), ``locale``, ``timeZone``, ``tags`` (``;``-separated), ``guardians`` (
  ``g1:granted;g2:revoked``, the row's guardian set, replacing the stored one). Any other column is
  reported in ``unknownColumns`` and ignored.
- An empty cell says nothing: the stored value is kept, so a partial export never erases what other
  columns or sources set. A named ``email`` replaces the profile's addresses with that one (primary).

Each row is validated by ``ProfileIn``, the model ``profiles.upsert`` uses, and a failure is reported
with its line (where the row starts in the file), its column and the reason; valid rows are written in
batches through ``upsert_profiles`` (one transaction and one audit entry each; two at once while the next
is parsed, ``import_writer.py``), a repeated profileId in file order, so it takes its last row. A tenant
credential's rows naming a profile another tenant holds are reported, not written. ``dry_run``
validates and counts what would be created or updated without writing. Running the same file again
changes nothing: every write is an idempotent upsert.

Guardian links are applied after every row's profile (``campaigns/profiles/guardians.py:import_links``), so a
row may name a guardian that a later row creates; a link that cannot be written (no such profile in the
tenant, a guardian the age policy holds for a minor) is reported at its row's line in column
``guardians``, and that minor's guardians stay as they were. A dry run judges a guardian the file itself
would create at the real run.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from campaign_engine.campaigns.profiles.guardians import LinkPair, LinkRow, Provenance, import_links
from campaign_engine.campaigns.profiles.import_text import without_bom
from campaign_engine.campaigns.profiles.import_writer import BatchWriter, Committed
from campaign_engine.campaigns.profiles.records import upsert_profiles
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, Conflict, ServiceUnavailable
from campaign_engine.domain.profile import GuardianIn, ProfileIn, ProfileUpsert
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.domain.webhook_keys import SecretBox
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["COLUMNS", "CsvImportReport", "RowRejection", "import_csv"]

COLUMNS = ("profileId", "email", "emailVerified", "dob", "locale", "timeZone", "tags", "guardians")
MAX_LISTED = 1000  # rejections listed in the answer; all are counted
_BATCH = 1000  # ProfileUpsert's own limit: one transaction per batch
_TRUE = frozenset({"true", "yes", "1", "y"})
_FALSE = frozenset({"false", "no", "0", "n"})
# The model's field path -> the CSV column that fed it.
_COLUMN_OF = {"profileId": "profileId", "emails": "email", "dob": "dob", "locale": "locale",
              "timeZone": "timeZone", "tags": "tags"}  # fmt: skip


class RowRejection(BaseModel):
    line: int
    column: str | None = Field(description="the column at fault; null for the row as a whole")
    reason: str


class CsvImportReport(CamelModel):
    rows: int = Field(description="data rows read (the header excluded)")
    created: int
    updated: int = Field(description="existing profiles the file changed (dry run: every existing one)")
    unchanged: int = Field(description="existing profiles that already held every fact their row names")
    rejected: list[RowRejection] = Field(description=f"up to {MAX_LISTED} rejected rows, by line")
    rejected_count: Annotated[int, Field(description="every rejected row")]
    unknown_columns: list[str]
    guardian_links: Annotated[
        int, Field(description="GUARDIAN_OF links created or changed (dry run: valid)")
    ] = 0
    dry_run: bool


@dataclass
class _Tally:
    rows: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: list[RowRejection] = field(default_factory=list)
    rejected_count: int = 0

    def reject(self, line: int, column: str | None, reason: str) -> None:
        self.rejected_count += 1
        if len(self.rejected) < MAX_LISTED:
            self.rejected.append(RowRejection(line=line, column=column, reason=reason))


def _flag(text: str) -> bool | None:
    lowered = text.strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _row_input(cells: dict[str, str], line: int, tally: _Tally) -> dict[str, Any] | None:
    """The ``ProfileIn`` input of one row's non-empty known cells; None (reported) when a cell cannot
    be read at all."""
    given = {name: value.strip() for name, value in cells.items() if name in COLUMNS and value.strip()}
    row: dict[str, Any] = {"profileId": given.get("profileId", "")}
    for name in ("dob", "locale", "timeZone"):
        if name in given:
            row[name] = given[name]
    if "tags" in given:
        row["tags"] = [tag.strip() for tag in given["tags"].split(";") if tag.strip()]
    verified = None
    if "emailVerified" in given:
        verified = _flag(given["emailVerified"])
        if verified is None:
            tally.reject(line, "emailVerified", "use true or false (also yes/no, 1/0)")
            return None
        if "email" not in given:
            tally.reject(line, "emailVerified", "emailVerified is given with the email it describes")
            return None
    if "email" in given:
        row["emails"] = [{"address": given["email"], "verified": bool(verified), "primary": True}]
    return row


def guardian_cell(minor: str, cell: str, line: int) -> LinkRow | str:
    """``g1:granted;g2:revoked`` as the row's link set, or why it cannot be read."""
    pairs: list[LinkPair] = []
    for part in (p.strip() for p in cell.split(";")):
        guardian, _, consent = part.rpartition(":")
        if not part:
            continue
        try:
            named = GuardianIn.model_validate({"profileId": guardian.strip(), "consent": consent.strip()})
        except ValidationError:
            return f"'{part}': write profileId:granted or profileId:revoked, ';' between guardians"
        if named.profile_id == minor or any(p.guardian == named.profile_id for p in pairs):
            return f"'{named.profile_id}' is the row's own profile or listed twice"
        pairs.append(LinkPair(named.profile_id, named.consent, line, "guardians"))
    return LinkRow(minor, tuple(pairs))


def _rejection(exc: ValidationError) -> tuple[str | None, str]:
    """The column and reason of a row's first validation error, in the words of the CSV."""
    err = exc.errors(include_url=False, include_input=False)[0]
    loc = [str(part) for part in err["loc"]]
    column = _COLUMN_OF.get(loc[0]) if loc else None
    if loc[:1] == ["emails"] and loc[-1:] == ["verified"]:
        column = "emailVerified"
    message = str(err["msg"])
    if err["type"] == "string_too_short" and column == "profileId":
        message = "profileId is required"
    return column, message


_EXISTING = "csv_import_existing"  # cypher/profiles/csv_import_existing.cypher


def _valid_rows(
    reader: csv.DictReader[str], tally: _Tally, links: list[LinkRow], link_lines: set[int]
) -> Iterator[tuple[int, ProfileIn]]:
    """Each valid row with its line, in file order; every other row rejected in ``tally``, each row's
    guardian cell kept in ``links`` (its line in ``link_lines``)."""
    start = reader.line_num + 1
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            tally.rows += 1
            cells.pop("\x00extra", None)  # cells past the header's: ignored like unknown columns
            row = _row_input({k: v for k, v in cells.items() if v is not None}, line, tally)
            if row is None:
                continue
            try:
                profile = ProfileIn.model_validate(row)
            except ValidationError as exc:
                tally.reject(line, *_rejection(exc))
                continue
            cell = (cells.get("guardians") or "").strip()
            if cell:
                link = guardian_cell(profile.profile_id, cell, line)
                if isinstance(link, str):
                    tally.reject(line, "guardians", link)
                    continue
                if link.pairs:
                    links.append(link)
                    link_lines.add(line)
            yield line, profile
    except csv.Error as exc:  # e.g. a NUL byte: what was read before it is imported, the rest is not
        tally.reject(start, None, f"not CSV from here on ({exc}); the rows after it were not read")


@dataclass
class _Written:
    """One batch's outcome, applied to the report on the parsing thread."""

    seq: int
    lines: list[int] = field(default_factory=list)
    """The lines it committed."""
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: list[tuple[int, str | None, str]] = field(default_factory=list)


def _existing(tx: Tx, ids: list[str], tenant: str | None) -> dict[str, bool]:
    """Which of ``ids`` exist, each with whether ``tenant`` (None: any) may write it."""
    return {str(r["id"]): bool(r["ours"]) for r in tx.run(statement(_EXISTING), ids=ids, tenant=tenant)}


def import_csv(
    graph: Graph,
    text: Iterable[str],
    *,
    tenant_id: str,
    platform: bool,
    dry_run: bool = False,
    audit: AuditContext | None = None,
    clock: Clock = system_clock,
    secrets: SecretBox | None = None,
    adult_age: int = 18,
) -> CsvImportReport:
    """Read ``text`` (lines with their endings, as a text file iterates) and import it; see the module
    docstring. BAD_REQUEST only for a file that cannot be read as a whole (no header, no profileId
    column, not CSV); every row-level problem is in the report."""
    reader = csv.DictReader(without_bom(text), restkey="\x00extra")
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        raise BadRequest(f"line 1: the header is not CSV ({exc})") from exc
    if not header:
        raise BadRequest("the file is empty: expected a header row naming profileId and other columns")
    names = [name.strip() for name in header]
    if "profileId" not in names:
        raise BadRequest(f"the header has no profileId column (it has: {', '.join(names)[:200]})")
    reader.fieldnames = names
    tally = _Tally()
    batch: dict[str, tuple[int, ProfileIn]] = {}
    scope = None if platform else tenant_id
    counted: set[str] = set()  # dry runs only: the ids already counted
    links: list[LinkRow] = []
    link_lines: set[int] = set()  # the lines that name guardians, and those of them later refused
    unwritten: set[int] = set()

    def write(seq: int, rows: list[tuple[int, ProfileIn]]) -> _Written:
        """One batch, on a writer thread (dry runs: on this one, in order); touches no shared state."""
        written = _Written(seq)
        # A platform credential may write any profile, so only a dry run (which counts created and updated
        # without writing) needs to know which exist; the write itself answers that.
        ids = [p.profile_id for _, p in rows]
        existing = {} if scope is None and not dry_run else graph.read(_existing, ids, scope)
        for line, profile in rows:
            if not existing.get(profile.profile_id, True):
                written.rejected.append((line, "profileId", "this profileId is taken outside this tenant"))
        writable = [(line, p) for line, p in rows if existing.get(p.profile_id, True)]
        if not writable:
            return written
        if dry_run:  # a profileId the run already counted would exist by now: it is an update
            known = sum(1 for _, p in writable if p.profile_id in existing or p.profile_id in counted)
            counted.update(p.profile_id for _, p in writable)
            written.created, written.updated = len(writable) - known, known
            return written
        entry = None if audit is None else audit.next_entry(clock())
        upsert = ProfileUpsert(profiles=[p for _, p in writable])
        try:
            result = upsert_profiles(graph, upsert, tenant_id=tenant_id, platform=platform, audit=entry,
                                     secrets=secrets)  # fmt: skip
        except (Conflict, BadRequest) as exc:  # taken by another tenant since the check: none written
            written.rejected.extend(
                (line, None, f"{exc.message} (re-run the file to retry these rows)") for line, _ in writable
            )
            return written
        written.created, written.updated, written.unchanged = result.created, result.updated, result.unchanged
        written.lines = [line for line, _ in writable]
        return written

    def settled(written: _Written) -> None:
        tally.created, tally.updated = tally.created + written.created, tally.updated + written.updated
        tally.unchanged += written.unchanged
        committed.add(written.seq, written.lines)
        for rejection in written.rejected:
            tally.reject(*rejection)
            if rejection[0] in link_lines:
                unwritten.add(rejection[0])

    writer: BatchWriter[_Written] = BatchWriter(settled, in_flight=1 if dry_run else 2)
    committed, batches = Committed(), itertools.count()

    def flush() -> None:
        if not batch:
            return
        rows, seq = sorted(batch.values()), next(batches)
        batch.clear()
        writer.submit(frozenset(p.profile_id for _, p in rows), lambda: write(seq, rows))

    try:  # the graph stopped answering: the answer says which batches committed
        try:
            for line, profile in _valid_rows(reader, tally, links, link_lines):
                if profile.profile_id in batch:  # in file order: the earlier row is written first
                    flush()
                batch[profile.profile_id] = (line, profile)
                if len(batch) >= _BATCH:
                    flush()
            flush()
        finally:
            writer.close()
        # A row refused when its batch was written links nothing, however many rejections the report lists.
        provenance = Provenance(source="csv", now=clock(), audit=audit)
        written = import_links(
            graph,
            [r for r in links if r.pairs[0].line not in unwritten],
            tenant=scope,
            adult_age=adult_age,
            clock=clock,
            provenance=provenance,
            reject=tally.reject,
            dry_run=dry_run,
            new_tenant=tenant_id,
            assume_existing=frozenset(counted),
        )
    except ServiceUnavailable as exc:
        raise committed.cut(exc) from exc
    return CsvImportReport(
        rows=tally.rows,
        created=tally.created,
        updated=tally.updated,
        unchanged=tally.unchanged,
        rejected=sorted(tally.rejected, key=lambda r: r.line),
        rejected_count=tally.rejected_count,
        unknown_columns=[name for name in names if name not in COLUMNS],
        guardian_links=written,
        dry_run=dry_run,
    )
