"""Bearer JWT auth with RS256 against a JWKS served over real loopback HTTP: tokens verified against the
key set, forgeries refused, an unreachable key set a 503, a remembered token still expiring."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from campaign_engine.api.auth import TokenVerifier
from campaign_engine.config import Settings
from campaign_engine.domain.errors import Unauthorized
from campaign_engine.graph.graph import Graph
from tests.conftest import free_port
from tests.support.api import api_client
from tests.support.jwt_tokens import (
    ADMIN_PROCEDURE,
    AUDIENCE,
    KID,
    OTHER_SECRET,
    _bearer,
    _claims,
    _code,
    _hs256,
    _jwks_settings,
    _JwksServer,
    _rs256,
    _rsa_key,
)

# --- RS256 against a JWKS served over real loopback HTTP ------------------------------------------


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


def test_a_token_verified_before_is_answered_on_the_loop_even_beside_a_key_set(
    base_settings: Settings, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    """A key set may be fetched, so its first check of a token runs on a thread; a token that verified
    before is answered from memory and stays on the loop (a thread hop is a share of a cheap call)."""
    verifier = TokenVerifier(_jwks_settings(base_settings, jwks_server.url))
    token, other = _rs256(signing_key), _rs256(signing_key, sub="someone-else")
    assert verifier.may_block(f"Bearer {token}")  # not verified yet
    assert verifier.verify(f"Bearer {token}") is not None
    assert not verifier.may_block(f"Bearer {token}")
    assert verifier.may_block(f"Bearer {other}") and not verifier.may_block(None)


def test_beside_a_key_set_a_secret_signs_hs256_tokens_and_nothing_else(
    base_settings: Settings, graph: Graph, jwks_server: _JwksServer, signing_key: rsa.RSAPrivateKey
) -> None:
    """make dev: the provider's RS256 tokens and the pasted fallback minted with the secret. Each is
    checked against its own key only: the secret never verifies an RS256 token, a key never an HS256 one."""
    settings = _jwks_settings(base_settings, jwks_server.url).model_copy(
        update={"auth_jwt_secret": base_settings.auth_jwt_secret}
    )
    public_pem = signing_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with api_client(settings, graph) as api:
        for token in (_rs256(signing_key), _hs256(aud=AUDIENCE)):
            assert api.http.get(ADMIN_PROCEDURE, headers=_bearer(token)).status_code == 200
        rejected = {
            "hs256 with another secret": _hs256(OTHER_SECRET, aud=AUDIENCE),
            "hs256 for another audience": _hs256(aud="someone-else"),
            "hs256 keyed with the public key": _hmac_signed(_claims(aud=AUDIENCE), public_pem),
            "rs256 signed by another key": _rs256(_rsa_key()),
        }
        for case, token in rejected.items():
            assert _code(api.http.get(ADMIN_PROCEDURE, headers=_bearer(token))) == (401, "UNAUTHORIZED"), case
