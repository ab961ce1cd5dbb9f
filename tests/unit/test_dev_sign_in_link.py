"""`make dev`'s sign-in link lasts a working day: the console tab opened with it in the morning
still works in the evening, and the token in the link says so in its own ``exp``."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest

from campaign_engine.dev_stack import WORKING_DAY_SECONDS, _sign_in_link, dev_env


def test_the_sign_in_link_carries_a_token_valid_for_a_working_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    link = _sign_in_link(dev_env(neo4j_uri="bolt://127.0.0.1:7687"), host="0.0.0.0", port=8000)
    assert link.startswith("http://127.0.0.1:8000/admin#token=")
    claims = jwt.decode(link.split("#token=", 1)[1], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == WORKING_DAY_SECONDS
    assert 10 * 3600 <= WORKING_DAY_SECONDS <= 12 * 3600
