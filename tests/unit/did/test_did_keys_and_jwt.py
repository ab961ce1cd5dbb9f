"""did:key and EdDSA JWTs without any network: keys round-trip through multibase, a signed token
verifies against its issuer's did:key, and every forgery is a ``DidError``."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from campaign_engine.did import DidError, DidResolver, did_key_of, did_web_url, sign_jwt, verify_jwt
from campaign_engine.did.document import authentication_keys
from campaign_engine.did.keys import b58decode, b58encode, ed25519_from_multibase, multibase_of, raw_bytes
from campaign_engine.domain.audience import did_web_for, profile_id_from_did_web

RESOLVER = DidResolver(None)  # did:key only


def _signer() -> tuple[Ed25519PrivateKey, str, str]:
    key = Ed25519PrivateKey.generate()
    did = did_key_of(key.public_key())
    return key, did, f"{did}#{did.removeprefix('did:key:')}"


def test_base58_matches_the_bitcoin_alphabet_vectors() -> None:
    # Vectors of draft-msporny-base58: leading zero bytes are leading "1"s.
    assert b58encode(b"Hello World!") == "2NEpo7TZRRrLZSi2U"
    assert b58encode(b"\0\0\x28\x7f\xb4\xcd") == "11233QC4"
    assert b58decode("11233QC4") == b"\0\0\x28\x7f\xb4\xcd"
    with pytest.raises(DidError):
        b58decode("0OIl")


def test_a_did_key_is_z6mk_and_reads_back_to_its_key() -> None:
    key = Ed25519PrivateKey.generate().public_key()
    did = did_key_of(key)
    assert did.startswith("did:key:z6Mk") and len(did) == len("did:key:") + 48
    assert raw_bytes(ed25519_from_multibase(multibase_of(key))) == raw_bytes(key)
    assert [raw_bytes(k) for k in RESOLVER.resolve_key(did)] == [raw_bytes(key)]
    for bad in ("did:key:", "did:key:zQ3s", "did:key:z6Mk#x", "did:other:z6Mk", "did:web:x"):
        with pytest.raises(DidError):
            RESOLVER.resolve_key(bad)


def test_a_signed_jwt_verifies_with_or_without_its_kid() -> None:
    key, did, kid = _signer()
    token = sign_jwt({"iss": did, "nonce": "n1"}, key, kid)
    verified = verify_jwt(token, RESOLVER)
    assert (verified.issuer, verified.kid, verified.claims["nonce"]) == (did, kid, "n1")
    bare = jwt.encode({"iss": did}, key, algorithm="EdDSA")  # DIDKit may omit kid
    assert verify_jwt(bare, RESOLVER).issuer == did


def test_forgeries_are_refused() -> None:
    key, did, kid = _signer()
    other, other_did, _ = _signer()
    forged = [
        sign_jwt({"iss": did}, other, kid),  # another key signs for this DID
        sign_jwt({"iss": did}, key, f"{other_did}#x"),  # a kid that is not the issuer's
        sign_jwt({"iss": did, "exp": int(time.time()) - 3600}, key, kid),  # expired
        sign_jwt({"sub": did}, key, kid),  # no issuer
        jwt.encode({"iss": did}, "a-shared-secret-of-32-bytes-long!", algorithm="HS256"),
        "not.a.jwt",
    ]
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(json.dumps({"iss": did}).encode()).rstrip(b"=").decode()
    forged.append(f"{header}.{body}.")
    for token in forged:
        with pytest.raises(DidError):
            verify_jwt(token, RESOLVER)
    with pytest.raises(DidError):
        verify_jwt(sign_jwt({"iss": did}, key, kid), RESOLVER, require_exp=True)


def test_did_web_urls_follow_the_method_and_http_is_for_local_loopback_only() -> None:
    assert did_web_url("did:web:example.com", local_development=False) == (
        "https://example.com/.well-known/did.json"
    )
    assert did_web_url("did:web:example.com:users:p1", local_development=True) == (
        "https://example.com/users/p1/did.json"
    )
    assert did_web_url("did:web:127.0.0.1%3A8443:users:a", local_development=True) == (
        "http://127.0.0.1:8443/users/a/did.json"
    )
    assert did_web_url("did:web:localhost%3A3000", local_development=False).startswith("https://")
    for bad in ("did:web:", "did:web:a::b", "did:web:a:..", "did:web:a%2Fb", "did:web:u%40h"):
        with pytest.raises(DidError):
            did_web_url(bad, local_development=True)


def test_a_document_yields_only_its_own_ed25519_authentication_keys() -> None:
    key = Ed25519PrivateKey.generate().public_key()
    spare = Ed25519PrivateKey.generate().public_key()
    did = "did:web:example.com:users:a"
    x = base64.urlsafe_b64encode(raw_bytes(spare)).rstrip(b"=").decode()
    document = {
        "id": did,
        "verificationMethod": [
            {"id": "#auth", "type": "Ed25519VerificationKey2020", "publicKeyMultibase": multibase_of(key)},
            {
                "id": f"{did}#jwk",
                "type": "JsonWebKey2020",
                "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": x},
            },
            {"id": "#assert", "type": "Multikey", "publicKeyMultibase": multibase_of(spare)},
            {"id": "#rsa", "type": "JsonWebKey2020", "publicKeyJwk": {"kty": "RSA", "n": "x", "e": "AQAB"}},
        ],
        "authentication": ["#auth", f"{did}#jwk", "#rsa"],
        "assertionMethod": ["#assert"],
    }
    keys = authentication_keys(did, json.dumps(document).encode())
    assert [(k.id, raw_bytes(k.key)) for k in keys] == [
        (f"{did}#auth", raw_bytes(key)),
        (f"{did}#jwk", raw_bytes(spare)),
    ]
    for wrong in (
        {**document, "id": "did:web:evil.example"},
        {**document, "authentication": ["#rsa", "#none"]},
    ):
        with pytest.raises(DidError):
            authentication_keys(did, json.dumps(wrong).encode())
    with pytest.raises(DidError):
        authentication_keys(did, b"<html>")


def test_a_profiles_did_web_alias_reads_in_learncards_form_and_the_older_one() -> None:
    assert did_web_for("p/1", "Example.com:8443") == "did:web:example.com%3A8443:users:p%2F1"
    for alias in ("did:web:example.com:users:p%2F1", "did:web:EXAMPLE.com:p%2F1"):
        assert profile_id_from_did_web(alias, "example.com") == "p/1", alias
    assert profile_id_from_did_web("did:web:example.com:users", "example.com") == "users"
    for other in ("did:web:example.com:a:b", "did:web:example.com:users:p/1", "did:web:other.com:users:p"):
        assert profile_id_from_did_web(other, "example.com") is None, other
