"""DID documents: where a did:web's document lives, and the Ed25519 keys it lists for authentication.

``did:web:<host>`` is ``https://<host>/.well-known/did.json``; ``did:web:<host>:<a>:<b>`` is
``https://<host>/<a>/<b>/did.json`` (each segment percent-decoded, the host's port written ``%3A``).
``http`` is used only in local development and only for loopback hosts (``localhost``, ``*.localhost``,
IP literals), so a test or ``make dev`` can serve a document; everywhere else did:web is https.

A document counts only if its ``id`` is the DID asked for. Its keys are the Ed25519 verification methods
its ``authentication`` names (by reference or embedded): DID-auth proves control through those, not
through any key the document happens to list. Keys come as ``publicKeyMultibase`` (Multikey,
Ed25519VerificationKey2020), ``publicKeyBase58`` (Ed25519VerificationKey2018) or an OKP ``publicKeyJwk``
(JsonWebKey2020); others are skipped.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from campaign_engine.did.keys import DidError, ed25519_from_base58, ed25519_from_jwk, ed25519_from_multibase

__all__ = ["MAX_METHODS", "VerificationKey", "authentication_keys", "did_web_url"]

MAX_METHODS = 32  # verification methods read from one document; more is not a person's DID


@dataclass(frozen=True)
class VerificationKey:
    id: str  # the verification method's absolute id, ``<did>#<fragment>``: what a JWT's ``kid`` names
    key: Ed25519PublicKey


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def did_web_url(did: str, *, local_development: bool) -> str:
    """The URL of a did:web's document; ``DidError`` for a malformed did:web."""
    parts = did.split(":")
    if len(parts) < 3 or parts[:2] != ["did", "web"] or any(not part for part in parts[2:]):
        raise DidError("not a did:web")
    host = unquote(parts[2]).lower()
    if any(c in host for c in "/?#@") or not host.strip("[]"):
        raise DidError("not a did:web")
    segments = [unquote(part) for part in parts[3:]]
    if any(segment in {".", ".."} or "/" in segment for segment in segments):
        raise DidError("not a did:web")
    path = "/".join(quote(segment, safe="") for segment in segments) + "/did.json" if segments else ""
    hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    scheme = "http" if local_development and _is_loopback(hostname) else "https"
    return f"{scheme}://{host}/{path or '.well-known/did.json'}"


def authentication_keys(did: str, raw: bytes) -> list[VerificationKey]:
    """The Ed25519 authentication keys of the document ``raw``, which must be ``did``'s own."""
    try:
        document = json.loads(raw)
    except ValueError:
        raise DidError("the DID document is not JSON") from None
    if not isinstance(document, dict) or document.get("id") != did:
        raise DidError("the DID document is not this DID's")
    methods = document.get("verificationMethod") or []
    authentication = document.get("authentication") or []
    if not isinstance(methods, list) or not isinstance(authentication, list):
        raise DidError("the DID document is malformed")
    by_id = {_absolute(did, m.get("id")): m for m in methods[:MAX_METHODS] if isinstance(m, dict)}
    keys: list[VerificationKey] = []
    for entry in authentication[:MAX_METHODS]:
        method = by_id.get(_absolute(did, entry)) if isinstance(entry, str) else entry
        if not isinstance(method, dict) or not isinstance(method.get("id"), str):
            continue
        key = _ed25519(method)
        if key is not None:
            keys.append(VerificationKey(_absolute(did, method["id"]), key))
    if not keys:
        raise DidError("the DID document names no Ed25519 authentication key")
    return keys


def _absolute(did: str, reference: Any) -> str:
    if not isinstance(reference, str):
        return ""
    return did + reference if reference.startswith("#") else reference


def _ed25519(method: dict[str, Any]) -> Ed25519PublicKey | None:
    try:
        if isinstance(method.get("publicKeyMultibase"), str):
            return ed25519_from_multibase(method["publicKeyMultibase"])
        if isinstance(method.get("publicKeyBase58"), str):
            return ed25519_from_base58(method["publicKeyBase58"])
        if "publicKeyJwk" in method:
            return ed25519_from_jwk(method["publicKeyJwk"])
    except (DidError, ValueError):
        return None
    return None
