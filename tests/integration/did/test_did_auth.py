"""DID-auth for people over the real app and a real Neo4j: challenges, single use, the refusals, the
did:web alias on a loopback host, the tenant boundary, the audit actor, the bounds, and the logs."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from campaign_engine.config import Settings
from campaign_engine.did import challenges, did_key_of, multibase_of, sign_jwt
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import at_once
from tests.support.delivery import StepClock
from tests.support.servers import serve_in_thread

CHALLENGES = "/trpc/utilities.getChallenges"
MINE = "/trpc/campaigns.getMyCampaigns"


class Person:
    """A DID and its key; ``token`` signs what LearnCard's wallet signs (getDidAuthVp, proofFormat jwt)."""

    def __init__(self, did: str | None = None) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.did = did or did_key_of(self.key.public_key())
        self.kid = f"{self.did}#{self.did.removeprefix('did:key:')}" if did is None else f"{self.did}#key-1"

    def token(self, nonce: str | None = None, *, holder: str | None = None, **claims: Any) -> str:
        vp = {"@context": ["https://www.w3.org/ns/credentials/v2"], "type": ["VerifiablePresentation"]}
        body: dict[str, Any] = {"iss": self.did, "vp": {**vp, "holder": holder or self.did}, **claims}
        if nonce is not None:
            body["nonce"] = nonce
        return sign_jwt(body, self.key, self.kid)

    def document(self) -> dict[str, Any]:
        method = {"id": self.kid, "type": "Multikey", "controller": self.did}
        method["publicKeyMultibase"] = multibase_of(self.key.public_key())
        return {"id": self.did, "verificationMethod": [method], "authentication": [self.kid]}


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _profile(
    graph: Graph, profile_id: str, *, did: str | None = None, tenants: tuple[str, ...] = ("default",)
) -> None:
    graph.run(
        "CREATE (:Profile {profileId: $id, did: $did, tenants: $tenants, displayName: $id})",
        id=profile_id, did=did, tenants=list(tenants),
    )  # fmt: skip


def _challenges(api: TrpcClient, person: Person, amount: int | None = None) -> list[str]:
    params = {} if amount is None else {"input": json.dumps({"amount": amount})}
    issued: list[str] = ok(api.http.get(CHALLENGES, params=params, headers=_bearer(person.token())))
    return issued


def _outstanding(graph: Graph, did: str, now: datetime) -> int:
    rows = graph.run(
        "MATCH (c:DidChallenge {did: $did}) WHERE c.usedAt IS NULL AND c.expiresAt > $now "
        "RETURN count(c) AS n",
        did=did, now=format_ts(now),
    )  # fmt: skip
    return int(rows[0]["n"])


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def api(base_settings: Settings, graph: Graph, clock: StepClock) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=clock) as client:
        yield client


def test_a_did_key_person_signs_in_once_per_challenge(
    api: TrpcClient, graph: Graph, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="campaign_engine")  # every line of ours, at every level
    caplog.set_level(logging.DEBUG, logger="neo4j")  # and the driver's, which prints query parameters
    alice = Person()
    _profile(graph, "alice", did=alice.did)
    assert len(_challenges(api, alice)) == 95  # LearnCard's default amount
    first, second, *_ = _challenges(api, alice, 3)

    # The nonce-less token fetches challenges and does nothing else.
    assert error_code(api.http.get(MINE, headers=_bearer(alice.token()))) == "UNAUTHORIZED"
    signed = alice.token(first)
    assert ok(api.http.get(MINE, headers=_bearer(signed))) is not None
    assert ok(api.http.get("/trpc/access.me", headers=_bearer(alice.token(second))))["profileId"] == "alice"
    # Replay: the same token, or a new token with a used nonce.
    assert error_code(api.http.get(MINE, headers=_bearer(signed))) == "UNAUTHORIZED"
    assert error_code(api.http.get(MINE, headers=_bearer(alice.token(first)))) == "UNAUTHORIZED"
    assert error_code(api.http.get(MINE, headers=_bearer(alice.token("never-issued")))) == "UNAUTHORIZED"

    logged = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    for secret in (signed, first, second, alice.token()):
        assert secret not in logged


def test_every_refusal_is_unauthorized_and_leaves_the_challenge_unused(
    api: TrpcClient, graph: Graph, clock: StepClock
) -> None:
    alice, mallory = Person(), Person()
    _profile(graph, "alice", did=alice.did)
    _profile(graph, "mallory", did=mallory.did)
    nonce, spare = _challenges(api, alice, 2)
    forger = Person()
    forged = sign_jwt({"iss": alice.did, "vp": {"holder": alice.did}, "nonce": nonce}, forger.key, alice.kid)
    refused = {
        "wrong holder": alice.token(nonce, holder=mallory.did),
        "bad signature": forged,
        "another DID's challenge": mallory.token(nonce),
        "expired token": alice.token(nonce, exp=int(clock.now.timestamp()) - 3600),
        "tenant it does not belong to": alice.token(nonce, tenantId="beta"),
    }
    before = graph.run("MATCH (c:DidChallenge) RETURN collect(properties(c)) AS c")[0]["c"]
    for name, token in refused.items():
        response = api.http.get(MINE, headers=_bearer(token))
        assert error_code(response) == "UNAUTHORIZED", name
    # None of them wrote anything: the nonce is still unused.
    assert graph.run("MATCH (c:DidChallenge) RETURN collect(properties(c)) AS c")[0]["c"] == before
    assert ok(api.http.get(MINE, headers=_bearer(alice.token(nonce)))) is not None

    # An unknown DID is refused before anything is resolved, and writes nothing either.
    stranger = Person()
    assert error_code(api.http.get(CHALLENGES, headers=_bearer(stranger.token()))) == "UNAUTHORIZED"
    assert graph.run("MATCH (c:DidChallenge {did: $did}) RETURN count(c) AS n", did=stranger.did)[0]["n"] == 0

    # An expired challenge: past its time to live, the unused spare no longer signs anyone in.
    clock.now += challenges.TTL + timedelta(seconds=1)
    assert error_code(api.http.get(MINE, headers=_bearer(alice.token(spare)))) == "UNAUTHORIZED"


