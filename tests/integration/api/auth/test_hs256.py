"""Bearer JWT auth over the real app with HS256 and the shared secret: admin procedures need the
``campaigns:admin`` scope *and* the allowlist; anything wrong with the token itself is UNAUTHORIZED, a
good token without admin rights is FORBIDDEN. The issuer is checked when configured, within the clock
leeway."""

from __future__ import annotations

import time

import jwt
import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, TokenVerifier
from campaign_engine.config import Settings
from campaign_engine.domain.errors import Unauthorized
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client
from tests.support.jwt_tokens import (
    ADMIN_PROCEDURE,
    OTHER_SECRET,
    _bearer,
    _claims,
    _code,
    _hs256,
    _rsa_key,
)

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
