"""Bearer JWT auth over the real app: HS256 with the shared secret, RS256 against a real JWKS server.

Admin procedures need the ``campaigns:admin`` scope *and* the allowlist; anything wrong with the token
itself is UNAUTHORIZED, a good token without admin rights is FORBIDDEN. The JWKS server counts its
requests: forged ``kid``s, even in concurrent bursts, fetch the key set at most once per interval.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from fastapi.testclient import TestClient
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.routing import Route

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, JwksKeys, TokenVerifier
from campaign_engine.api.context import Context, Services
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.config import Settings
from campaign_engine.domain.errors import CampaignError, ServiceUnavailable, Unauthorized
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, free_port
from tests.support.api import TrpcClient, api_client
from tests.support.concurrency import at_once
from tests.support.servers import serve_in_thread

ADMIN_PROCEDURE = "/trpc/campaigns.list"
OTHER_SECRET = "another-secret-0123456789abcdef-0123456789"


def _claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": ADMIN_ID, "scope": ADMIN_SCOPE, "iat": now, "exp": now + 600}
    for key, value in overrides.items():
        if value is None:
            claims.pop(key, None)
        else:
            claims[key] = value
    return claims


def _hs256(secret: str = TEST_JWT_SECRET, **overrides: Any) -> str:
    return jwt.encode(_claims(**overrides), secret, algorithm="HS256")


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _code(response: Any) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return response.status_code, str(body["error"]["data"]["code"])


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


# --- HS256 ------------------------------------------------------------------------------------


def test_allowlisted_admin_with_scope_is_admitted(api: TrpcClient) -> None:
    token = _hs256(scope=f"openid {ADMIN_SCOPE} profile")
    response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(token))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["data"]["records"] == []


@pytest.mark.parametrize(
    ("case", "headers"),
    [
        ("no token", {}),
        ("not bearer", {"authorization": "Basic YWRtaW46YWRtaW4="}),
        ("empty bearer", {"authorization": "Bearer "}),
        ("not a jwt", {"authorization": "Bearer not.a.jwt"}),
        ("bad signature", _bearer(_hs256(OTHER_SECRET))),
        ("expired", _bearer(_hs256(exp=int(time.time()) - 120, iat=int(time.time()) - 600))),
        ("missing exp", _bearer(_hs256(exp=None))),
        ("missing sub", _bearer(_hs256(sub=None))),
        ("empty sub", _bearer(_hs256(sub=""))),
        ("alg none", _bearer(jwt.encode(_claims(), "", algorithm="none"))),
        ("rs256 in hs256 mode", _bearer(jwt.encode(_claims(), _rsa_key(), algorithm="RS256"))),
    ],
)
def test_missing_or_invalid_token_is_unauthorized(
    api: TrpcClient, case: str, headers: dict[str, str]
) -> None:
    response = api.http.get(ADMIN_PROCEDURE, headers=headers)
    assert _code(response) == (401, "UNAUTHORIZED"), case
    assert response.json()["error"]["code"] == -32001
    token = headers.get("authorization", "").partition(" ")[2]
    if len(token) > 8:
        assert token not in response.text  # the token is never echoed


def test_expired_token_says_so(api: TrpcClient) -> None:
    token = _hs256(exp=int(time.time()) - 120, iat=int(time.time()) - 600)
    response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(token))
    assert response.json()["error"]["message"] == "token expired"


@pytest.mark.parametrize(
    ("case", "subject", "scope"),
    [
        ("ordinary user", "user-1", ""),
        ("admin scope, not allowlisted", "user-1", ADMIN_SCOPE),
        ("allowlisted, no scope", ADMIN_ID, ""),
        ("allowlisted, other scopes", ADMIN_ID, "openid campaigns:read"),
        ("allowlisted, look-alike scope", ADMIN_ID, "campaigns:administrator campaigns:admin:x"),
    ],
)
def test_valid_token_without_admin_rights_is_forbidden(
    api: TrpcClient, case: str, subject: str, scope: str
) -> None:
    response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_hs256(sub=subject, scope=scope)))
    assert _code(response) == (403, "FORBIDDEN"), case
    assert response.json()["error"]["code"] == -32003
    # A mutation is refused the same way, and nothing is written.
    created = api.http.post(
        "/trpc/campaigns.create",
        json={"id": "c1", "name": "n", "channels": ["notify"], "notification": {"title": "t", "body": "b"}},
        headers=_bearer(_hs256(sub=subject, scope=scope)),
    )
    assert _code(created) == (403, "FORBIDDEN"), case
    admin = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_hs256()))
    assert admin.json()["result"]["data"]["records"] == []


def test_audience_is_checked_when_configured(base_settings: Settings, graph: Graph) -> None:
    settings = base_settings.model_copy(update={"auth_jwt_audience": "campaign-engine"})
    with api_client(settings, graph) as api:
        assert (
            api.http.get(ADMIN_PROCEDURE, headers=_bearer(_hs256(aud="campaign-engine"))).status_code == 200
        )
        assert _code(api.http.get(ADMIN_PROCEDURE, headers=_bearer(_hs256()))) == (401, "UNAUTHORIZED")
        assert _code(api.http.get(ADMIN_PROCEDURE, headers=_bearer(_hs256(aud="other")))) == (
            401,
            "UNAUTHORIZED",
        )


# --- user and public procedures: a throwaway router, never part of the production registry --------


def _probe_router() -> ProcedureRouter:
    router = ProcedureRouter("probe", {"whoami": "user", "open": "public"})

    @router.query("whoami")
    def whoami(ctx: Context) -> str:
        return ctx.user().profile_id

    @router.query("open")
    def open_(ctx: Context) -> str:
        return "open"

    return router


@pytest.fixture
def probe(base_settings: Settings, graph: Graph) -> Iterator[TestClient]:
    engagement = EngagementService(graph, policy=lambda: Policy.of(base_settings, system_clock()))
    services = Services(
        settings=base_settings,
        graph=graph,
        clock=system_clock,
        verifier=TokenVerifier(base_settings),
        engagement=engagement,
    )
    endpoint = TrpcEndpoint(services, [_probe_router()])
    app = Starlette(routes=[Route("/trpc/{path:path}", endpoint.__call__, methods=["GET", "POST"])])
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    engagement.close()


def test_user_procedures_need_a_valid_token_but_no_admin_rights(probe: TestClient) -> None:
    assert probe.get("/trpc/probe.whoami", headers=_bearer(_hs256(sub="user-7", scope=""))).json() == {
        "result": {"data": "user-7"}
    }
    assert _code(probe.get("/trpc/probe.whoami")) == (401, "UNAUTHORIZED")
    assert _code(probe.get("/trpc/probe.whoami", headers=_bearer(_hs256(OTHER_SECRET)))) == (
        401,
        "UNAUTHORIZED",
    )


def test_a_bad_token_fails_only_procedures_that_need_a_caller(probe: TestClient) -> None:
    headers = _bearer(_hs256(OTHER_SECRET))
    response = probe.get("/trpc/probe.open,probe.whoami?batch=1", headers=headers)
    assert response.status_code == 207
    opened, refused = response.json()
    assert opened == {"result": {"data": "open"}}
    assert refused["error"]["data"]["code"] == "UNAUTHORIZED"


# --- RS256 against a JWKS served over real loopback HTTP ------------------------------------------


class _JwksServer:
    """Serves ``jwks`` (replaceable: key rotation) and counts every request, failed ones included."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        self.jwks = jwks
        self.hits = 0
        self.failing = False  # answer 503, as an identity provider in trouble would
        counter = threading.Lock()
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with counter:
                    server_self.hits += 1
                if self.path != "/.well-known/jwks.json":
                    self.send_error(404)
                    return
                if server_self.failing:
                    self.send_error(503)
                    return
                body = json.dumps(server_self.jwks).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _JwksServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


