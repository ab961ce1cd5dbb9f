"""Schema-driven fuzzing of the API: schemathesis against ``/openapi.json``, with every check it has.

The real app runs under uvicorn on a loopback port against the test Neo4j, and the calls carry an admin
bearer token, so the authorised paths run too (the ``ignored_auth`` check also replays them without it).
The document and the adapter come from one registry; this test holds them to each other: no 5xx, every
answer in the documented shape, schema-valid input accepted, schema-invalid input refused with a 4xx
envelope, undeclared methods answered 405 with ``Allow``. Per operation it runs schemathesis' coverage
phase (boundaries, missing input, undeclared methods, wrong content types) and its fuzzing phase; a fixed
seed and a bounded number of examples make it repeatable and about half a minute long (2 cores).

The document is built at import from the same registry ``create_app`` serves (pytest lists one test
per operation at collection, before any server runs; ``tests/support/fuzz.py`` builds each operation's
cases only on the worker that runs it), and ``test_the_fuzzed_document_is_the_served_one`` proves it is
the served one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from pydantic import SecretStr
from schemathesis.checks import CHECKS, load_all_checks

from campaign_engine.api.app import ROUTERS, create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.api.openapi import POST_QUERY_SUFFIX, build_openapi
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.fuzz import (
    keep_alive_session,
    memoize_checks_config,
    merged_afresh,
    operation_labels,
    run_operation,
)
from tests.support.servers import serve_in_thread

# pytest-xdist: the module's server keeps what the calls made: its cases run on one worker, in order.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_api_fuzz")]

SEED = 20261130
EXAMPLES_PER_OPERATION = 10

DOCUMENT = build_openapi(
    [procedure for router in ROUTERS for procedure in router.procedures], title="campaign-engine", version="0"
)
# Rules the document cannot state, so schema-valid input may still be refused with BAD_REQUEST. Only
# that status of the positive-data check is waived, only for these operations; every other check still
# runs on them. Everything JSON Schema can say (types, patterns, ranges, the channel-content rule) is in
# the document, and an operation leaves this table when its last such rule goes.
_POSITIVE_DATA_ALSO_REFUSED = {
    # "from must be earlier than to" compares two values; a cursor's time must be a real day (its shape
    # is in the schema).
    "audit.list": "the from/to rule compares two fields; a cursor names a real instant",
    # "endsAt must be after startsAt" compares two values, as does quietHours' "start != end"; a
    # timeZone must exist in the tz database (the schema gives its shape).
    "campaigns.create": "the window and quiet-hours rules compare two fields; timeZone in the tz database",
    # The patched whole is validated against the stored campaign (channel content, the window, an
    # archived campaign is read-only): the rule spans the request and the graph.
    "campaigns.update": "rules that span the patch and the stored campaign",
    # A live segment names campaigns that must be the tenant's, is exactly one kind of rule
    # per node and needs a positive condition to seek on: the graph and the tree's shape, not its fields.
    "campaigns.previewSegment": "a rule's referenced campaigns exist in the tenant; one kind per node",
    # A token that fails its signature is BAD_REQUEST "this unsubscribe link is not valid": a string is
    # all a schema can say about an HMAC-signed credential.
    "campaigns.unsubscribeFromAnnouncements": "an unverifiable token is BAD_REQUEST",
    # sendAt must lie in the future and a timeZone must exist in the tz database (the schema gives
    # the shapes: a date-time, or a wall-clock time and a zone name).
    "campaigns.scheduleDispatch": "sendAt in the future; timeZone must exist in the tz database",
    # deliverBy lies between 1970 and 9999 and after the send's start, and its zone must exist (the
    # schema gives the shapes: a date-time, or a wall-clock time with a zone or per recipient).
    "campaigns.previewDispatch": "deliverBy between 1970 and 9999, after the start; its timeZone exists",
    "campaigns.dispatch": "deliverBy between 1970 and 9999, after the start; its timeZone exists",
    "campaigns.approveDispatch": "deliverBy between 1970 and 9999, after the start; its timeZone exists",
    # profileId must not repeat within one call (uniqueness of one property across items), and
    # timeZone must name a zone the tz database has (the schema gives its shape).
    "profiles.upsert": "unique profileIds across rows; timeZone must exist in the tz database; "
    "each guardian must be another adult profile of the tenant, named once",
    # An app origin, a logo URL and a From address are parsed as a URL and an address (exactly
    # scheme://host[:port], http only for loopback; one mailbox): the schema gives their length only.
    "tenants.create": "appOrigin, logoUrl and emailFrom are parsed, not matched",
    # A supplied whsec_ secret must decode as base64 to enough key bytes (the schema gives its prefix).
    "profiles.rotateWebhookSecret": "a supplied secret's base64 is decoded",
    # expiresAt must lie in the future (the schema gives its shape: a date-time).
    "apiKeys.create": "expiresAt in the future",
    # The same, and the name of a tenant cannot be cleared (null is the patch's "clear").
    "tenants.update": "appOrigin, logoUrl and emailFrom are parsed; name cannot be cleared",
    # A logo URL is parsed as a URL (https, a host): the schema gives its length only.
    "tenants.updateLayout": "logoUrl is parsed, not matched",
    "tenants.previewLayout": "logoUrl is parsed, not matched",
    # An endpoint URL passes the egress rules (https outside local development, allowed ports, no
    # private or metadata address): a URL's shape is all the schema can say.
    "webhookEndpoints.create": "the url passes the egress rules",
    "webhookEndpoints.update": "the url passes the egress rules",
    # since is an instant between 1970 and 9999 (the one timestamp rule; the schema says date-time).
    "webhookEndpoints.replay": "since lies between 1970 and 9999",
    # Challenges are bound to a DID: the fuzzer signs in with a JWT, which has none (BAD_REQUEST).
    "utilities.getChallenges": "only a DID-auth caller gets challenges",
}
# A query's POST twin (tRPC's method override, "<procedure>:post") reads its input from the body, where
# JSON Schema counts 157.0 as an integer and the API's strict JSON does not; it has its query's rules
# besides. Its acceptance of valid input is held to the GET's by the wire tests
# (tests/integration/api/trpc_protocol/test_methods_and_bodies.py); every other check runs on it.
_POSITIVE_DATA_ALSO_REFUSED |= {
    f"{procedure.path}{POST_QUERY_SUFFIX}": "a query by POST: strict JSON integers in the body"
    for router in ROUTERS
    for procedure in router.procedures
    if procedure.kind == "query"
}
_DEFAULT_POSITIVE_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        # Positive and negative inputs; no example database, so every run draws the same cases.
        "generation": {"max-examples": EXAMPLES_PER_OPERATION, "mode": "all", "database": "none"},
        # One entry naming them all: schemathesis matches every entry against the operation twice per
        # case, so an entry per operation cost a third of the run (64 s of 228 s for campaigns.update).
        "operations": [
            {
                "include-operation-id": sorted(_POSITIVE_DATA_ALSO_REFUSED),
                "checks": {
                    "positive_data_acceptance": {"expected-statuses": [*_DEFAULT_POSITIVE_STATUSES, "400"]}
                },
            }
        ],
    }
)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)


@dataclass(frozen=True)
class Served:
    url: str
    headers: dict[str, str]
    session: requests.Session  # keep_alive_session()


@pytest.fixture(scope="module")
def served(base_settings: Settings, session_graph: Graph) -> Iterator[Served]:
    """One server for every operation's test; the graph starts empty and keeps what the calls made."""
    session_graph.run("MATCH (n) DETACH DELETE n")
    settings = base_settings.model_copy(
        update={
            # The real per-profile limit, high enough for hundreds of calls from one admin in a minute.
            "campaign_user_rate_limit_per_minute": 1_000_000,
            # Configured, so the anonymous unsubscribe procedure runs rather than answering 503.
            "campaign_unsubscribe_secret": SecretStr("fuzz-unsubscribe-secret-0123456789abcdef"),
        }
    )
    token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    with serve_in_thread(create_app(settings, graph=session_graph)) as url, keep_alive_session() as session:
        yield Served(url=url, headers={"Authorization": f"Bearer {token}"}, session=session)
    session_graph.run("MATCH (n) DETACH DELETE n")


