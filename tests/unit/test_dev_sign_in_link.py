"""`make dev`'s sign-in link lasts a working day: the console tab opened with it in the morning
still works in the evening, and the token in the link says so in its own ``exp``."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest

from campaign_engine.config import Settings
from campaign_engine.dev_stack import WORKING_DAY_SECONDS, _sign_in_link, dev_env, oidc_env


def test_the_sign_in_link_carries_a_token_valid_for_a_working_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    link = _sign_in_link(dev_env(neo4j_uri="bolt://127.0.0.1:7687"), host="0.0.0.0", port=8000)
    assert link.startswith("http://127.0.0.1:8000/admin#token=")
    claims = jwt.decode(link.split("#token=", 1)[1], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == WORKING_DAY_SECONDS
    assert 10 * 3600 <= WORKING_DAY_SECONDS <= 12 * 3600


def test_the_env_file_names_the_provider_and_the_link_and_token_command_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make dev's env file carries its OpenID provider's settings, rewritten each start (the port may
    move), and everything that reads it alone (the link, `campaign-engine token`) still starts."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CAMPAIGN_LOCAL_DEVELOPMENT", raising=False)
    dev_env(neo4j_uri="bolt://127.0.0.1:7687", extra=oidc_env("http://127.0.0.1:9400"))
    env_file = dev_env(neo4j_uri="bolt://127.0.0.1:7687", extra=oidc_env("http://127.0.0.1:9401"))
    lines = env_file.read_text().splitlines()
    assert [line for line in lines if line.startswith("AUTH_OIDC_ISSUER=")] == [
        "AUTH_OIDC_ISSUER=http://127.0.0.1:9401"
    ]
    settings = Settings(_env_file=env_file)
    settings.require_api()  # a plain-http key set: local development, said in the file itself
    assert settings.auth_jwks_url == "http://127.0.0.1:9401/jwks"
    link = _sign_in_link(env_file, host="127.0.0.1", port=8000)
    claims = jwt.decode(link.split("#token=", 1)[1], options={"verify_signature": False})
    assert claims["aud"] == settings.auth_jwt_audience  # accepted beside the provider's tokens
