"""``profiles import`` and ``roster import``: files of people into the graph, as the HTTP imports do.

Without ``--token`` the operator holds the database and so acts as the platform (writing the shared
facts, docs/people.md), in the tenant ``--tenant`` names (the default tenant without it); the audit trail
names the operating-system user who ran the command, in that tenant's trail. With ``--token`` (a bearer
token or an API key, ``-`` to read it from standard input and keep it out of the process list) the
command acts as that credential, as the HTTP imports do: a tenant's credential needs ``author`` in the
tenant, writes its view of each person, and only an ``admin`` writes receivers.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import uuid
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Credential:
    """Who an import runs as: the tenant, whether it is the platform, its audit actor, whether it may
    write receivers."""

    tenant_id: str
    platform: bool
    actor: str
    may_route: bool


def _credential(graph: Graph, settings: Settings, args: argparse.Namespace) -> _Credential:
    """The operator (no ``--token``: the platform), or the token's caller checked as the HTTP import
    checks it: ``author`` in the tenant (``--tenant``, else the token's own), ``admin`` for receivers."""
    from campaign_engine.api.access import ROLES, highest, role_satisfies
    from campaign_engine.api.auth import TokenVerifier
    from campaign_engine.api.routers.profiles import ROUTE_ROLE, UPSERT_ROLE
    from campaign_engine.campaigns.tenants.access_grants import roles_of
    from campaign_engine.campaigns.tenants.api_keys import verify_key
    from campaign_engine.domain.errors import CampaignError
    from campaign_engine.domain.types import system_clock

    if args.token is None:
        return _Credential(_import_tenant(graph, settings, args.tenant), True, _cli_actor(), True)
    from_stdin = args.token == "-"  # noqa: S105 - the flag's value, not a secret
    token = sys.stdin.readline().strip() if from_stdin else args.token
    verifier = TokenVerifier(settings, api_keys=lambda t: verify_key(graph, t, now=system_clock()))
    try:
        caller = verifier.verify(f"Bearer {token}")
    except CampaignError as exc:
        graph.close()
        raise CommandFailed(f"--token is not accepted: {exc.message}") from exc
    assert caller is not None  # a non-empty header
    tenant_id = _import_tenant(graph, settings, args.tenant or caller.tenant_id)
    if caller.is_admin:
        return _Credential(tenant_id, True, caller.profile_id, True)
    granted = roles_of(graph, tenant_id=tenant_id, subject=caller.profile_id)
    signed = caller.roles if caller.tenant_id == tenant_id else frozenset()
    role = highest({r for r in ROLES if r in signed or r in granted})
    if not role_satisfies(role, UPSERT_ROLE):
        graph.close()
        raise CommandFailed(f"this token does not hold the {UPSERT_ROLE} role in tenant '{tenant_id}'")
    return _Credential(tenant_id, False, caller.profile_id, role_satisfies(role, ROUTE_ROLE))


def _profiles_import(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from campaign_engine.campaigns.profiles.records import import_jsonl
    from campaign_engine.domain.errors import CampaignError
    from campaign_engine.domain.types import system_clock
    from campaign_engine.graph.audit import AuditContext

    settings = load_settings()
    graph = command_graph(settings)
    who = _credential(graph, settings, args)
    audit = AuditContext.begin(
        actor=who.actor, procedure="cli.profiles.import", request_id=uuid.uuid4().hex,
        now=system_clock(), tenant_id=who.tenant_id,
    )  # fmt: skip
    if args.file.lower().endswith(".csv"):
        return _profiles_import_csv(args, graph, settings, audit, who)
    try:
        with Path(args.file).open(encoding="utf-8") as lines, tqdm(unit="profiles") as bar:
            result = import_jsonl(
                graph, lines, batch_size=args.batch_size, progress=bar.update, audit=audit,
                tenant_id=who.tenant_id, secrets=settings.secret_box(), platform=who.platform,
                may_route=who.may_route,
            )  # fmt: skip
    except CampaignError as exc:  # a bad line, a row the credential may not write: said, not a traceback
        raise CommandFailed(exc.message) from exc
    finally:
        graph.close()
    for generated in result.webhook_secrets:  # shown this once: the graph holds them only sealed
        print(json.dumps({"profileId": generated.profile_id, "webhookSecret": generated.secret}))
    print(
        f"created={result.created} updated={result.updated} unchanged={result.unchanged} "
        f"missingConnections={result.missing_connections}"
    )
    return 0


def _profiles_import_csv(
    args: argparse.Namespace, graph: Graph, settings: Settings, audit: AuditContext, who: _Credential
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
                graph, text, tenant_id=who.tenant_id, platform=who.platform,
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
    who = _credential(graph, settings, args)
    audit = AuditContext.begin(
        actor=who.actor, procedure="cli.roster.import", request_id=uuid.uuid4().hex,
        now=system_clock(), tenant_id=who.tenant_id,
    )  # fmt: skip
    try:
        with Path(args.file).open(encoding="utf-8", newline="") as text:
            report = import_roster(
                graph, text, format=args.format, tenant_id=who.tenant_id, platform=who.platform,
                consent_collected=args.consent_collected, dry_run=args.dry_run,
                audit=None if args.dry_run else audit, adult_age=settings.campaign_adult_age,
            )  # fmt: skip
    finally:
        graph.close()
    print(json.dumps(report.model_dump(by_alias=True), indent=2))
    return 1 if report.rejected_count else 0


def _not_utf8_at(path: Path) -> int | None:
    """The 1-based offset of the first byte of ``path`` that is not UTF-8, or None."""
    from campaign_engine.campaigns.profiles.import_text import Utf8Check

    check = Utf8Check()
    with path.open("rb") as raw:
        while block := raw.read(1 << 20):
            if (bad := check.feed(block)) is not None:
                return bad
    return check.end()


_CREDENTIAL_HELP = (
    "act as this bearer token or API key ('-': read it from standard input), as the HTTP import does; "
    "without it, the operator writes as the platform"
)


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
    importer.add_argument("--token", help=_CREDENTIAL_HELP)
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
    roster_import.add_argument("--token", help=_CREDENTIAL_HELP)
    roster_import.set_defaults(run=_roster_import)
