"""DID-auth for people: a DID-auth presentation JWT, checked end to end, names the profile it signs in.

The token is what LearnCard's wallet signs (``getDidAuthVp({proofFormat: "jwt", challenge})``): an EdDSA
JWT with ``iss`` = the DID, ``vp.holder`` = that DID, and ``nonce`` = a challenge this deployment issued
to it. The checks run cheapest first and write nothing until the last one:

1. the unverified ``iss`` must name a profile: its stored ``did``, or its did:web alias
   ``did:web:<DOMAIN_NAME>:users:<profileId>`` (or the older ``did:web:<DOMAIN_NAME>:<profileId>``); an
   unknown DID is refused before any DID document is fetched, so strangers cannot make us fetch;
2. the signature verifies with one of the DID's authentication keys (``did/jwt.py``);
3. ``vp.holder`` equals ``iss``, and the profile belongs to the tenant it acts in;
4. a ``nonce``, if present, is used up atomically (``did/challenges.py``); the one write. A token
   without a nonce is ``challenge_only``: it may fetch challenges and nothing else.

Every failure is a ``DidError`` whose message holds neither the token nor the nonce.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from campaign_engine.did import challenges
from campaign_engine.did.jwt import KeySource, issuer_of, verify_jwt
from campaign_engine.did.keys import DidError
from campaign_engine.domain.audience import profile_id_from_did_web
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph

__all__ = ["DidAuthenticator", "DidPerson"]

_PERSON = "did_person"  # cypher/did/did_person.cypher


@dataclass(frozen=True)
class DidPerson:
    did: str
    profile_id: str
    tenant: str  # the tenant it acts in: always one its profile belongs to
    challenge_only: bool  # no nonce: may call utilities.getChallenges and nothing else


class DidAuthenticator:
    def __init__(
        self, graph: Graph, keys: KeySource, *, domain: str, default_tenant: str, leeway: float = 30
    ) -> None:
        self._default_tenant = default_tenant
        self._graph = graph
        self._keys = keys
        self._domain = domain
        self._leeway = leeway

    def authenticate(self, token: str, *, now: datetime) -> DidPerson:
        did = issuer_of(token)
        alias_of = profile_id_from_did_web(did, self._domain)
        found = self._graph.run(statement(_PERSON), did=did, aliasOf=alias_of)
        if not found:
            raise DidError("the DID belongs to no profile")
        claims = verify_jwt(token, self._keys, leeway=self._leeway).claims
        if _holder(claims) != did:
            raise DidError("the presentation's holder is not its issuer")
        tenant = _acting_tenant(claims.get("tenantId"), found[0]["tenants"], self._default_tenant)
        nonce = claims.get("nonce")
        if nonce is not None and not (
            isinstance(nonce, str) and challenges.consume(self._graph, did=did, nonce=nonce, now=now)
        ):
            raise DidError("the challenge was not issued to this DID, was used, or expired")
        return DidPerson(
            did=did, profile_id=str(found[0]["profileId"]), tenant=tenant, challenge_only=nonce is None
        )


def _holder(claims: dict[str, Any]) -> object:
    vp = claims.get("vp")
    return vp.get("holder") if isinstance(vp, dict) else None


def _acting_tenant(claim: object, tenants: list[str], default: str) -> str:
    """The tenant the token's signed ``tenantId`` names, else ``default``, else the profile's first;
    ``DidError`` when the profile does not belong to it (a profile acts only in its own tenants; one with
    no tenant list predates tenants and belongs to the default one)."""
    held = tenants or [default]
    if claim is not None and claim not in held:
        raise DidError("the DID's profile does not belong to the tenant the token names")
    if isinstance(claim, str):
        return claim
    return default if default in held else min(held)
