"""The whole API fuzzed with tenant B's admin key aimed at tenant A's ids: schemathesis draws
every operation's inputs from ``/openapi.json``, and each identifier in them (campaignId, dispatchId,
profileId, tenantId, a key's id) is replaced by one of A's before the call.

Whatever the answer, it must not carry anything of A's (its campaign's name, its people's addresses, its
key's id, its grant), and A's data must be exactly as it was. B's key may do all it likes in B: that is
the point of its being an admin key.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from pydantic import SecretStr

from campaign_engine.api.app import ROUTERS, create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.api.openapi import build_openapi
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import ok
from tests.support.fuzz import keep_alive_session, operation_labels, run_operation
from tests.support.servers import serve_in_thread

# pytest-xdist: the module's server keeps what the calls made: its cases run on one worker, in order.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_cross_tenant_fuzz")]

SEED = 20261203
A, B = "alpha", "beta"
SECRET = "Alpha-only launch name"
A_PEOPLE = ["a-p1", "a-p2"]
A_REFS = ["launch", "later"]

DOCUMENT = build_openapi(
    [procedure for router in ROUTERS for procedure in router.procedures], title="campaign-engine", version="0"
)
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "generation": {"max-examples": 8, "mode": "positive", "database": "none"},
        # campaigns.update's coverage phase is 4,036 positive cases (every subset of its optional
        # content, in every translation and guardian copy): 147 s of the suite, each aimed at the same
        # two campaigns of A's. Its ids are what this test swaps, so it runs the fuzzing phase's cases
        # (30, each a different patch) and test_api_fuzz.py keeps the coverage phase's boundaries.
        "operations": [
            {
                "include-operation-id": "campaigns.update",
                "phases": {"coverage": {"enabled": False}},
                "generation": {"max-examples": 30},
            }
        ],
    }
)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)


@dataclass
class Target:
    url: str
    headers: dict[str, str]
    graph: Graph
    session: requests.Session  # keep_alive_session()
    ids: dict[str, list[str]]  # field name -> A's values
    markers: list[str]  # strings only A's data holds


def _alpha_fingerprint(graph: Graph) -> str:
    rows = graph.run(
        "MATCH (n) WHERE n.tenantId = 'alpha' OR 'alpha' IN coalesce(n.tenants, []) "
        "OPTIONAL MATCH (n)-[r]->(m) WHERE NOT m:Campaign OR m.tenantId = 'alpha' "
        "RETURN labels(n) AS l, properties(n) AS p, type(r) AS t, properties(r) AS rp, elementId(m) AS m"
    )
    for row in rows:  # a lock's counter and a key's last use are bookkeeping, not A's data
        row["p"] = {k: v for k, v in row["p"].items() if k not in ("campaignStateLock", "lastUsedAt")}
    canonical = "\n".join(sorted(json.dumps(r, sort_keys=True, default=str) for r in rows))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _call(url: str, path: str, data: Any, headers: dict[str, str]) -> Any:
    # A first call compiles its statements on a cold database beside three busy workers: httpx's 5 s
    # default read timeout failed the module's set-up on a loaded run.
    return ok(httpx.post(f"{url}/trpc/{path}", json=data, headers=headers, timeout=60))


@pytest.fixture(scope="module")
def target(base_settings: Settings, session_graph: Graph) -> Iterator[Target]:
    session_graph.run("MATCH (n) DETACH DELETE n")
    settings = base_settings.model_copy(
        update={
            "campaign_user_rate_limit_per_minute": 1_000_000,
            "campaign_unsubscribe_secret": SecretStr("fuzz-unsubscribe-secret-0123456789abcdef"),
        }
    )
    with serve_in_thread(create_app(settings, graph=session_graph)) as url, keep_alive_session() as session:
        tokens = [mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE, tenant_id=t) for t in (A, B)]
        platform_a, platform_b = ({"authorization": f"Bearer {token}"} for token in tokens)
        people = [
            {"profileId": p, "emails": [{"address": f"{p}@alpha-only.example"}], "tenants": [A]}
            for p in A_PEOPLE
        ]
        _call(url, "profiles.upsert", {"profiles": people}, platform_a)
        for ref in A_REFS:
            campaign = {"id": ref, "name": SECRET, "channels": ["inApp"], "message": {"title": "Hi"}}
            _call(url, "campaigns.create", campaign, platform_a)
        source = {"type": "profileIds", "profileIds": A_PEOPLE}
        _call(url, "campaigns.addAudience", {"campaignId": "launch", "source": source}, platform_a)
        _call(url, "access.grant", {"tenantId": A, "subject": "a-editor", "role": "author"}, platform_a)
        a_key = _call(
            url, "apiKeys.create", {"tenantId": A, "name": "alpha sync", "role": "author"}, platform_a
        )
        b_key = _call(
            url, "apiKeys.create", {"tenantId": B, "name": "beta admin", "role": "admin"}, platform_b
        )
        yield Target(
            url=url,
            headers={"Authorization": f"Bearer {b_key['key']}"},
            graph=session_graph,
            session=session,
            ids={
                "campaignId": A_REFS,
                "memberOf": A_REFS,  # a live segment's references, at any depth
                "profileId": A_PEOPLE,
                "connectedTo": A_PEOPLE,
                "tenantId": [A],
                "subject": ["a-editor"],
                "id": [a_key["id"]],
                "address": [f"{p}@alpha-only.example" for p in A_PEOPLE],
            },
            # Not A's key id or people's ids: B's input names those, and an answer may echo its input.
            markers=[SECRET, "alpha-only.example", "a-editor", "alpha sync"],
        )
    session_graph.run("MATCH (n) DETACH DELETE n")


_NESTED_IDS = frozenset({"profileId", "campaignId", "memberOf", "connectedTo"})


def _aim(value: Any, ids: dict[str, list[str]], rng: random.Random, *, top: bool = True) -> Any:
    """``value`` with its identifier fields replaced by A's: every top-level one, and a profileId or a
    segment's campaign and profile references at any depth (an audience source's, an upsert row's, a
    rule's). Nested addresses stay B's own (an upsert's emails)."""
    if isinstance(value, dict):
        return {
            key: rng.choice(ids[key])
            if key in ids and isinstance(item, str) and (top or key in _NESTED_IDS)
            else _aim(item, ids, rng, top=False)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_aim(item, ids, rng, top=False) for item in value]
    return value


@pytest.mark.parametrize("operation", operation_labels(schema))
def test_tenant_b_never_reads_or_changes_tenant_a(operation: str, target: Target) -> None:
    run_operation(schema, operation, _keeps_a_apart, target=target)


def _keeps_a_apart(case: schemathesis.Case, target: Target) -> None:
    rng = random.Random(f"{SEED}:{case.operation.label}")
    if isinstance(case.body, dict | list):
        case.body = _aim(case.body, target.ids, rng)
    if case.query and "input" in case.query:
        raw = case.query["input"]
        aimed = _aim(json.loads(raw) if isinstance(raw, str) else raw, target.ids, rng)
        case.query["input"] = json.dumps(aimed) if isinstance(raw, str) else aimed
    before = _alpha_fingerprint(target.graph)
    response = case.call(base_url=target.url, headers=target.headers, session=target.session)
    assert response.status_code < 500, response.text
    leaked = [marker for marker in target.markers if marker in response.text]
    assert not leaked, f"{case.operation.label} answered B with A's {leaked}: {response.text[:300]}"
    assert _alpha_fingerprint(target.graph) == before, f"{case.operation.label} changed A's data"
