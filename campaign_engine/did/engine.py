"""The engine's own DID: the key it signs LearnCard notifications with, and the document it serves.

``CAMPAIGN_DID`` (unset: ``did:web:<DOMAIN_NAME>``, whose document is this API's
``/.well-known/did.json``) names the engine; ``CAMPAIGN_DID_KEY`` holds base64url Ed25519 seeds, the
first signing and any others listed in the document only, so a key is rotated with an overlap: put the
new seed first, keep the old one second until every token it signed has expired, then drop it. Each key
is a ``JsonWebKey2020`` method (an OKP ``publicKeyJwk``, which JOSE libraries and LearnCard's DIDKit
read) named ``<did>#<its multibase>``, listed under ``authentication`` and ``assertionMethod``.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from campaign_engine.did.keys import DidError, multibase_of, raw_bytes

__all__ = ["EngineDid", "default_did", "new_seed"]


def default_did(domain_name: str) -> str:
    """``did:web:<DOMAIN_NAME>``, the port's colon percent-encoded as did:web writes it."""
    return "did:web:" + quote(domain_name.strip().lower(), safe="")


def new_seed() -> str:
    """A fresh ``CAMPAIGN_DID_KEY`` value (``make dev`` writes one into its env file)."""
    return _b64(Ed25519PrivateKey.generate().private_bytes_raw())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _seed(text: str) -> Ed25519PrivateKey:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise DidError("CAMPAIGN_DID_KEY holds a value that is not base64url") from None
    if len(raw) != 32:
        raise DidError("CAMPAIGN_DID_KEY holds a value that is not a 32-byte Ed25519 seed")
    return Ed25519PrivateKey.from_private_bytes(raw)


@dataclass(frozen=True)
class EngineDid:
    did: str
    key: Ed25519PrivateKey
    previous: tuple[Ed25519PublicKey, ...] = ()

    @classmethod
    def of(cls, did: str, keys: str) -> EngineDid:
        """From ``CAMPAIGN_DID`` and ``CAMPAIGN_DID_KEY`` (comma-separated seeds, the signing one first);
        ``DidError`` naming the setting, never quoting it."""
        seeds = [part.strip() for part in keys.split(",") if part.strip()]
        if not seeds:
            raise DidError("CAMPAIGN_DID_KEY is empty")
        if not did.startswith("did:"):
            raise DidError("CAMPAIGN_DID must be a DID")
        first, *rest = (_seed(seed) for seed in seeds)
        return cls(did=did, key=first, previous=tuple(k.public_key() for k in rest))

    @classmethod
    def local(cls, did: str) -> EngineDid:
        """Local development without ``CAMPAIGN_DID_KEY``: a key derived from the DID, the same in every
        process of the stack (API and worker), and worthless anywhere else."""
        seed = hashlib.sha256(b"campaign-engine local development DID\0" + did.encode()).digest()
        return cls(did=did, key=Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def kid(self) -> str:
        """The signing key's verification method id: what a JWT's ``kid`` names."""
        return self._method_id(self.key.public_key())

    def _method_id(self, key: Ed25519PublicKey) -> str:
        return f"{self.did}#{multibase_of(key)}"

    def document(self) -> dict[str, Any]:
        """The DID document: the signing key, then the previous ones still in their overlap."""
        keys = [self.key.public_key(), *self.previous]
        methods = [
            {
                "id": self._method_id(key),
                "type": "JsonWebKey2020",
                "controller": self.did,
                "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": _b64(raw_bytes(key))},
            }
            for key in keys
        ]
        ids = [method["id"] for method in methods]
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
            "id": self.did,
            "verificationMethod": methods,
            "authentication": ids,
            "assertionMethod": ids,
        }
