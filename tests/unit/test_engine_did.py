"""The engine's DID: its document lists the signing key then the previous one, and a bearer is reused
per receiver origin for its window, then signed anew (never one signature per POST)."""

from __future__ import annotations

import jwt
import pytest

from campaign_engine.delivery.notify.lcn import REUSE_SECONDS, BearerTokens, learncard_did
from campaign_engine.did.engine import EngineDid, default_did, new_seed
from campaign_engine.did.keys import DidError


def test_the_document_lists_the_signing_key_then_the_previous_one() -> None:
    current, previous = new_seed(), new_seed()
    rotated = EngineDid.of("did:web:campaigns.example", f"{current},{previous}")
    before = EngineDid.of("did:web:campaigns.example", previous)
    document = rotated.document()
    assert document["authentication"] == [rotated.kid, before.kid]
    assert [m["id"] for m in document["verificationMethod"]] == document["authentication"]
    # A token signed by the previous key still verifies during the overlap.
    token = jwt.encode({"iss": before.did}, before.key, algorithm="EdDSA", headers={"kid": before.kid})
    method = document["verificationMethod"][1]
    assert jwt.decode(token, jwt.PyJWK(method["publicKeyJwk"], algorithm="EdDSA").key, algorithms=["EdDSA"])
    assert default_did("Campaigns.Example:8443") == "did:web:campaigns.example%3A8443"
    assert learncard_did("a/b", "campaigns.example") == "did:web:campaigns.example:users:a%2Fb"


@pytest.mark.parametrize("value", ["", "not base64 !", "c2hvcnQ"])
def test_a_bad_key_names_the_setting_and_never_quotes_it(value: str) -> None:
    with pytest.raises(DidError, match="CAMPAIGN_DID_KEY") as raised:
        EngineDid.of("did:web:campaigns.example", value)
    assert not value or value not in str(raised.value)


def test_a_bearer_is_reused_per_origin_for_its_window() -> None:
    now = [1_000_000.0]
    engine = EngineDid.of("did:web:campaigns.example", new_seed())
    tokens = BearerTokens(engine, wall_clock=lambda: now[0])
    first = tokens.for_url("https://inbox.example/api/notify?x=1")
    assert tokens.for_url("https://INBOX.example/other") == first
    other = tokens.for_url("https://elsewhere.example/hook")
    assert other != first and tokens.signed == 2
    now[0] += REUSE_SECONDS
    renewed = tokens.for_url("https://inbox.example/api/notify")
    assert renewed != first and tokens.signed == 3
    key = engine.key.public_key()
    claims = jwt.decode(renewed, key, algorithms=["EdDSA"], audience="https://inbox.example",
                        options={"verify_exp": False, "verify_nbf": False, "verify_iat": False})  # fmt: skip
    assert (
        claims["iss"] == claims["vp"]["holder"] == engine.did
        and claims["exp"] - claims["iat"] == 2 * REUSE_SECONDS
    )
    assert jwt.get_unverified_header(renewed)["kid"] == engine.kid