def test_two_concurrent_uses_of_one_challenge_exactly_one_wins(api: TrpcClient, graph: Graph) -> None:
    alice = Person()
    _profile(graph, "alice", did=alice.did)
    now = api.http.app.state.services.clock()  # type: ignore[attr-defined]
    for nonce in _challenges(api, alice, 12):
        wins = at_once(lambda n=nonce: challenges.consume(graph, did=alice.did, nonce=n, now=now), [()] * 4)
        assert sorted(wins) == [False, False, False, True], wins


def test_challenges_are_bounded_per_call_and_per_did_and_reaped(
    api: TrpcClient, graph: Graph, clock: StepClock
) -> None:
    alice = Person()
    _profile(graph, "alice", did=alice.did)
    for amount in (0, 101):
        response = api.http.get(
            CHALLENGES, params={"input": json.dumps({"amount": amount})}, headers=_bearer(alice.token())
        )
        assert error_code(response) == "BAD_REQUEST", amount
    for _ in range(6):
        clock.now += timedelta(seconds=1)
        _challenges(api, alice, 100)
    assert _outstanding(graph, alice.did, clock.now) == challenges.MAX_OUTSTANDING
    clock.now += timedelta(seconds=1)
    newest = _challenges(api, alice, 1)[0]
    assert ok(api.http.get(MINE, headers=_bearer(alice.token(newest)))) is not None  # the newest kept

    clock.now += challenges.TTL + timedelta(seconds=1)
    _challenges(api, alice, 1)  # issuing reaps what expired
    assert graph.run("MATCH (c:DidChallenge) RETURN count(c) AS n")[0]["n"] == 1
    # A person signed in another way has no DID to bind challenges to.
    assert error_code(api.query("utilities.getChallenges", {"amount": 1}, as_="alice")) == "BAD_REQUEST"


def test_a_did_acts_only_in_its_profiles_tenants_and_its_admin_acts_are_audited(
    api: TrpcClient, graph: Graph
) -> None:
    carol = Person()
    _profile(graph, "carol", did=carol.did, tenants=("alpha",))
    graph.run(
        "CREATE (:AccessGrant {tenantId: 'alpha', subject: 'carol', role: 'admin', grantedAt: '2026-01-01'})"
    )
    nonces = iter(_challenges(api, carol, 5))
    me = ok(api.http.get("/trpc/access.me", headers=_bearer(carol.token(next(nonces)))))
    assert (me["tenantId"], me["role"]) == ("alpha", "admin")  # not a member of default: its own tenant
    created = api.http.post(
        "/trpc/campaigns.create",
        json={
            "id": "c-did",
            "name": "By DID",
            "channels": ["notify"],
            "notification": {"title": "t", "body": "b"},
        },
        headers=_bearer(carol.token(next(nonces))),
    )
    assert ok(created)["id"] == "c-did"
    audit = graph.run(
        "MATCH (a:AuditEntry {procedure: 'campaigns.create'}) RETURN a.actor AS actor, a.tenantId AS t"
    )
    assert audit == [{"actor": "carol", "t": "alpha"}]
    refused = api.http.get("/trpc/access.me", headers=_bearer(carol.token(next(nonces), tenantId="default")))
    assert error_code(refused) == "UNAUTHORIZED"


@pytest.fixture
def web_host() -> Iterator[tuple[dict[str, dict[str, Any]], str]]:
    documents: dict[str, dict[str, Any]] = {}

    async def serve(request: Request) -> Response:
        found = documents.get(request.url.path)
        return JSONResponse(found) if found else Response(status_code=404)

    with serve_in_thread(Starlette(routes=[Route("/{path:path}", serve)])) as url:
        yield documents, url.removeprefix("http://")


def test_a_did_web_alias_signs_in_with_its_document_on_loopback(
    base_settings: Settings, graph: Graph, web_host: tuple[dict[str, dict[str, Any]], str]
) -> None:
    documents, host = web_host
    settings = base_settings.model_copy(
        update={
            "domain_name": host,
            "campaign_local_development": True,
            "campaign_allow_private_webhooks": True,
        }
    )
    domain = host.replace(":", "%3A")
    _profile(graph, "dana")
    _profile(graph, "erin")
    dana, erin = Person(f"did:web:{domain}:users:dana"), Person(f"did:web:{domain}:erin")  # new and old form
    documents["/users/dana/did.json"], documents["/erin/did.json"] = dana.document(), erin.document()
    with api_client(settings, graph) as api:
        for person, profile_id in ((dana, "dana"), (erin, "erin")):
            (nonce,) = _challenges(api, person, 1)
            me = ok(api.http.get("/trpc/access.me", headers=_bearer(person.token(nonce))))
            assert me["profileId"] == profile_id
        stranger = Person(f"did:web:{domain}:users:nobody")
        documents["/users/nobody/did.json"] = stranger.document()
        assert error_code(api.http.get(CHALLENGES, headers=_bearer(stranger.token()))) == "UNAUTHORIZED"
