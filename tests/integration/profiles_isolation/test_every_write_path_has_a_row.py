"""The matrix covers every path that writes about a person, derived from the code, not listed by hand:
a procedure, route or command added later without a row fails here, naming itself.

- tRPC: every mutation of the ``profiles`` and ``preferences`` routers, every mutation a person calls
  on themselves (``user``) or with a link (``public``), and every mutation whose input names people
  (a ``profileId``, ``profileIds`` or ``profiles`` field anywhere in its JSON Schema);
- HTTP: every route outside ``/trpc`` that takes a POST, PUT, PATCH or DELETE;
- the command line: every command.

A path that writes nothing a tenant can aim at a person is exempt only with its reason, here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from campaign_engine.api.app import ROUTERS, create_app
from campaign_engine.cli import _parser
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.integration.profiles_isolation import test_imports, test_profile_procedures, test_self_service
from tests.support.delivery import delivery_settings
from tests.support.email import email_settings

_PEOPLE_FIELDS = ('"profileId"', '"profileIds"', '"profiles"')
_PERSON_ROUTERS = frozenset({"profiles", "preferences"})
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})

EXEMPT_ROUTES = {
    "/webhooks/postmark": "provider feedback (bounces, complaints), authenticated as the provider: no tenant "
    "credential reaches it, and a suppressed address stays suppressed for every tenant by design",
    "/webhooks/ses": "provider feedback over SNS, as /webhooks/postmark",
}
EXEMPT_COMMANDS = {
    "serve": "runs the API, whose paths have rows",
    "worker": "delivers what dispatches enqueued; writes delivery states, no person's facts",
    "sweep": "re-arms dispatches and fires schedules; no person's facts",
    "inbox": "the reference receiver, a separate app with its own store",
    "smtp-catcher": "keeps local mail as files",
    "dev": "runs the processes above",
    "migrate": "applies the schema",
    "token": "mints a bearer token; writes nothing",
    "neo4j": "starts and stops the local database",
    "dispatch watch": "reads a dispatch's progress",
}


def person_procedures() -> set[str]:
    found = set()
    for router in ROUTERS:
        for procedure in router.procedures:
            if procedure.kind != "mutation":
                continue
            schema = json.dumps(procedure.input_model.model_json_schema()) if procedure.input_model else ""
            if (
                router.namespace in _PERSON_ROUTERS
                or procedure.access in ("user", "public")
                or any(name in schema for name in _PEOPLE_FIELDS)
            ):
                found.add(procedure.path)
    return found


def _routes(routes: Sequence[BaseRoute], prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    """Every API route with its methods, into included routers (FastAPI may keep them whole)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
        elif isinstance(route, APIRoute):
            yield prefix + route.path, set(route.methods)


def _leaf_commands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return {prefix.strip()}
    found: set[str] = set()
    for name, child in subparsers[0].choices.items():
        found |= _leaf_commands(child, f"{prefix} {name}")
    return found


def test_every_procedure_that_writes_about_a_person_has_a_row() -> None:
    covered = test_profile_procedures.COVERS | test_self_service.COVERS
    missing = person_procedures() - covered
    assert not missing, f"write paths with no row in the isolation matrix: {sorted(missing)}"
    assert {"profiles.upsert", "preferences.updateAnnouncementPreferences", "campaigns.enroll"} <= covered


def test_every_http_route_that_writes_has_a_row_or_a_reason(
    base_settings: Settings, session_graph: Graph
) -> None:
    """The app is built, never started: the graph is read by nothing here, so no other test's data moves."""
    # Every optional edge on: the unsubscribe routes need the unsubscribe secret, which email brings.
    settings = email_settings(delivery_settings(base_settings), "http://127.0.0.1:9", "postmark-token")
    app = create_app(settings, graph=session_graph)
    routes = {
        path for path, methods in _routes(app.routes) if not path.startswith("/trpc") and methods & _WRITES
    }
    assert "/imports/profiles" in routes  # the walk finds included routers' routes
    covered = {path.removeprefix("POST ") for path in test_imports.COVERS_HTTP | test_self_service.COVERS}
    missing = routes - covered - set(EXEMPT_ROUTES)
    assert not missing, f"HTTP write routes with no row in the isolation matrix: {sorted(missing)}"
    assert not set(EXEMPT_ROUTES) - routes, "an exemption names a route that is gone"


def test_every_command_has_a_row_or_a_reason() -> None:
    commands = _leaf_commands(_parser())
    missing = commands - test_imports.COVERS_CLI - set(EXEMPT_COMMANDS)
    assert not missing, f"commands with no row in the isolation matrix: {sorted(missing)}"
    assert not set(EXEMPT_COMMANDS) - commands, "an exemption names a command that is gone"
