"""Receivers' key rings (domain/webhook_keys.py): sealing, the settings key's own rotation, bad keys."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from campaign_engine.config import ConfigError, Settings
from campaign_engine.domain.webhook_keys import KeyRing, RingUnreadable, SecretBox, generate_secret


def test_a_sealed_ring_hides_its_secrets_and_opens_only_under_a_listed_key() -> None:
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    ring = KeyRing(generate_secret()).rotated(generate_secret(), now=100, overlap_seconds=50)
    sealed = SecretBox(old_key).seal(ring)
    assert ring.current not in sealed and ring.previous[0][0] not in sealed
    assert SecretBox(f"{new_key},{old_key}").open(sealed) == ring  # the settings key rotating: old opens
    with pytest.raises(RingUnreadable):
        SecretBox(new_key).open(sealed)  # the old key dropped too early: unreadable, never a guess
    assert ring.signing(149) == (ring.current, ring.previous[0][0]) and ring.signing(150) == (ring.current,)


def test_a_malformed_secrets_key_stops_the_process_without_quoting_it() -> None:
    bad = "not-a-fernet-key-but-a-secret-nonetheless"
    settings = Settings(_env_file=None, campaign_secrets_key=SecretStr(bad))
    with pytest.raises(ConfigError, match="CAMPAIGN_SECRETS_KEY") as info:
        settings.secret_box()
    assert bad not in str(info.value)
    assert Settings(_env_file=None).secret_box() is None  # unset: no receivers of their own
