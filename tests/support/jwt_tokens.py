"""What the auth tests share: tokens signed HS256 with the shared secret or RS256 with a key of the
test's, the error they answer, and a JWKS server over real loopback HTTP that counts its requests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from campaign_engine.api.auth import ADMIN_SCOPE
from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET

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


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


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


def _jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    public = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    public.update({"kid": kid, "use": "sig", "alg": "RS256"})
    return public


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
