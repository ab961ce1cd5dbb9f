"""Ed25519 keys as DIDs name them: multibase ``z6Mk…`` (base58btc of the multicodec ``0xed 0x01`` prefix
and the 32 key bytes), ``did:key`` built from and read back to that key, and a JWK's ``x``.

did:key needs no network: the DID is the key. Only Ed25519 is read, because DID-auth here verifies
EdDSA JWTs; any other key type in a DID is not an error of the DID, just a key we cannot use.
"""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

__all__ = [
    "DidError",
    "b58decode",
    "b58encode",
    "did_key_method",
    "did_key_of",
    "ed25519_from_base58",
    "ed25519_from_jwk",
    "ed25519_from_multibase",
    "multibase_of",
    "raw_bytes",
]

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX = {char: index for index, char in enumerate(_ALPHABET)}
_ED25519_PREFIX = b"\xed\x01"  # the multicodec varint of ed25519-pub
_MAX_B58 = 128  # a multibase key is 48 characters; anything far longer is not one (and costs CPU)


class DidError(Exception):
    """The DID, its document or a key in it cannot be used: malformed, unknown method, unreachable. The
    message names no URL and holds no token."""


def b58encode(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _ALPHABET[digit] + out
    pad = len(data) - len(data.lstrip(b"\0"))
    return "1" * pad + out


def b58decode(text: str) -> bytes:
    if not text or len(text) > _MAX_B58:
        raise DidError("not a base58 key")
    number = 0
    for char in text:
        digit = _INDEX.get(char)
        if digit is None:
            raise DidError("not a base58 key")
        number = number * 58 + digit
    pad = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * pad + body


def raw_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def multibase_of(key: Ed25519PublicKey) -> str:
    """``z6Mk…``: the key as did:key and ``publicKeyMultibase`` (Multikey, Ed25519VerificationKey2020)
    write it."""
    return "z" + b58encode(_ED25519_PREFIX + raw_bytes(key))


def ed25519_from_multibase(value: str) -> Ed25519PublicKey:
    if not value.startswith("z"):
        raise DidError("only base58btc multibase keys are read")
    decoded = b58decode(value[1:])
    if not decoded.startswith(_ED25519_PREFIX) or len(decoded) != 34:
        raise DidError("not an Ed25519 multibase key")
    return Ed25519PublicKey.from_public_bytes(decoded[2:])


def ed25519_from_base58(value: str) -> Ed25519PublicKey:
    decoded = b58decode(value)
    if len(decoded) != 32:
        raise DidError("not an Ed25519 base58 key")
    return Ed25519PublicKey.from_public_bytes(decoded)


def ed25519_from_jwk(jwk: object) -> Ed25519PublicKey:
    if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise DidError("not an Ed25519 JWK")
    x = jwk.get("x")
    if not isinstance(x, str) or len(x) > 64:
        raise DidError("not an Ed25519 JWK")
    try:
        decoded = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
    except ValueError:
        raise DidError("not an Ed25519 JWK") from None
    if len(decoded) != 32:
        raise DidError("not an Ed25519 JWK")
    return Ed25519PublicKey.from_public_bytes(decoded)


def did_key_of(key: Ed25519PublicKey) -> str:
    """The did:key of an Ed25519 public key; its one verification method is ``<did>#<multibase>``."""
    return f"did:key:{multibase_of(key)}"


def did_key_method(did: str) -> tuple[str, Ed25519PublicKey]:
    """The verification method id and key of a ``did:key:z6Mk…``; ``DidError`` for any other did:key."""
    value = did.removeprefix("did:key:")
    if value == did or not value or any(c in value for c in ":#/?"):
        raise DidError("not a did:key")
    return f"{did}#{value}", ed25519_from_multibase(value)