KID = "test-key-1"


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return _rsa_key()


def _jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    public = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    public.update({"kid": kid, "use": "sig", "alg": "RS256"})
    return public


@pytest.fixture
def jwks_server(signing_key: rsa.RSAPrivateKey) -> Iterator[_JwksServer]:
    with _JwksServer({"keys": [_jwk(signing_key, KID)]}) as server:
        yield server


AUDIENCE, ISSUER = "campaign-engine", "https://id.example"


def _jwks_settings(base: Settings, url: str) -> Settings:
    """JWKS mode as it must be configured: audience and issuer required; the loopback key set is plain
    http, which only local development allows."""
    return base.model_copy(
        update={
            "auth_jwks_url": url,
            "auth_jwt_secret": None,
            "auth_jwt_audience": AUDIENCE,
            "auth_jwt_issuer": ISSUER,
            "campaign_local_development": True,
        }
    )


def _rs256(key: rsa.RSAPrivateKey, kid: str = KID, **overrides: Any) -> str:
    claims = _claims(**{"aud": AUDIENCE, "iss": ISSUER, **overrides})
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def test_rs256_tokens_are_verified_against_the_jwks_url(
    base_settings: Settings, graph: Graph, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    settings = _jwks_settings(base_settings, jwks_server.url)
    public_pem = signing_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with api_client(settings, graph) as api:
        admitted = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_rs256(signing_key)))
        assert admitted.status_code == 200, admitted.text
        assert jwks_server.hits >= 1  # the key really came from the JWKS server

        not_admin = _rs256(signing_key, sub="user-1")
        assert _code(api.http.get(ADMIN_PROCEDURE, headers=_bearer(not_admin))) == (403, "FORBIDDEN")

        rejected = {
            "hs256 with the old shared secret": _hs256(),
            "hs256 keyed with the public key": _hmac_signed(_claims(), public_pem),
            "signed by another key, same kid": _rs256(_rsa_key()),
            "unknown kid": _rs256(_rsa_key(), kid="someone-else"),
            "expired": _rs256(signing_key, exp=int(time.time()) - 120, iat=int(time.time()) - 600),
            "missing exp": _rs256(signing_key, exp=None),
            "missing sub": _rs256(signing_key, sub=None),
        }
        for case, token in rejected.items():
            response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(token))
            assert _code(response) == (401, "UNAUTHORIZED"), case


