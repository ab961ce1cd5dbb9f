"""DIDs: did:key and did:web resolution to Ed25519 keys, and EdDSA JWTs issued by a DID.

The public API, kept stable for every caller (DID-auth of people, the engine's own DID):
``DidResolver.resolve_key(did)`` / ``verification_keys(did)``, ``resolver_for(settings)``,
``verify_jwt(token, resolver)``, ``sign_jwt(claims, key, kid)``, ``did_key_of(public_key)`` and
``multibase_of(public_key)``; every failure is a ``DidError``.
"""

from campaign_engine.did.document import VerificationKey, authentication_keys, did_web_url
from campaign_engine.did.jwt import ALGORITHM, VerifiedJwt, issuer_of, sign_jwt, verify_jwt
from campaign_engine.did.keys import DidError, did_key_of, multibase_of
from campaign_engine.did.resolver import DidResolver, resolver_for

__all__ = [
    "ALGORITHM",
    "DidError",
    "DidResolver",
    "VerificationKey",
    "VerifiedJwt",
    "authentication_keys",
    "did_key_of",
    "did_web_url",
    "issuer_of",
    "multibase_of",
    "resolver_for",
    "sign_jwt",
    "verify_jwt",
]
