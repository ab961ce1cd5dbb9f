"""The JWKS key set under forged ``kid``s: even in concurrent bursts they fetch the key set at most once
per interval, a failed refresh keeps the held keys, and malformed keys are skipped, never a 500."""

from __future__ import annotations

import base64

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm

from campaign_engine.api.app import create_app
from campaign_engine.api.jwks import JwksKeys
from campaign_engine.config import Settings
from campaign_engine.domain.errors import CampaignError, ServiceUnavailable
from campaign_engine.graph.graph import Graph
from tests.support.api import api_client
from tests.support.concurrency import at_once
from tests.support.jwt_tokens import (
    ADMIN_PROCEDURE,
    KID,
    _bearer,
    _code,
    _jwk,
    _jwks_settings,
    _JwksServer,
    _rs256,
    _rsa_key,
)
from tests.support.servers import serve_in_thread

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
