"""``campaign-engine``: the command-line edge (serve, worker, dev, token, dispatch watch, profiles, ...).

Settings come from the environment; ``CAMPAIGN_ENV_FILE`` names an optional dotenv file (``make dev``
writes ``.local/dev.env`` with generated local secrets). Every command logs JSON lines to stderr
(``observability/logs.py``, configured when it loads its settings); uvicorn's access lines go through
the same redaction and never carry a query string (unsubscribe tokens, tRPC inputs).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from campaign_engine.cli.common import CommandFailed, command_graph, load_settings
from campaign_engine.cli.imports import add_import_commands
from campaign_engine.config import ConfigError

__all__ = ["main"]

_LOCAL = Path(".local")


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from campaign_engine.api.app import create_app, freeze_startup_heap

    settings = load_settings()
    app = create_app(settings)
    freeze_startup_heap()
    # log_config=None: uvicorn's records go to our handler (JSON, redacted), not its own formatters.
    uvicorn.run(app, host=args.host, port=args.port, access_log=True, log_config=None)
    return 0


def _worker(args: argparse.Namespace) -> int:
    from campaign_engine.wiring import run_worker

    run_worker(load_settings())
    return 0


def _sweep(args: argparse.Namespace) -> int:
    settings = load_settings()
    graph = command_graph(settings)  # before the queue's heavy imports: an absent graph is said at once
    from campaign_engine.wiring import build_dispatch_queue, run_sweep

    try:
        print(run_sweep(settings, graph, build_dispatch_queue(settings)))
    finally:
        graph.close()
    return 0


def _inbox(args: argparse.Namespace) -> int:
    from campaign_engine.inbox.app import serve_inbox
    from campaign_engine.inbox.learncard import sender_check_for

    settings = load_settings()
    settings.require_webhooks()
    assert settings.notifications_webhook_secret is not None
    serve_inbox(
        host=args.host,
        port=args.port,
        db_path=Path(args.db),
        secret=settings.notifications_webhook_secret.get_secret_value(),
        learncard=sender_check_for(settings),
    )
    return 0


def _smtp_catcher(args: argparse.Namespace) -> int:
    from campaign_engine.delivery.email.catcher import serve_smtp_catcher

    load_settings()  # for its logging only
    serve_smtp_catcher(args.host, args.port, args.mailbox)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from campaign_engine.graph.schema import apply_schema
    from campaign_engine.graph.tenant_directory import tenants_of
    from campaign_engine.graph.tenants import settings_seed

    settings = load_settings()
    rows = settings_seed(settings)  # the tenant settings, checked before anything is written
    graph = command_graph(settings)
    try:
        apply_schema(graph, default_tenant=settings.campaign_default_tenant_id)
        created = tenants_of(graph, settings).seed_now(rows)
    finally:
        graph.close()
    print("schema applied" + (f"; tenant records seeded: {', '.join(created)}" if created else ""))
    return 0


def _token(args: argparse.Namespace) -> int:
    from campaign_engine.api.auth import mint_token

    settings = load_settings(logs=False)
    print(
        mint_token(
            settings,
            profile_id=args.profile_id,
            scope=args.scope,
            ttl_seconds=args.ttl,
            tenant_id=args.tenant,
            roles=args.roles.split(",") if args.roles else None,
        )
    )
    return 0


def _dispatch_watch(args: argparse.Namespace) -> int:
    from campaign_engine.watch import ApiClient, watch_dispatch

    settings = load_settings(logs=False)  # it draws on the terminal; log lines would tear the bars
    stored = settings.campaign_api_token
    token = args.token or (stored.get_secret_value() if stored else "")
    if not token:
        print("dispatch watch needs an admin bearer token: --token or CAMPAIGN_API_TOKEN", file=sys.stderr)
        return 2
    client = ApiClient(args.api or settings.campaign_api_url, token)
    try:
        return watch_dispatch(
            client,
            args.dispatch_id,
            out=sys.stdout,
            err=sys.stderr,
            interval=args.interval,
            retries=args.retries,
        )
    except KeyboardInterrupt:
        return 130
    finally:
        client.close()


def _neo4j(args: argparse.Namespace) -> int:
    from campaign_engine.graph.local_neo4j import LocalNeo4j, build_class_archive

    if args.action == "archive":  # a throwaway store of its own on a free port, removed after
        with tempfile.TemporaryDirectory() as work, socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            probe.close()
            print(f"class archive: {build_class_archive(Path(work), port)}")
        return 0
    server = LocalNeo4j(data_dir=Path(args.data), port=args.port, heap=args.heap)
    if args.action == "start":
        server.start(detached=True)
        print(f"Neo4j ready on {server.uri}")
    elif args.action == "stop":
        server.stop()
        print("Neo4j stopped")
    else:
        print(server.status())
    return 0


def _dev(args: argparse.Namespace) -> int:
    from campaign_engine.dev_stack import run_dev

    return run_dev(host=args.host, port=args.port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="campaign-engine", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    port = int(os.environ.get("PORT", "8000"))
    serve = commands.add_parser("serve", help="run the API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=port)
    serve.set_defaults(run=_serve)

    commands.add_parser("worker", help="run the queue worker (page, delivery and email jobs)").set_defaults(
        run=_worker
    )
    commands.add_parser("sweep", help="re-arm stuck dispatches and enqueue waves that fell due").set_defaults(
        run=_sweep
    )

    inbox = commands.add_parser("inbox", help="run the reference inbox receiver")
    inbox.add_argument("--host", default="127.0.0.1")
    inbox.add_argument("--port", type=int, default=8025)
    inbox.add_argument("--db", default=str(_LOCAL / "inbox.sqlite3"))
    inbox.set_defaults(run=_inbox)

    catcher = commands.add_parser("smtp-catcher", help="local SMTP server that keeps mail as .eml files")
    catcher.add_argument("--host", default="127.0.0.1")
    catcher.add_argument("--port", type=int, default=1025)
    catcher.add_argument("--mailbox", default=str(_LOCAL / "mail"))
    catcher.set_defaults(run=_smtp_catcher)

    dev = commands.add_parser("dev", help="run the whole product locally")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=port)
    dev.set_defaults(run=_dev)

    commands.add_parser("migrate", help="apply cypher/graph/schema.cypher").set_defaults(run=_migrate)

    token = commands.add_parser("token", help="mint a bearer token from AUTH_JWT_SECRET (local use)")
    token.add_argument("--profile-id", required=True)
    token.add_argument("--scope", default="")
    token.add_argument(
        "--ttl",
        type=int,
        default=3600,
        help="seconds the token is valid (default 3600, an hour; make dev's sign-in link: 43200, a day)",
    )
    token.add_argument("--tenant", help="the signed tenantId claim: the tenant the token acts in")
    token.add_argument("--roles", help="the signed roles claim, comma-separated: the roles in --tenant")
    token.set_defaults(run=_token)

    neo4j = commands.add_parser("neo4j", help="control the local Neo4j launcher")
    neo4j.add_argument("action", choices=["start", "stop", "status", "archive"])
    neo4j.add_argument("--data", default=str(_LOCAL / "neo4j"))
    neo4j.add_argument("--port", type=int, default=7687)
    neo4j.add_argument("--heap", default="1g")
    neo4j.set_defaults(run=_neo4j)

    dispatch = commands.add_parser("dispatch", help="follow dispatches through the API")
    dispatch_commands = dispatch.add_subparsers(dest="dispatch_command", required=True)
    watch = dispatch_commands.add_parser("watch", help="live progress of a dispatch until it ends")
    watch.add_argument("dispatch_id", metavar="dispatchId")
    watch.add_argument("--api", help="API base URL (default: CAMPAIGN_API_URL, http://127.0.0.1:8000)")
    watch.add_argument("--token", help="admin bearer token (default: CAMPAIGN_API_TOKEN)")
    watch.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    watch.add_argument("--retries", type=int, default=10, help="unanswered polls before giving up")
    watch.set_defaults(run=_dispatch_watch)

    add_import_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except CommandFailed as exc:
        print(f"campaign-engine: {exc}", file=sys.stderr)
        return 3
    except ValidationError as exc:  # a setting that does not parse, e.g. CAMPAIGN_APP_ORIGINS='[1]'
        for error in exc.errors(include_url=False, include_input=False):
            name = ".".join(str(part) for part in error["loc"]).upper()
            print(f"configuration error: {name}: {error['msg']}", file=sys.stderr)
        return 2
