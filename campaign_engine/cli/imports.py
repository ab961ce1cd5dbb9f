"""``profiles import`` and ``roster import``: files of people into the graph, as the HTTP imports do.

The command line has no token: the operator holds the database and so acts as the platform, in the
tenant ``--tenant`` names (the default tenant without it); the audit trail names the operating-system
user who ran the command, in that tenant's trail.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from campaign_engine.cli.common import CommandFailed, command_graph, load_settings
from campaign_engine.config import Settings

if TYPE_CHECKING:
    from campaign_engine.graph.audit import AuditContext
    from campaign_engine.graph.graph import Graph

__all__ = ["add_import_commands"]


def _cli_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no login name (e.g. a container user without a passwd entry)
        return "cli"


def _import_tenant(graph: Graph, settings: Settings, tenant: str | None) -> str:
    """``--tenant`` (default: the deployment's default tenant), which must exist: rows never land in a
    tenant a typo made up."""
    from campaign_engine.graph.tenant_directory import tenants_of

    if tenant is None:
        return settings.campaign_default_tenant_id
    if tenants_of(graph, settings).tenant(tenant) is None:
        graph.close()
        raise CommandFailed(f"no tenant {tenant!r}: create it first (tenants.create), then import")
    return tenant


def _profiles_import(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from campaign_engine.campaigns.profiles.records import import_jsonl
    from campaign_engine.domain.types import system_clock
    from campaign_engine.graph.audit import AuditContext

    settings = load_settings()
    graph = command_graph(settings)
    tenant_id = _import_tenant(graph, settings, args.tenant)
    audit = AuditContext.begin(
        actor=_cli_actor(), procedure="cli.profiles.import", request_id=uuid.uuid4().hex,
        now=system_clock(), tenant_id=tenant_id,
    )  # fmt: skip
    if args.file.lower().endswith(".csv"):
        return _profiles_import_csv(args, graph, settings, audit, tenant_id=tenant_id)
    try:
        with Path(args.file).open(encoding="utf-8") as lines, tqdm(unit="profiles") as bar:
            result = import_jsonl(
                graph, lines, batch_size=args.batch_size, progress=bar.update, audit=audit,
                tenant_id=tenant_id, secrets=settings.secret_box(),
            )  # fmt: skip
    finally:
        graph.close()
    for generated in result.webhook_secrets:  # shown this once: the graph holds them only sealed
        print(json.dumps({"profileId": generated.profile_id, "webhookSecret": generated.secret}))
    print(
        f"created={result.created} updated={result.updated} missingConnections={result.missing_connections}"
    )
    return 0


def _profiles_import_csv(
    args: argparse.Namespace, graph: Graph, settings: Settings, audit: AuditContext, *, tenant_id: str
) -> int:
    """The CSV import with its report (``campaigns/profiles/csv_import.py``), as ``POST /imports/profiles``
    answers it; exit status 1 when a row was rejected, so a script notices."""
    from campaign_engine.campaigns.profiles.csv_import import import_csv

    try:
        bad = _not_utf8_at(Path(args.file))
        if bad is not None:  # refused before any row is written, as the HTTP import refuses it
            print(f"{args.file}: not UTF-8 at byte {bad}; nothing was imported", file=sys.stderr)
            return 2
        with Path(args.file).open(encoding="utf-8", newline="") as text:  # import_csv drops a BOM
            report = import_csv(
                graph, text, tenant_id=tenant_id, platform=True,
                dry_run=args.dry_run, audit=None if args.dry_run else audit, secrets=settings.secret_box(),
                adult_age=settings.campaign_adult_age,
            )  # fmt: skip
    finally:
        graph.close()
    print(json.dumps(report.model_dump(by_alias=True), indent=2))
    return 1 if report.rejected_count else 0


def _roster_import(args: argparse.Namespace) -> int:
    """``roster import --format oneroster|sds FILE``, as ``POST /imports/roster`` answers it; exit 1 when
    a row was rejected, 2 when the file is not UTF-8."""
    from campaign_engine.campaigns.profiles.roster_import import import_roster
    from campaign_engine.domain.types import system_clock
    from campaign_engine.graph.audit import AuditContext

    settings = load_settings()
    if (bad := _not_utf8_at(Path(args.file))) is not None:
        print(f"{args.file}: not UTF-8 at byte {bad}; nothing was imported", file=sys.stderr)
        return 2
    graph = command_graph(settings)
    tenant_id = _import_tenant(graph, settings, args.tenant)
    audit = AuditContext.begin(
        actor=_cli_actor(), procedure="cli.roster.import", request_id=uuid.uuid4().hex,
        now=system_clock(), tenant_id=tenant_id,
    )  # fmt: skip
    try:
        with Path(args.file).open(encoding="utf-8", newline="") as text:
            report = import_roster(
                graph, text, format=args.format, tenant_id=tenant_id, platform=True,
                consent_collected=args.consent_collected, dry_run=args.dry_run,
                audit=None if args.dry_run else audit, adult_age=settings.campaign_adult_age,
            )  # fmt: skip
    finally:
        graph.close()
    print(json.dumps(report.model_dump(by_alias=True), indent=2))
    return 1 if report.rejected_count else 0


def _not_utf8_at(path: Path) -> int | None:
    """The 1-based offset of the first byte of ``path`` that is not UTF-8, or None."""
    from campaign_engine.campaigns.profiles.csv_import import Utf8Check

    check = Utf8Check()
    with path.open("rb") as raw:
        while block := raw.read(1 << 20):
            if (bad := check.feed(block)) is not None:
                return bad
    return check.end()


def add_import_commands(commands: Any) -> None:
    """Register ``profiles import`` and ``roster import`` on the top-level subparsers."""
    profiles = commands.add_parser("profiles", help="profile administration")
    profile_commands = profiles.add_subparsers(dest="profiles_command", required=True)
    importer = profile_commands.add_parser(
        "import", help="stream a JSONL or CSV file (by its .csv suffix) of profiles into the graph"
    )
    importer.add_argument("file")
    importer.add_argument("--batch-size", type=int, default=1000)
    importer.add_argument("--dry-run", action="store_true", help="CSV: validate and count, write nothing")
    importer.add_argument("--tenant", help="the tenant the rows belong to (default: the default tenant)")
    importer.set_defaults(run=_profiles_import)
    roster = commands.add_parser("roster", help="school rosters: families as profiles and guardian links")
    roster_import = roster.add_subparsers(dest="roster_command", required=True).add_parser(
        "import", help="a OneRoster users.csv or an SDS v2.1 relationships.csv, with a per-row report"
    )
    roster_import.add_argument("--format", choices=["oneroster", "sds"], required=True)
    roster_import.add_argument("file")
    roster_import.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    roster_import.add_argument("--tenant", help="the tenant the rows belong to (default: the default tenant)")
    roster_import.add_argument(
        "--consent-collected", action="store_true", help="the school collected consent: links are granted"
    )
    roster_import.set_defaults(run=_roster_import)
