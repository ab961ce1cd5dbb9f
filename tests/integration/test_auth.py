"""Bearer JWT auth over the real app: HS256 with the shared secret, RS256 against a real JWKS server.

Admin procedures need the ``campaigns:admin`` scope *and* the allowlist; anything wrong with the token
itself is UNAUTHORIZED, a good token without admin rights is FORBIDDEN.
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

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.routing import Route

from campaign_engine.api.auth import ADMIN_SCOPE, TokenVerifier
from campaign_engine.api.context import Context, Services
from campaign_engine.api.trpc import ProcedureRouter, TrpcEndpoint
from campaign_engine.campaigns.audience import Policy
from campaign_engine.campaigns.engagement import EngagementService
from campaign_engine.config import Settings
from campaign_engine.domain.errors import Unauthorized
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, free_port
from tests.support.api import TrpcClient, api_client

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
    router = ProcedureRouter("probe")

    @router.query("whoami", auth="user")
    def whoami(ctx: Context) -> str:
        return ctx.user().profile_id

    @router.query("open", auth="public")
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
    def __init__(self, jwks: dict[str, Any]) -> None:
        body = json.dumps(jwks).encode()
        self.hits = 0
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server_self.hits += 1
                if self.path != "/.well-known/jwks.json":
                    self.send_error(404)
                    return
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


@pytest.fixture
def jwks_server(signing_key: rsa.RSAPrivateKey) -> Iterator[_JwksServer]:
    public = RSAAlgorithm.to_jwk(signing_key.public_key(), as_dict=True)
    public.update({"kid": KID, "use": "sig", "alg": "RS256"})
    with _JwksServer({"keys": [public]}) as server:
        yield server


def _rs256(key: rsa.RSAPrivateKey, kid: str = KID, **overrides: Any) -> str:
    return jwt.encode(_claims(**overrides), key, algorithm="RS256", headers={"kid": kid})


def test_rs256_tokens_are_verified_against_the_jwks_url(
    base_settings: Settings, graph: Graph, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    settings = base_settings.model_copy(update={"auth_jwks_url": jwks_server.url, "auth_jwt_secret": None})
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
    settings = base_settings.model_copy(update={"auth_jwks_url": closed, "auth_jwt_secret": None})
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
    verifier = TokenVerifier(base_settings)
    token = _hs256(exp=int(time.time()) + 2)
    first = verifier.verify(f"Bearer {token}")
    assert first is not None and verifier.verify(f"Bearer {token}") == first  # served from memory
    time.sleep(3)
    with pytest.raises(Unauthorized, match="token expired"):
        verifier.verify(f"Bearer {token}")