# The content models a campaign carries at several places of one request: at the top, in each
# translation, in the guardian copy and its translations, in each variant.
_CONTENT = frozenset({"message", "notification", "email"})
_SENT: set[tuple[str, str, str, str]] = set()


def _content_at(body: Any, location: str) -> tuple[str, Any] | None:
    """The innermost content object (its name and value) on the path a coverage case's ``location`` (a
    pointer into the operation's schema) takes through ``body``; None when the path crosses none."""
    tokens, node, found, i = location.split("/")[1:], body, None, 0
    while i < len(tokens):
        step = tokens[i]
        if step == "properties" and i + 1 < len(tokens) and isinstance(node, dict) and tokens[i + 1] in node:
            node = node[tokens[i + 1]]
            found = (tokens[i + 1], node) if tokens[i + 1] in _CONTENT else found
            i += 2
        elif step == "patternProperties" and isinstance(node, dict) and len(node) == 1:
            node, i = next(iter(node.values())), i + 2
        elif step == "items" and isinstance(node, list) and node:
            node, i = node[0], i + 1
        elif step in ("anyOf", "oneOf", "allOf"):
            i += 2
        else:
            break
    return found


def _sent_before(case: schemathesis.Case) -> bool:
    """A negative coverage case whose invalid content object (with the same boundary) was already sent
    at another place of the same operation's request: the same model refuses it at parse, before any
    code that tells the places apart. Of campaigns.update's 26,237 coverage cases 16,132 are such
    repeats (its content repeats in translations, the guardian copy and its translations): 80 s."""
    meta = case.meta
    if meta is None or meta.phase.name != "coverage" or meta.generation.mode != "negative":
        return False
    location = getattr(meta.phase.data, "location", None)
    found = _content_at(case.body, location) if isinstance(location, str) else None
    if found is None:
        return False
    name, content = found
    description = str(getattr(meta.phase.data, "description", ""))
    boundary = description.rsplit(f"{name} ->", 1)[-1] if f"{name} ->" in description else description
    key = (case.operation.label, name, json.dumps(content, sort_keys=True, default=str), boundary)
    if key in _SENT:
        return True
    _SENT.add(key)
    return False


