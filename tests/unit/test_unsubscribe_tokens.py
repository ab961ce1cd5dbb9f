"""Unsubscribe tokens: what they are bound to, and every way a token must be refused."""

from __future__ import annotations

import hashlib
import json
import random
import uuid

import pytest
from itsdangerous import URLSafeSerializer
from itsdangerous.encoding import base64_encode

from campaign_engine.config import ConfigError, Settings
from campaign_engine.unsubscribe.i18n import choose_language
from campaign_engine.unsubscribe.tokens import (
    UNSUBSCRIBE_SALT,
    InvalidUnsubscribeToken,
    LinkCampaign,
    UnsubscribeLink,
    UnsubscribeTokens,
    list_unsubscribe_headers,
    unsubscribe_url,
)

SECRET = "unit-test-unsubscribe-secret-0123456789abcdef"
UID = "0f8e4f8e-3a65-4a4e-9d53-5a1d3f6b2c11"


def _signer(secret: str = SECRET, salt: str = UNSUBSCRIBE_SALT) -> URLSafeSerializer:
    return URLSafeSerializer(
        secret, salt=salt, signer_kwargs={"digest_method": hashlib.sha256, "key_derivation": "hmac"}
    )


def test_round_trip_returns_the_unsubscribe_id() -> None:
    tokens = UnsubscribeTokens(SECRET)
    assert tokens.read(tokens.issue(UID)) == UID


def _itsdangerous_token(uid: str) -> str:
    """What itsdangerous signs for ``uid``, with its payload plain unless that would be too long to read:
    the JSON and base64 encoders, the key derivation and the signature are all itsdangerous' own."""
    signer = _signer()
    plain = signer.make_signer().sign(
        base64_encode(json.dumps({"v": 2, "u": uid}, separators=(",", ":"), ensure_ascii=False).encode())
    )
    return plain.decode() if len(plain) <= 512 else signer.dumps({"v": 2, "u": uid})


@pytest.mark.parametrize(
    "unsubscribe_id",
    # itsdangerous would compress the last three; the escapes are where two JSON encoders could differ;
    # 128 control characters are too long to sign plain, so that one is compressed as itsdangerous does.
    [
        *[UID, "a", "é-ü-ñ", 'q"b\\s/\x01\x1f\x7f\u2028\U0001f600', "\x01" * 128],
        *["x" * 128, "ab" * 64, "0f8e4f8e" * 16],
    ],
)
def test_issue_signs_as_itsdangerous_and_its_reader_takes_it(unsubscribe_id: str) -> None:
    # issue() keeps the keyed HMAC and signs itself, without the zlib call that
    # itsdangerous makes for every token; its loads (what read() uses) must still take every token.
    token = UnsubscribeTokens(SECRET).issue(unsubscribe_id)
    assert token == _itsdangerous_token(unsubscribe_id)
    assert _signer().loads(token) == {"v": 2, "u": unsubscribe_id}
    assert UnsubscribeTokens(SECRET).read(token) == unsubscribe_id


def test_issue_is_itsdangerous_byte_for_byte_for_a_uuid() -> None:
    # A UUID's payload never compresses, so the links sent are exactly what itsdangerous writes.
    tokens, signer = UnsubscribeTokens(SECRET), _signer()
    for uid in (str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4)) for i in range(500)):
        assert tokens.issue(uid) == signer.dumps({"v": 2, "u": uid}), uid


def test_issue_signs_as_itsdangerous_for_random_ids() -> None:
    # Ids drawn from ASCII, controls, escapes and astral characters, of every allowed length.
    rng = random.Random(13)
    alphabet = [chr(c) for c in range(0x80)] + ["é", "\u2028", "\ufeff", "\U0001f600"]
    tokens, signer = UnsubscribeTokens(SECRET), _signer()
    for _ in range(2000):
        uid = "".join(rng.choices(alphabet[: rng.choice([4, 16, len(alphabet)])], k=rng.randint(1, 128)))
        token = tokens.issue(uid)
        assert token == _itsdangerous_token(uid), repr(uid)
        assert signer.loads(token) == {"v": 2, "u": uid}, repr(uid)


def test_token_is_bound_to_the_unsubscribe_id_only() -> None:
    tokens = UnsubscribeTokens(SECRET)
    token = tokens.issue(UID)
    # Same id -> same token: nothing about a name, address or profileId goes in.
    assert tokens.issue(UID) == token
    assert tokens.issue("another-id") != token
    assert _signer().loads(token) == {"v": 2, "u": UID}


@pytest.mark.parametrize("position", [0, 10, -3, -8])  # not -1: its low bits are padding
def test_tampered_token_is_rejected(position: int) -> None:
    tokens = UnsubscribeTokens(SECRET)
    token = tokens.issue(UID)
    chars = list(token)
    chars[position] = "A" if chars[position] != "A" else "B"
    with pytest.raises(InvalidUnsubscribeToken):
        tokens.read("".join(chars))


def test_swapped_payload_with_old_signature_is_rejected() -> None:
    tokens = UnsubscribeTokens(SECRET)
    victim = tokens.issue("victim-id")
    mine = tokens.issue(UID)
    forged = victim.split(".")[0] + "." + mine.split(".")[1]
    with pytest.raises(InvalidUnsubscribeToken):
        tokens.read(forged)


def test_rotating_the_secret_invalidates_old_links() -> None:
    old = UnsubscribeTokens(SECRET).issue(UID)
    with pytest.raises(InvalidUnsubscribeToken):
        UnsubscribeTokens(SECRET + "-rotated").read(old)


