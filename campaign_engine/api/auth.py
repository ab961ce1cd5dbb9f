"""Bearer JWT verification: HS256 with ``AUTH_JWT_SECRET``, RS256 against ``AUTH_JWKS_URL``, or both
(an identity provider's tokens and locally minted ones, as ``make dev`` signs people in).

``sub`` is the profileId, ``scope`` a space-separated list, ``exp`` is required. Admin rights need both
the ``campaigns:admin`` scope and the profile in ``CAMPAIGN_ADMIN_PROFILE_IDS``: a leaked scope alone
is not enough, and an allowlisted profile with an ordinary token is not an admin either.

Verified tokens are remembered until they expire (bounded, per process): an app sends the same token
on every call, and re-checking its signature and claims is a sizeable share of a cheap call's CPU.
Only tokens that verified are kept, and a kept token stops counting at its ``exp`` like any other.

A DID-auth presentation (EdDSA, from a person's DID) is checked by ``did/auth.py``, never remembered.

``AUTH_JWT_ISSUER`` and ``AUTH_JWT_AUDIENCE`` are checked when set; ``exp``/``nbf``/``iat`` allow
``AUTH_JWT_LEEWAY_SECONDS`` of clock skew. The key set is held by ``JwksKeys``: anyone can forge a token
naming a ``kid`` we do not hold, so such tokens must not be able to make us fetch the key set on demand
: it is fetched at most once per ``AUTH_JWKS_MIN_REFRESH_SECONDS``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import jwt
from jwt.types import Options

from campaign_engine.api.jwks import JwksKeys
from campaign_engine.campaigns.tenants.api_keys import KEY_PREFIX, KeyHolder, is_api_key
from campaign_engine.config import Settings
from campaign_engine.did.auth import DidPerson
from campaign_engine.did.keys import DidError
from campaign_engine.domain.errors import Unauthorized

__all__ = ["ADMIN_SCOPE", "Caller", "TokenVerifier", "mint_token"]

log = logging.getLogger(__name__)

ADMIN_SCOPE = "campaigns:admin"

API_KEY_ACTOR = "apikey:"  # the subject of a call made with an API key (its audit ``via``)


@dataclass(frozen=True)
class Caller:
    profile_id: str
    scopes: frozenset[str]
    is_admin: bool  # a platform admin: every role in every tenant
    tenant_id: str | None
    roles: frozenset[str] = frozenset()  # the signed ``roles`` claim: roles in ``tenant_id``, if it names one
    minted_by: str | None = None  # an API key's minter: the person the key acts for
    did: str | None = None  # a DID-auth caller's DID
    challenge_only: bool = False  # a DID-auth token without a nonce: it may only fetch challenges

    @property
    def person(self) -> str:
        """The person this credential acts for: a token's subject, an API key's minter. Audit actors,
        approvers, requesters and editors are persons, so one person never counts as two."""
        return self.minted_by or self.profile_id

    @property
    def is_api_key(self) -> bool:
        """The caller is an API key (``TokenVerifier._key_caller``), not a person."""
        return self.profile_id.startswith(API_KEY_ACTOR)


_REMEMBERED = 10_000  # verified tokens kept per process
DidCheck = Callable[[str], DidPerson]  # did/auth.py: reads the graph, uses up the nonce

ApiKeyCheck = Callable[[str], KeyHolder]
"""Verifies an API key against its record (``campaigns/tenants/api_keys.py``);
reads the graph on every call."""


class TokenVerifier:
    """JWTs, and API keys when ``api_keys`` is given (the API passes one bound to its graph)."""

    def __init__(
        self, settings: Settings, *, api_keys: ApiKeyCheck | None = None, did_auth: DidCheck | None = None
    ) -> None:
        self._settings = settings
        self._api_keys = api_keys
        self._did_auth = did_auth
        self._jwks = (
            JwksKeys(settings.auth_jwks_url, min_refresh_seconds=settings.auth_jwks_min_refresh_seconds)
            if settings.auth_jwks_url
            else None
        )
        self._verified: dict[str, tuple[Caller, float]] = {}  # token -> (caller, exp)

    def may_block(self, authorization: str | None) -> bool:
        """True when verifying may wait on the network: JWKS mode (the key set), an API key (its record
        in the graph), or a DID-auth token (its profile and nonce in the graph, maybe its DID document).
        A token verified before never does: it is answered from memory, in any mode."""
        if authorization is None:
            return False
        _, _, token = authorization.partition(" ")
        if self._remembered(token.strip()) is not None:
            return False
        if self._jwks is not None or KEY_PREFIX in authorization:
            return True
        return self._did_auth is not None and _is_did_token(authorization)

    def _remembered(self, token: str) -> Caller | None:
        """The caller of a JWT that verified and has not expired (never an API key's or a DID's)."""
        remembered = self._verified.get(token)
        return remembered[0] if remembered is not None and time.time() < remembered[1] else None

    def verify(self, authorization: str | None) -> Caller | None:
        """None without an Authorization header; ``Unauthorized`` for anything malformed or invalid."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("expected 'Authorization: Bearer <token>'")
        if is_api_key(token):
            return self._key_caller(token)
        remembered = self._remembered(token)  # first: an app's every call, one dict read
        if remembered is not None:
            return remembered
        if self._did_auth is not None and _is_did_token(token):
            return self._did_caller(self._did_auth, token)  # never remembered, so never answered above
        claims = self._decode(token)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise Unauthorized("token has no subject")
        raw_scope = claims.get("scope", "")
        scopes = frozenset(raw_scope.split()) if isinstance(raw_scope, str) else frozenset()
        tenant = claims.get("tenantId") or claims.get("tenant_id")
        raw_roles = claims.get("roles")
        caller = Caller(
            profile_id=subject,
            scopes=scopes,
            is_admin=ADMIN_SCOPE in scopes and subject in self._settings.admin_profile_ids,
            tenant_id=tenant if isinstance(tenant, str) else None,
            # The identity provider's word on roles counts only in the tenant it signed beside them.
            roles=frozenset(r for r in raw_roles if isinstance(r, str))
            if isinstance(raw_roles, list) and isinstance(tenant, str)
            else frozenset(),
        )
        expires = claims.get("exp")  # required and checked by _decode
        if isinstance(expires, int | float):
            if len(self._verified) >= _REMEMBERED:
                self._verified.clear()
            self._verified[token] = (caller, float(expires))
        return caller

    def _key_caller(self, token: str) -> Caller:
        """An API key speaks for its tenant in its one role; never remembered, so revocation is
        immediate. It acts for its minter: the audit actor is that person, ``via`` names the key."""
        if self._api_keys is None:
            raise Unauthorized("API keys are not accepted here")
        holder = self._api_keys(token)
        return Caller(
            profile_id=f"{API_KEY_ACTOR}{holder.key_id}",
            scopes=frozenset(),
            is_admin=False,
            tenant_id=holder.tenant_id,
            roles=frozenset({holder.role}),
            minted_by=holder.minted_by,
        )

    def _did_caller(self, check: DidCheck, token: str) -> Caller:
        try:
            person = check(token)
        except DidError as exc:  # its message names neither the token nor the nonce
            log.info("auth.did_refused reason=%s", exc)
            raise Unauthorized("invalid DID-auth token") from None
        return Caller(
            profile_id=person.profile_id,
            scopes=frozenset(),
            is_admin=False,  # a platform admin signs in with the identity provider's token
            tenant_id=person.tenant,
            did=person.did,
            challenge_only=person.challenge_only,
        )

    def _decode(self, token: str) -> dict[str, object]:
        settings = self._settings
        issuer = settings.auth_jwt_issuer
        options: Options = {"require": ["exp", "sub", "iss"] if issuer else ["exp", "sub"]}
        try:
            header = jwt.get_unverified_header(token)
            # Beside a key set, a secret also signs: HS256 tokens are checked against it alone (never
            # against a key of the set), RS256 ones against the set (make dev's pasted-token fallback).
            shared = settings.auth_jwt_secret is not None and header.get("alg") == "HS256"
            if self._jwks is not None and not shared:
                kid = header.get("kid")
                # Unknown kid: Unauthorized; no key set held: ServiceUnavailable (the token may be fine).
                public_key = self._jwks.key_for(kid if isinstance(kid, str) else None).key
                return jwt.decode(
                    token,
                    public_key,
                    algorithms=["RS256"],
                    options=options,
                    audience=settings.auth_jwt_audience,
                    issuer=issuer,
                    leeway=settings.auth_jwt_leeway_seconds,
                )
            assert settings.auth_jwt_secret is not None  # Settings.require_api() ran at start
            own_issuer = None if self._jwks is not None else issuer  # AUTH_JWT_ISSUER names the provider
            return jwt.decode(
                token,
                settings.auth_jwt_secret.get_secret_value(),
                algorithms=["HS256"],
                options={"require": ["exp", "sub"]} if self._jwks is not None else options,
                audience=settings.auth_jwt_audience,
                issuer=own_issuer,
                leeway=settings.auth_jwt_leeway_seconds,
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("token expired") from exc
        except jwt.PyJWTError as exc:
            raise Unauthorized("invalid token") from exc


def _is_did_token(token: str) -> bool:
    """An EdDSA JWT (a DID's; ours are HS256/RS256), read unverified only to choose the checker."""
    _, _, token = token.rpartition(" ")
    try:
        return jwt.get_unverified_header(token).get("alg") == "EdDSA"
    except jwt.PyJWTError:
        return False


def mint_token(
    settings: Settings,
    *,
    profile_id: str,
    scope: str = "",
    ttl_seconds: int = 3600,
    tenant_id: str | None = None,
    roles: list[str] | None = None,
) -> str:
    """An HS256 token from the configured secret, for local use and tests; ``tenant_id`` is the signed
    ``tenantId`` claim naming the tenant the credential acts in, ``roles`` its roles there."""
    settings.require_api()
    assert settings.auth_jwt_secret is not None
    now = int(time.time())
    claims: dict[str, object] = {"sub": profile_id, "scope": scope, "iat": now, "exp": now + ttl_seconds}
    if tenant_id is not None:
        claims["tenantId"] = tenant_id
    if roles is not None:
        claims["roles"] = roles
    if settings.auth_jwt_audience:
        claims["aud"] = settings.auth_jwt_audience
    return jwt.encode(claims, settings.auth_jwt_secret.get_secret_value(), algorithm="HS256")