@pytest.mark.parametrize("operation", operation_labels(schema))
def test_every_operation_keeps_the_documented_contract(operation: str, served: Served) -> None:
    run_operation(schema, operation, _keeps_the_contract, served=served)


# Headers that frame the HTTP message itself: the ASGI server (uvicorn's parser) reads them before the app
# and answers a malformed one with its own plain-text 400 ("Invalid HTTP request received."), outside the
# API's contract. A generated case that happens to name one (a fuzzed ``transfer-encoding`` did) is sent
# without it; everything else about the case is kept.
_FRAMING = frozenset(
    {"transfer-encoding", "content-length", "connection", "host", "upgrade", "te", "trailer"}
)


def _keeps_the_contract(case: schemathesis.Case, served: Served) -> None:
    if _sent_before(case):
        return
    if case.headers and any(name.lower() in _FRAMING for name in case.headers):
        case.headers = {k: v for k, v in case.headers.items() if k.lower() not in _FRAMING}
    # No `checks=`: schemathesis runs every check its configuration enables, and that is all of them.
    case.call_and_validate(base_url=served.url, headers=served.headers, session=served.session)


def test_the_fuzzed_document_is_the_served_one(served: Served) -> None:
    document: dict[str, Any] = httpx.get(f"{served.url}/openapi.json").json()
    assert {key: value for key, value in document.items() if key != "info"} == {
        key: value for key, value in DOCUMENT.items() if key != "info"
    }


def test_the_fuzzer_runs_every_built_in_check() -> None:
    """Guards the claim above: a schemathesis upgrade that turns a check off by default fails here."""
    load_all_checks()
    config = CONFIG.projects.default.checks_config_for()
    names = {check.__name__ for check in CHECKS.get_all()}
    assert {"not_a_server_error", "negative_data_rejection", "unsupported_method"} <= names
    assert all(config.get_by_name(name=name).enabled for name in names)


def test_each_case_is_validated_with_its_operations_own_check_settings() -> None:
    """The memoized merge (tests/support/fuzz.py) answers what a fresh merge does, per operation and
    phase: the waived status where the table waives it, the defaults elsewhere."""
    memoize_checks_config()
    config = schema.config
    for label in operation_labels(schema):
        operation = schema.find_operation_by_label(label)
        for phase in ("examples", "coverage", "fuzzing", "stateful"):
            first = config.checks_config_for(operation=operation, phase=phase)
            assert config.checks_config_for(operation=operation, phase=phase) is first
            assert repr(first) == repr(merged_afresh(config, operation=operation, phase=phase)), label
    waived = config.checks_config_for(operation=schema.find_operation_by_label("POST /trpc/campaigns.update"))
    assert "400" in waived.positive_data_acceptance.expected_statuses
    plain = config.checks_config_for(operation=schema.find_operation_by_label("POST /trpc/access.grant"))
    assert "400" not in plain.positive_data_acceptance.expected_statuses


def test_a_boundary_is_found_in_its_innermost_content_object() -> None:
    body = {"campaignId": "c", "guardianCopy": {"translations": {"fr": {"message": {"priority": "x"}}}}}
    pattern = "/properties/guardianCopy/anyOf/0/properties/translations/anyOf/0/patternProperties/^[a-z]+$"
    location = f"{pattern}/properties/message/anyOf/0/properties/priority/type"
    assert _content_at(body, location) == ("message", {"priority": "x"})
    assert _content_at({"message": {"title": 1}}, "/properties/message/properties/title/type") == (
        "message", {"title": 1},
    )  # fmt: skip
    assert _content_at({"name": 1}, "/properties/name/type") is None
    assert _content_at({"variants": [{"email": {}}]}, "/properties/variants/items/properties/email/type") == (
        "email", {},
    )  # fmt: skip