def test_token_signed_for_another_purpose_is_rejected() -> None:
    other_purpose = _signer(salt="campaign-engine/something-else").dumps({"v": 2, "u": UID})
    with pytest.raises(InvalidUnsubscribeToken):
        UnsubscribeTokens(SECRET).read(other_purpose)


@pytest.mark.parametrize(
    "payload",
    [
        {"v": 1, "u": UID},  # legacy version
        {"v": 3, "u": UID},  # unknown version
        {"v": "2", "u": UID},
        {"v": 2.0, "u": UID},
        {"u": UID},
        {"v": 2},
        {"v": 2, "u": ""},
        {"v": 2, "u": 12345},
        {"v": 2, "u": UID, "e": "someone@example.com"},
        [2, UID],
        UID,
    ],
)
def test_validly_signed_but_wrong_payload_is_rejected(payload: object) -> None:
    with pytest.raises(InvalidUnsubscribeToken):
        UnsubscribeTokens(SECRET).read(_signer().dumps(payload))


@pytest.mark.parametrize("token", ["", "abc", "not.a.token", "." * 3, "x" * 600, "eyJ2IjoyfQ"])
def test_malformed_tokens_are_rejected(token: str) -> None:
    with pytest.raises(InvalidUnsubscribeToken):
        UnsubscribeTokens(SECRET).read(token)


def test_invalid_token_is_a_bad_request_without_details() -> None:
    with pytest.raises(InvalidUnsubscribeToken) as info:
        UnsubscribeTokens(SECRET).read("bogus")
    assert info.value.code == "BAD_REQUEST"
    assert "bogus" not in info.value.message


def test_from_settings_requires_a_real_secret() -> None:
    with pytest.raises(ConfigError, match="CAMPAIGN_UNSUBSCRIBE_SECRET"):
        UnsubscribeTokens.from_settings(Settings(_env_file=None, campaign_unsubscribe_secret="short"))
    tokens = UnsubscribeTokens.from_settings(Settings(_env_file=None, campaign_unsubscribe_secret=SECRET))
    assert UnsubscribeTokens(SECRET).read(tokens.issue(UID)) == UID


def test_rfc8058_headers() -> None:
    token = UnsubscribeTokens(SECRET).issue(UID)
    assert unsubscribe_url("mail.example.org", token) == (
        f"https://mail.example.org/campaigns/unsubscribe?token={token}"
    )
    assert list_unsubscribe_headers(unsubscribe_url("mail.example.org", token)) == {
        "List-Unsubscribe": f"<https://mail.example.org/campaigns/unsubscribe?token={token}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "en"),
        ("", "en"),
        ("de-DE,de;q=0.9", "en"),
        ("es", "es"),
        ("es-MX,es;q=0.9,en;q=0.8", "es"),
        ("fr-CA", "fr"),
        ("ar-EG,ar;q=0.9", "ar"),
        ("en;q=0.5, fr;q=0.9", "fr"),
        ("de, ar;q=0.2, es;q=0.3", "es"),
        ("fr;q=0, es;q=0.1", "es"),
        ("fr;q=0", "en"),
        ("*", "en"),
        ("fr;q=abc, es;q=0.4", "es"),
        ("fr;q=2, ar;q=0.4", "ar"),
        ("zh_TW, fr_FR;q=0.5", "fr"),
    ],
)
def test_language_choice_uses_q_values_and_falls_back_to_english(header: str | None, expected: str) -> None:
    assert choose_language(header) == expected


def test_a_link_names_the_tenant_whose_email_carried_it() -> None:
    tokens = UnsubscribeTokens(SECRET)
    link = tokens.read_link(tokens.issue(UID, "river"))
    assert (link.unsubscribe_id, link.tenant_id) == (UID, "river")
    assert _signer().loads(tokens.issue(UID, "river")) == {"v": 3, "u": UID, "t": "river"}
    assert tokens.read_link(tokens.issue(UID)).tenant_id is None  # version 2: deployment-wide
    for forged in ({"v": 2, "u": UID, "t": "river"}, {"v": 3, "u": UID}, {"v": 3, "u": UID, "t": ""}):
        with pytest.raises(InvalidUnsubscribeToken):
            tokens.read_link(_signer().dumps(forged))


def test_a_link_names_the_campaign_whose_email_carried_it() -> None:
    tokens = UnsubscribeTokens(SECRET)
    fair = LinkCampaign("river~fair", "2026-01-01T00:00:00.000000Z")
    token = tokens.issue_for_campaign(UID, "river", fair)
    assert tokens.read_link(token) == UnsubscribeLink(UID, "river", fair)
    # Signed plain with the constant head hashed once; itsdangerous reads the same object.
    assert _signer().loads(token) == {"v": 4, "t": "river", "c": "river~fair", "a": fair.created_at, "u": UID}
    assert tokens.issue_for_campaign("other", "river", fair) != token  # cached head, another recipient
    for forged in (
        {"v": 4, "u": UID, "t": "river"},
        {"v": 4, "u": UID, "t": "river", "c": "river~fair"},
        {"v": 3, "u": UID, "t": "river", "c": "river~fair", "a": fair.created_at},
        {"v": 4, "u": UID, "c": "river~fair", "a": fair.created_at},
        {"v": 4, "u": UID, "t": "river", "c": "", "a": fair.created_at},
    ):
        with pytest.raises(InvalidUnsubscribeToken):
            tokens.read_link(_signer().dumps(forged))


def test_a_link_too_long_to_name_its_campaign_names_only_its_tenant() -> None:
    tokens = UnsubscribeTokens(SECRET)
    long = LinkCampaign("c" * 128, "2026-01-01T00:00:00.000000Z")
    link = tokens.read_link(tokens.issue_for_campaign("u" * 128, "t" * 128, long))
    assert (link.tenant_id, link.campaign) == ("t" * 128, None)
