"""EdDSA JWTs issued by a DID: verified against the DID's authentication keys, and signed with ours.

PyJWT (with cryptography) does the JOSE work; this module adds the DID rules: ``iss`` is the DID whose
keys verify the signature, ``alg`` is ``EdDSA`` and nothing else (no ``none``, no HMAC confusion), and a
``kid``, when the header has one, must be one of that DID's authentication methods (absolute
``did#frag`` or relative ``#frag``). ``exp`` and ``nbf`` are checked when present, with ``leeway``;
``exp`` is required only when the caller says so (a LearnCard DID-auth presentation carries none: its
nonce makes it single-use instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from campaign_engine.did.document import VerificationKey
from campaign_engine.did.keys import DidError

__all__ = ["ALGORITHM", "KeySource", "VerifiedJwt", "issuer_of", "sign_jwt", "verify_jwt"]

ALGORITHM = "EdDSA"
MAX_TOKEN_CHARS = 16 * 1024  # a DID-auth presentation is ~1 KB; a huge one is refused before parsing


class KeySource(Protocol):
    def verification_keys(self, did: str) -> list[VerificationKey]: ...


@dataclass(frozen=True)
class VerifiedJwt:
    issuer: str  # the DID that signed it
    kid: str  # the verification method whose key verified it
    claims: dict[str, Any]


def issuer_of(token: str) -> str:
    """The unverified ``iss`` of ``token``, to look its DID up before anything is trusted."""
    if len(token) > MAX_TOKEN_CHARS:
        raise DidError("the token is too large")
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise DidError("the token is not a JWT") from None
    issuer = claims.get("iss")
    if header.get("alg") != ALGORITHM or not isinstance(issuer, str) or not issuer.startswith("did:"):
        raise DidError("the token is not an EdDSA JWT issued by a DID")
    return issuer


def verify_jwt(
    token: str,
    keys: KeySource,
    *,
    leeway: float = 30,
    require_exp: bool = False,
    audience: str | None = None,
    now: float | None = None,
) -> VerifiedJwt:
    """``token``'s claims once its signature verifies with a key of its issuer's DID; ``DidError`` for
    anything else (the message holds no token). ``now`` (epoch seconds) replaces the system clock for
    ``exp`` and ``nbf``, so a caller with its own clock judges expiry by that clock alone."""
    issuer = issuer_of(token)
    kid = jwt.get_unverified_header(token).get("kid")
    methods = keys.verification_keys(issuer)
    if isinstance(kid, str) and kid:
        wanted = issuer + kid if kid.startswith("#") else kid
        methods = [method for method in methods if method.id == wanted]
        if not methods:
            raise DidError("the token's kid is not an authentication key of its issuer")
    required = ["iss", "exp"] if require_exp else ["iss"]
    for method in methods:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                method.key,
                algorithms=[ALGORITHM],
                issuer=issuer,
                audience=audience,
                leeway=leeway,
                options={
                    "require": required,
                    "verify_aud": audience is not None,
                    "verify_exp": now is None,
                    "verify_nbf": now is None,
                    "verify_iat": now is None,
                },
            )
        except jwt.InvalidSignatureError:
            continue  # another of the DID's keys may have signed it
        except jwt.ExpiredSignatureError:
            raise DidError("the token expired") from None
        except jwt.PyJWTError as exc:
            raise DidError(f"the token is invalid ({type(exc).__name__})") from None
        if now is not None:
            _check_times(claims, now, leeway)
        return VerifiedJwt(issuer=issuer, kid=method.id, claims=claims)
    raise DidError("the token's signature does not verify")


def _check_times(claims: dict[str, Any], now: float, leeway: float) -> None:
    """PyJWT's ``exp``/``nbf`` checks against ``now`` instead of the system clock."""
    exp, nbf = claims.get("exp"), claims.get("nbf")
    for value in (exp, nbf):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise DidError("the token is invalid (DecodeError)")
    if exp is not None and exp <= now - leeway:
        raise DidError("the token expired")
    if nbf is not None and nbf > now + leeway:
        raise DidError("the token is invalid (ImmatureSignatureError)")


def sign_jwt(claims: Mapping[str, Any], key: Ed25519PrivateKey, kid: str) -> str:
    """An EdDSA JWT of ``claims`` whose header names ``kid`` (the signer's verification method id)."""
    return jwt.encode(dict(claims), key, algorithm=ALGORITHM, headers={"kid": kid, "typ": "JWT"})
