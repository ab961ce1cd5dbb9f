"""Bearer JWT verification: HS256 with ``AUTH_JWT_SECRET``, or RS256 against ``AUTH_JWKS_URL``.

``sub`` is the profileId, ``scope`` a space-separated list, ``exp`` is required. Admin rights need both
the ``campaigns:admin`` scope and the profile in ``CAMPAIGN_ADMIN_PROFILE_IDS``: a leaked scope alone
is not enough, and an allowlisted profile with an ordinary token is not an admin either.

Verified tokens are remembered until they expire (bounded, per process): an app sends the same token
on every call, and re-checking its signature and claims is a sizeable share of a cheap call's CPU.
Only tokens that verified are kept, and a kept token stops counting at its ``exp`` like any other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jwt
from jwt.types import Options

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable, Unauthorized

__all__ = ["ADMIN_SCOPE", "Caller", "TokenVerifier", "mint_token"]

ADMIN_SCOPE = "campaigns:admin"


@dataclass(frozen=True)
class Caller:
    profile_id: str
    scopes: frozenset[str]
    is_admin: bool
    tenant_id: str | None


_REMEMBERED = 10_000  # verified tokens kept per process


class TokenVerifier:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._jwks = jwt.PyJWKClient(settings.auth_jwks_url, timeout=5) if settings.auth_jwks_url else None
        self._verified: dict[str, tuple[Caller, float]] = {}  # token -> (caller, exp)

    @property
    def may_block(self) -> bool:
        """True in JWKS mode, where verifying may fetch the key set over the network."""
        return self._jwks is not None

    def verify(self, authorization: str | None) -> Caller | None:
        """None without an Authorization header; ``Unauthorized`` for anything malformed or invalid."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("expected 'Authorization: Bearer <token>'")
        remembered = self._verified.get(token)
        if remembered is not None and time.time() < remembered[1]:
            return remembered[0]
        claims = self._decode(token)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise Unauthorized("token has no subject")
        raw_scope = claims.get("scope", "")
        scopes = frozenset(raw_scope.split()) if isinstance(raw_scope, str) else frozenset()
        tenant = claims.get("tenantId") or claims.get("tenant_id")
        caller = Caller(
            profile_id=subject,
            scopes=scopes,
            is_admin=ADMIN_SCOPE in scopes and subject in self._settings.admin_profile_ids,
            tenant_id=tenant if isinstance(tenant, str) else None,
        )
        expires = claims.get("exp")  # required and checked by _decode
        if isinstance(expires, int | float):
            if len(self._verified) >= _REMEMBERED:
                self._verified.clear()
            self._verified[token] = (caller, float(expires))
        return caller

    def _decode(self, token: str) -> dict[str, object]:
        options: Options = {"require": ["exp", "sub"]}
        audience = self._settings.auth_jwt_audience
        try:
            if self._jwks is not None:
                key = self._jwks.get_signing_key_from_jwt(token).key
                return jwt.decode(token, key, algorithms=["RS256"], options=options, audience=audience)
            secret = self._settings.auth_jwt_secret
            assert secret is not None  # Settings.require_api() ran at start
            return jwt.decode(
                token, secret.get_secret_value(), algorithms=["HS256"], options=options, audience=audience
            )
        except jwt.PyJWKClientConnectionError as exc:
            # Our identity provider is unreachable: the token may be fine, so this is not a 401.
            raise ServiceUnavailable("the identity provider's key set is unreachable") from exc
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("token expired") from exc
        except jwt.PyJWTError as exc:
            raise Unauthorized("invalid token") from exc


def mint_token(settings: Settings, *, profile_id: str, scope: str = "", ttl_seconds: int = 3600) -> str:
    """An HS256 token from the configured secret, for local use and tests."""
    settings.require_api()
    assert settings.auth_jwt_secret is not None
    now = int(time.time())
    claims: dict[str, object] = {"sub": profile_id, "scope": scope, "iat": now, "exp": now + ttl_seconds}
    if settings.auth_jwt_audience:
        claims["aud"] = settings.auth_jwt_audience
    return jwt.encode(claims, settings.auth_jwt_secret.get_secret_value(), algorithm="HS256")