def test_an_unreachable_key_set_is_service_unavailable_not_unauthorized(
    base_settings: Settings, graph: Graph, signing_key: rsa.RSAPrivateKey
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/.well-known/jwks.json"  # nothing listens there
    settings = _jwks_settings(base_settings, closed)
    with api_client(settings, graph) as api:
        response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_rs256(signing_key)))
    assert _code(response) == (503, "SERVICE_UNAVAILABLE")


def _hmac_signed(claims: dict[str, Any], secret: bytes) -> str:
    """The classic algorithm-confusion token, built by hand: PyJWT refuses to encode it."""

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KID}).encode())
    payload = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def test_a_remembered_token_still_expires(base_settings: Settings) -> None:
    verifier = TokenVerifier(base_settings.model_copy(update={"auth_jwt_leeway_seconds": 0}))
    token = _hs256(exp=int(time.time()) + 2)
    first = verifier.verify(f"Bearer {token}")
    assert first is not None and verifier.verify(f"Bearer {token}") == first  # served from memory
    time.sleep(3)
    with pytest.raises(Unauthorized, match="token expired"):
        verifier.verify(f"Bearer {token}")


# --- issuer and clock leeway --------------------------------------------------------------------


def test_issuer_is_checked_when_configured(base_settings: Settings, graph: Graph) -> None:
    settings = base_settings.model_copy(update={"auth_jwt_issuer": "https://id.example"})
    with api_client(settings, graph) as api:
        good = _hs256(iss="https://id.example")
        assert api.http.get(ADMIN_PROCEDURE, headers=_bearer(good)).status_code == 200
        for case, token in {"no iss": _hs256(), "other iss": _hs256(iss="https://evil.example")}.items():
            assert _code(api.http.get(ADMIN_PROCEDURE, headers=_bearer(token))) == (401, "UNAUTHORIZED"), case


