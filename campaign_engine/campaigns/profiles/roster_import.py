"""Roster import: the families a school exports, as profiles and ``GUARDIAN_OF`` links.

Two formats, each a CSV file with a header row (UTF-8, a byte-order mark allowed), with a report of
every rejected row (line, column, reason; the first 1,000 listed, all counted) and a dry run:

- ``oneroster``: OneRoster 1.1 / 1.2 ``users.csv``. Read: ``sourcedId`` (the profileId), ``status``
  (``tobedeleted`` rows are skipped), ``role`` (1.1; ``roles`` accepted under that name), ``email``,
  ``agentSourcedIds`` (comma-separated) and ``birthDate`` where an export adds it (the standard keeps
  it in ``demographics.csv``). A ``student`` becomes a managed profile (``isManaged``: with no known age
  the age policy treats it as a minor) and stores nothing else, not even an email; a ``guardian``,
  ``parent`` or ``relative`` new to the engine stores its email (unverified: the school collected it,
  the person did not confirm it); an existing profile keeps its addresses. Names and every other column
  are never stored: the engine models no names, and the README's rule on private learner data stands.
  Other roles are skipped. Links come from both directions OneRoster writes them: a student's agents
  are its guardians, a guardian's agents its children; each student's set in the file replaces its
  stored one.
- ``sds``: School Data Sync v2.1 ``relationships.csv``: ``userSourcedId`` (the student),
  ``relationshipUserSourcedId`` (the guardian), ``relationshipRole`` (``parent``, ``guardian`` or
  ``relative``; other roles are rejected). Both profiles must exist (import them first); the file's
  rows for a student replace its guardian set. SDS v1 ``guardianrelationship.csv`` (by email) is not read.

Consent: neither format carries it. A new link is ``revoked`` (recorded, never routed) and an existing
link keeps the consent it has, unless the caller states that the school collected consent
(``consentCollected``): then every link of the file is ``granted``. Links are applied after all the
file's profiles, through ``campaigns/profiles/guardians.py`` (the same checks as ``profiles.upsert``).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from campaign_engine.campaigns.profiles.csv_import import MAX_LISTED, RowRejection, _existing
from campaign_engine.campaigns.profiles.guardians import LinkPair, LinkRow, Provenance, Source, import_links
from campaign_engine.campaigns.profiles.import_text import without_bom
from campaign_engine.campaigns.profiles.import_writer import Committed
from campaign_engine.campaigns.profiles.records import upsert_profiles
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, Conflict, ServiceUnavailable
from campaign_engine.domain.profile import Consent, GuardianIn, ProfileIn, ProfileUpsert
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph

__all__ = ["RosterFormat", "RosterImportReport", "import_roster"]

RosterFormat = Literal["oneroster", "sds"]
GUARDIAN_ROLES = frozenset({"guardian", "parent", "relative"})
_SDS_COLUMNS = ("userSourcedId", "relationshipUserSourcedId", "relationshipRole")
_BATCH = 1000


class RosterImportReport(CamelModel):
    format: RosterFormat
    rows: int = Field(description="data rows read (the header excluded)")
    created: int
    updated: int = Field(description="existing profiles the file changed (dry run: every existing one)")
    unchanged: int = Field(description="existing profiles that already held every fact their row names")
    skipped: int = Field(description="rows of other roles, or status tobedeleted")
    guardian_links: Annotated[int, Field(description="links created or changed")]
    rejected: list[RowRejection] = Field(description=f"up to {MAX_LISTED} rejected rows, by line")
    rejected_count: Annotated[int, Field(description="every rejected row")]
    dry_run: bool


class _Report:
    def __init__(self) -> None:
        self.rows = self.created = self.updated = self.unchanged = self.skipped = self.count = 0
        self.rejected: list[RowRejection] = []

    def reject(self, line: int, column: str | None, reason: str) -> None:
        self.count += 1
        if len(self.rejected) < MAX_LISTED:
            self.rejected.append(RowRejection(line=line, column=column, reason=reason))


def _rows(
    text: Iterable[str], required: tuple[str, ...], report: _Report
) -> Iterator[tuple[int, dict[str, str]]]:
    """The data rows with their lines; BAD_REQUEST for a header that cannot be read (before any row),
    and a rejection where the file stops being CSV (e.g. a NUL byte): the rows after it are not read,
    those before it are imported, as the CSV import does."""
    reader = csv.DictReader(without_bom(text))
    try:
        header = [name.strip() for name in reader.fieldnames or []]
    except csv.Error as exc:
        raise BadRequest(f"line 1: the header is not CSV ({exc})") from exc
    if missing := [name for name in required if name not in header]:
        raise BadRequest(f"the header has no {', '.join(missing)} column (it has: {', '.join(header)[:200]})")
    reader.fieldnames = header
    start = reader.line_num + 1
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            yield line, {k: (v or "").strip() for k, v in cells.items() if isinstance(k, str)}
    except csv.Error as exc:
        report.reject(start, None, f"not CSV from here on ({exc}); the rows after it were not read")


def _valid_id(value: str) -> bool:
    try:
        GuardianIn.model_validate({"profileId": value, "consent": "revoked"})
    except ValidationError:
        return False
    return True


def _oneroster(
    text: Iterable[str],
    report: _Report,
    consent: Consent | None,
    write: Callable[[list[tuple[int, ProfileIn]]], None],
) -> list[tuple[str, LinkPair]]:
    """Reads the file once, handing its profiles to ``write`` ``_BATCH`` at a time as they come (memory
    holds one batch, plus each user's role and agents for the links), and answers the link pairs."""
    profiles: list[tuple[int, ProfileIn]] = []
    agents: list[tuple[int, str, str, list[str]]] = []  # line, id, role, agent ids
    role_of: dict[str, str] = {}
    for line, cells in _rows(text, ("sourcedId",), report):
        report.rows += 1
        sid, role = cells.get("sourcedId", ""), (cells.get("role") or cells.get("roles") or "").lower()
        if cells.get("status", "").lower() == "tobedeleted" or (
            role and role != "student" and role not in GUARDIAN_ROLES
        ):
            report.skipped += 1
            continue
        if not role:
            report.reject(line, "role", "role is required (student, guardian, parent or relative)")
            continue
        row: dict[str, Any] = {"profileId": sid}
        if role == "student":
            row["isManaged"] = True
            if cells.get("birthDate"):
                row["dob"] = cells["birthDate"]
        elif cells.get("email"):
            row["emails"] = [{"address": cells["email"], "verified": False, "primary": True}]
        try:
            profile = ProfileIn.model_validate(row)
        except ValidationError as exc:
            err = exc.errors(include_url=False, include_input=False)[0]
            column = {"profileId": "sourcedId", "dob": "birthDate", "emails": "email"}.get(str(err["loc"][0]))
            report.reject(line, column, "sourcedId is required" if not sid else str(err["msg"]))
            continue
        ids = [a.strip() for a in cells.get("agentSourcedIds", "").split(",") if a.strip()]
        if bad := [a for a in ids if not _valid_id(a) or a == sid]:
            report.reject(line, "agentSourcedIds", f"'{bad[0]}' is not another user's sourcedId")
            continue
        profiles.append((line, profile))
        if len(profiles) >= _BATCH:
            write(profiles)
            profiles = []
        role_of[sid] = role
        agents.append((line, sid, role, ids))
    if profiles:
        write(profiles)
    pairs: list[tuple[str, LinkPair]] = []
    for line, sid, role, ids in agents:
        for agent in ids:
            other = role_of.get(agent)
            student, guardian = (sid, agent) if role == "student" else (agent, sid)
            if other is not None and (other == "student") == (role == "student"):
                report.reject(
                    line,
                    "agentSourcedIds",
                    f"agent '{agent}' is a {other}: a student's agents are its guardians, and a "
                    "guardian's its children",
                )
                continue
            pairs.append((student, LinkPair(guardian, consent, line, "agentSourcedIds")))
    return pairs


def _sds(text: Iterable[str], report: _Report, consent: Consent | None) -> list[tuple[str, LinkPair]]:
    pairs: list[tuple[str, LinkPair]] = []
    for line, cells in _rows(text, _SDS_COLUMNS, report):
        report.rows += 1
        student, guardian, role = (cells.get(name, "") for name in _SDS_COLUMNS)
        for column, value in (("userSourcedId", student), ("relationshipUserSourcedId", guardian)):
            if not _valid_id(value):
                report.reject(line, column, f"{column} is required: a sourcedId with no spaces or commas")
                break
        else:
            if role.lower() not in GUARDIAN_ROLES:
                report.reject(line, "relationshipRole", f"'{role}' is not parent, guardian or relative")
            elif student == guardian:
                report.reject(line, "relationshipUserSourcedId", "a student cannot be their own guardian")
            else:
                pairs.append((student, LinkPair(guardian, consent, line, "relationshipUserSourcedId")))
    return pairs


def _link_rows(pairs: list[tuple[str, LinkPair]]) -> list[LinkRow]:
    by_student: dict[str, dict[str, LinkPair]] = {}
    for student, pair in pairs:
        by_student.setdefault(student, {}).setdefault(pair.guardian, pair)
    return [LinkRow(s, tuple(found.values())) for s, found in by_student.items()]


def import_roster(
    graph: Graph,
    text: Iterable[str],
    *,
    format: RosterFormat,
    tenant_id: str,
    platform: bool,
    consent_collected: bool = False,
    dry_run: bool = False,
    audit: AuditContext | None = None,
    clock: Clock = system_clock,
    adult_age: int = 18,
) -> RosterImportReport:
    """Read ``text`` (a file's lines) in ``format`` and import it, writing its profiles a batch at a time
    as they are read; see the module docstring. BAD_REQUEST only for a file whose header cannot be read
    (none, a required column missing), before anything is written."""
    report = _Report()
    consent: Consent | None = "granted" if consent_collected else None
    scope = None if platform else tenant_id
    handed: set[str] = set()  # the profileIds handed to the writes: a dry run's guardians may name them
    refused: set[int] = set()  # lines taken outside the tenant: they link nothing

    committed, batches = Committed(), itertools.count()

    def write(rows: list[tuple[int, ProfileIn]]) -> None:
        lost = _write_profiles(graph, rows, report, tenant_id=tenant_id, platform=platform, dry_run=dry_run,
                               audit=audit, clock=clock)  # fmt: skip
        refused.update(lost)
        handed.update(p.profile_id for _, p in rows)
        committed.add(next(batches), [] if dry_run else [line for line, _ in rows if line not in lost])

    source: Source = format
    try:  # the graph stopped answering: the answer says which batches committed
        pairs = (
            _oneroster(text, report, consent, write) if format == "oneroster" else _sds(text, report, consent)
        )
        written = import_links(
            graph,
            _link_rows([(s, p) for s, p in pairs if p.line not in refused]),
            tenant=scope,
            adult_age=adult_age,
            clock=clock,
            provenance=Provenance(source, clock(), audit),
            reject=report.reject,
            dry_run=dry_run,
            new_tenant=tenant_id,
            assume_existing=frozenset(handed),
        )
    except ServiceUnavailable as exc:
        raise committed.cut(exc) from exc
    return RosterImportReport(
        format=format,
        rows=report.rows,
        created=report.created,
        updated=report.updated,
        unchanged=report.unchanged,
        skipped=report.skipped,
        guardian_links=written,
        rejected=sorted(report.rejected, key=lambda r: r.line),
        rejected_count=report.count,
        dry_run=dry_run,
    )


def _write_profiles(
    graph: Graph,
    rows: list[tuple[int, ProfileIn]],
    report: _Report,
    *,
    tenant_id: str,
    platform: bool,
    dry_run: bool,
    audit: AuditContext | None,
    clock: Clock,
) -> list[int]:
    """Writes one batch; answers the lines it refused."""
    latest = {p.profile_id: (line, p) for line, p in rows}  # a sourcedId repeated: its last row
    existing = graph.read(_existing, sorted(latest), None if platform else tenant_id)
    writable = []
    refused: list[int] = []
    for line, profile in sorted(latest.values()):
        if profile.profile_id in existing and existing[profile.profile_id] and profile.named("emails"):
            # an existing profile keeps its addresses: a roster must not undo a verification made elsewhere
            unset = profile.model_dump(by_alias=True, exclude_unset=True, exclude={"emails"})
            profile = ProfileIn.model_validate(unset)
        if existing.get(profile.profile_id, True):
            writable.append(profile)
        else:
            report.reject(line, "sourcedId", "this sourcedId is taken outside this tenant")
            refused.append(line)
    if dry_run or not writable:
        known = sum(1 for p in writable if p.profile_id in existing)
        report.created, report.updated = report.created + len(writable) - known, report.updated + known
        return refused
    entry = None if audit is None else audit.next_entry(clock())
    try:
        result = upsert_profiles(
            graph,
            ProfileUpsert(profiles=writable),
            tenant_id=tenant_id,
            platform=platform,
            audit=entry,
            clock=clock,
            source="oneroster",
        )
    except (Conflict, BadRequest) as exc:
        for line, _ in latest.values():
            report.reject(line, None, f"{exc.message} (re-run the file to retry these rows)")
        return refused + [line for line, _ in latest.values()]
    report.created += result.created
    report.updated += result.updated
    report.unchanged += result.unchanged
    return refused