def test_clock_skew_within_the_leeway_is_tolerated(base_settings: Settings) -> None:
    now = int(time.time())
    skewed = {
        "expired 10 s ago": _hs256(exp=now - 10, iat=now - 600),
        "not before 10 s from now": _hs256(nbf=now + 10),
        "issued 10 s from now": _hs256(iat=now + 10),
    }
    lenient = TokenVerifier(base_settings)  # AUTH_JWT_LEEWAY_SECONDS defaults to 30
    strict = TokenVerifier(base_settings.model_copy(update={"auth_jwt_leeway_seconds": 0}))
    for case, token in skewed.items():
        assert lenient.verify(f"Bearer {token}") is not None, case
        with pytest.raises(Unauthorized):
            strict.verify(f"Bearer {token}")
    with pytest.raises(Unauthorized, match="token expired"):  # beyond the leeway
        lenient.verify(f"Bearer {_hs256(exp=now - 60, iat=now - 600)}")


# --- JWKS: forged kids never amplify into key-set fetches ---------------------------------------


def test_a_burst_of_forged_kids_fetches_the_key_set_once(
    base_settings: Settings, graph: Graph, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    settings = _jwks_settings(base_settings, jwks_server.url)
    forger = _rsa_key()
    forged = [_rs256(forger, kid=f"forged-{i}") for i in range(40)]
    with serve_in_thread(create_app(settings, graph=graph)) as url, httpx.Client(base_url=url) as http:

        def call(token: str) -> tuple[int, str]:
            return _code(http.get(ADMIN_PROCEDURE, headers=_bearer(token), timeout=30))

        # Cold start: nobody holds a key set, 40 concurrent callers, one fetch.
        assert at_once(call, [(t,) for t in forged]) == [(401, "UNAUTHORIZED")] * 40
        assert jwks_server.hits == 1
        admitted = http.get(ADMIN_PROCEDURE, headers=_bearer(_rs256(signing_key)), timeout=30)
        assert admitted.status_code == 200, admitted.text
        # Again, with other forged kids: the held set answers them, the JWKS server sees nothing.
        again = [_rs256(forger, kid=f"forged-again-{i}") for i in range(40)]
        assert at_once(call, [(t,) for t in again]) == [(401, "UNAUTHORIZED")] * 40
        assert jwks_server.hits == 1


def test_an_unreachable_key_set_is_not_hammered_either(
    base_settings: Settings, graph: Graph, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    jwks_server.failing = True
    settings = _jwks_settings(base_settings, jwks_server.url)
    forger = _rsa_key()
    tokens = [_rs256(signing_key)] + [_rs256(forger, kid=f"forged-{i}") for i in range(19)]
    with serve_in_thread(create_app(settings, graph=graph)) as url, httpx.Client(base_url=url) as http:
        answers = at_once(
            lambda token: _code(http.get(ADMIN_PROCEDURE, headers=_bearer(token), timeout=30)),
            [(t,) for t in tokens],
        )
    # The good token may be fine: 503, not 401, for everyone; and one attempt, not twenty.
    assert answers == [(503, "SERVICE_UNAVAILABLE")] * 20
    assert jwks_server.hits == 1


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _outcome(keys: JwksKeys, kid: str) -> str:
    try:
        return str(keys.key_for(kid).key_id)
    except CampaignError as exc:
        return exc.code


def test_unknown_kids_refresh_the_key_set_at_most_once_per_interval(
    jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    clock = _Clock()
    keys = JwksKeys(jwks_server.url, min_refresh_seconds=300, monotonic=clock)
    burst = [(keys, f"forged-{i}") for i in range(50)]
    assert _outcome(keys, KID) == KID
    assert jwks_server.hits == 1

    clock.now += 299  # still inside the interval: the held set answers
    assert set(at_once(_outcome, burst)) == {"UNAUTHORIZED"}
    assert jwks_server.hits == 1

    # A key rotated in at the provider waits for the interval, then the next caller picks it up.
    rotated = _rsa_key()
    jwks_server.jwks = {"keys": [_jwk(signing_key, KID), _jwk(rotated, "rotated")]}
    assert _outcome(keys, "rotated") == "UNAUTHORIZED"
    assert jwks_server.hits == 1
    clock.now += 2
    assert set(at_once(_outcome, [*burst, (keys, "rotated")])) == {"UNAUTHORIZED", "rotated"}
    assert jwks_server.hits == 2  # one fetch for 51 concurrent callers
    assert set(at_once(_outcome, burst)) == {"UNAUTHORIZED"}
    assert jwks_server.hits == 2


def test_a_failed_refresh_keeps_the_held_keys_and_waits_an_interval(
    jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    clock = _Clock()
    keys = JwksKeys(jwks_server.url, min_refresh_seconds=60, monotonic=clock)
    assert _outcome(keys, KID) == KID
    jwks_server.failing = True
    clock.now += 61
    assert [_outcome(keys, kid) for kid in (KID, "forged-1", KID, "forged-2")] == [
        KID,
        "UNAUTHORIZED",
        KID,
        "UNAUTHORIZED",
    ]
    assert jwks_server.hits == 2  # the one attempt of this interval
    jwks_server.failing = False
    clock.now += 61
    assert _outcome(keys, KID) == KID
    assert jwks_server.hits == 3


def test_with_no_key_set_held_attempts_are_spaced_by_seconds(jwks_server: _JwksServer) -> None:
    clock = _Clock()
    jwks_server.failing = True
    keys = JwksKeys(jwks_server.url, min_refresh_seconds=300, monotonic=clock)
    with pytest.raises(ServiceUnavailable):
        keys.key_for(KID)
    assert set(at_once(_outcome, [(keys, f"forged-{i}") for i in range(20)])) == {"SERVICE_UNAVAILABLE"}
    assert jwks_server.hits == 1
    jwks_server.failing = False
    clock.now += 5  # recovery does not wait a whole interval
    assert _outcome(keys, KID) == KID
    assert jwks_server.hits == 2


def test_non_rsa_and_malformed_keys_are_skipped_never_a_500(
    base_settings: Settings,
    graph: Graph,
    jwks_server: _JwksServer,
    signing_key: rsa.RSAPrivateKey,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An identity provider's key set may hold EC or HMAC keys, encryption keys or a member we cannot
    read: each is skipped with a warning, the RSA signing key still verifies, and a token naming a
    skipped key is a 401 like any unknown kid."""
    ec_public = ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()).public_key(), as_dict=True)
    broken = {**_jwk(signing_key, "broken"), "n": "!!not-base64url!!"}
    jwks_server.jwks = {
        "keys": [
            {**ec_public, "kid": "ec-1", "use": "sig"},
            {"kty": "oct", "kid": "hmac-1", "k": base64.urlsafe_b64encode(b"k" * 32).decode()},
            {**_jwk(signing_key, "enc-1"), "use": "enc"},
            {k: v for k, v in _jwk(signing_key, "x").items() if k != "kid"},
            broken,
            "not-a-key",
            _jwk(signing_key, KID),
        ]
    }
    settings = _jwks_settings(base_settings, jwks_server.url)
    caplog.set_level("WARNING", logger="campaign_engine.api.auth")
    with api_client(settings, graph) as api:
        admitted = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_rs256(signing_key)))
        assert admitted.status_code == 200, admitted.text
        for kid in ("ec-1", "hmac-1", "enc-1", "broken"):
            response = api.http.get(ADMIN_PROCEDURE, headers=_bearer(_rs256(signing_key, kid=kid)))
            assert _code(response) == (401, "UNAUTHORIZED"), kid
    skipped = [r.getMessage() for r in caplog.records if "auth.jwks_key_skipped" in r.getMessage()]
    assert len(skipped) == 6, skipped
    assert jwks_server.hits == 1
