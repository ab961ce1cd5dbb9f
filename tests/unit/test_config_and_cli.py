"""Start-up checks name the variable; the token command mints what the API accepts."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, TokenVerifier
from campaign_engine.cli import main
from campaign_engine.config import ConfigError, Settings
from campaign_engine.wiring import start_worker_metrics

GOOD = "x" * 40
JWKS_CLAIMS = {"auth_jwt_audience": "campaign-engine", "auth_jwt_issuer": "https://id.example.org/"}


def test_api_needs_a_real_jwt_secret() -> None:
    for secret in [None, "", "changeme", "short"]:
        with pytest.raises(ConfigError, match="AUTH_JWT_SECRET"):
            Settings(auth_jwt_secret=secret, _env_file=None).require_api()
    Settings(auth_jwt_secret=GOOD, _env_file=None).require_api()
    Settings(auth_jwks_url="https://id.example.org/jwks.json", **JWKS_CLAIMS, _env_file=None).require_api()


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"auth_jwt_issuer": "https://id.example.org/"}, "AUTH_JWT_AUDIENCE and AUTH_JWT_ISSUER"),
        ({"auth_jwt_audience": "campaign-engine"}, "AUTH_JWT_AUDIENCE and AUTH_JWT_ISSUER"),
        ({"auth_jwt_audience": " ", "auth_jwt_issuer": "https://id.example.org/"}, "AUTH_JWT_AUDIENCE"),
        ({**JWKS_CLAIMS, "auth_jwks_url": "http://id.example.org/jwks.json"}, "must be an https"),
        ({**JWKS_CLAIMS, "auth_jwks_url": "https:///jwks.json"}, "must be an https"),
        ({**JWKS_CLAIMS, "auth_jwks_url": "file:///etc/jwks.json"}, "must be an https"),
    ],
)
def test_jwks_mode_needs_audience_issuer_and_an_https_key_set(settings: dict[str, str], refused: str) -> None:
    """Any token the identity provider issues for any of its applications verifies against its key set,
    so only the audience and issuer make it ours; and whoever can alter the key set can sign."""
    values = {"auth_jwks_url": "https://id.example.org/jwks.json", **settings}
    with pytest.raises(ConfigError, match=refused):
        Settings(**values, _env_file=None).require_api()  # type: ignore[arg-type]


def test_a_plain_http_key_set_only_in_local_development() -> None:
    values = {**JWKS_CLAIMS, "auth_jwks_url": "http://127.0.0.1:8080/jwks.json"}
    Settings(**values, campaign_local_development=True, _env_file=None).require_api()  # type: ignore[arg-type]


def test_the_console_provider_needs_its_client_and_a_key_set_the_api_verifies_with() -> None:
    jwks = {**JWKS_CLAIMS, "auth_jwks_url": "https://id.example.org/jwks.json"}
    oidc = {"auth_oidc_issuer": "https://id.example.org/", "auth_oidc_client_id": "console"}
    Settings(**jwks, **oidc, _env_file=None).require_api()  # type: ignore[arg-type]
    for values, refused in [
        ({**jwks, "auth_oidc_issuer": "https://id.example.org/"}, "AUTH_OIDC_CLIENT_ID"),
        ({**jwks, "auth_oidc_client_id": "console"}, "AUTH_OIDC_ISSUER"),
        ({**oidc, "auth_jwt_secret": GOOD}, "AUTH_JWKS_URL"),  # tokens the API could not verify
        ({**jwks, **oidc, "auth_oidc_issuer": "http://id.example.org/"}, "AUTH_OIDC_ISSUER must be an https"),
        ({**jwks, "auth_jwt_secret": "short"}, "AUTH_JWT_SECRET"),  # beside a key set, still a real one
    ]:
        with pytest.raises(ConfigError, match=refused):
            Settings(**values, _env_file=None).require_api()  # type: ignore[arg-type]


def test_unsubscribe_secret_is_checked() -> None:
    with pytest.raises(ConfigError, match="CAMPAIGN_UNSUBSCRIBE_SECRET"):
        Settings(campaign_unsubscribe_secret="too-short", _env_file=None).require_unsubscribe()


def test_a_multiprocess_directory_only_in_settings_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Named only in an env file, prometheus_client would not be in multiprocess mode and /metrics would
    sum files nobody writes: the API and the worker refuse to start instead."""
    directory = tmp_path / "prometheus"
    settings = Settings(
        auth_jwt_secret=GOOD, prometheus_multiproc_dir=str(directory), metrics_public=True, _env_file=None
    )
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with pytest.raises(ConfigError, match="PROMETHEUS_MULTIPROC_DIR must be set in the process environment"):
        settings.require_metrics()
    with pytest.raises(ConfigError, match="PROMETHEUS_MULTIPROC_DIR"):
        create_app(settings)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    with pytest.raises(ConfigError, match="existing"):
        settings.require_metrics()
    directory.mkdir()
    settings.require_metrics()
    Settings(metrics_public=True, _env_file=None).require_metrics()  # unset: single-process mode


def test_metrics_are_closed_without_a_token_outside_local_development(tmp_path: Path) -> None:
    """/metrics (queue depths, counters) must not be open by accident: without METRICS_BEARER_TOKEN the
    API and the metrics-serving worker refuse to start unless METRICS_PUBLIC or local development."""
    closed = Settings(auth_jwt_secret=GOOD, _env_file=None)
    with pytest.raises(ConfigError, match="METRICS_BEARER_TOKEN must be set"):
        closed.require_metrics()
    with pytest.raises(ConfigError, match="METRICS_BEARER_TOKEN"):
        create_app(closed)
    with pytest.raises(ConfigError, match="METRICS_BEARER_TOKEN"):
        Settings(metrics_bearer_token="changeme", _env_file=None).require_metrics()
    with pytest.raises(ConfigError, match="METRICS_BEARER_TOKEN"):
        start_worker_metrics(closed.model_copy(update={"metrics_port": 9}), None, None)  # type: ignore[arg-type]
    Settings(metrics_bearer_token="scrape-token-0123456789", _env_file=None).require_metrics()
    Settings(metrics_public=True, _env_file=None).require_metrics()
    Settings(campaign_local_development=True, _env_file=None).require_metrics()  # make dev


def test_json_maps_are_validated_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="JSON object"):
        Settings(campaign_app_origins="[1]", _env_file=None)
    assert Settings(campaign_app_origins="", _env_file=None).campaign_app_origins == {}
    monkeypatch.setenv("CAMPAIGN_APP_ORIGINS", '{"a": "https://a.test"}')
    monkeypatch.setenv("CAMPAIGN_TENANTS", '{"a": {"name": "A"}}')
    settings = Settings(_env_file=None)
    assert settings.campaign_app_origins == {"a": "https://a.test"}
    assert settings.campaign_tenants == {"a": {"name": "A"}}
    monkeypatch.setenv("CAMPAIGN_TENANTS", "{not json")
    with pytest.raises(ValueError, match=r"(?i)campaign_tenants"):
        Settings(_env_file=None)


def test_admin_allowlist_is_comma_separated() -> None:
    settings = Settings(campaign_admin_profile_ids=" a, b ,,c", _env_file=None)
    assert settings.admin_profile_ids == frozenset({"a", "b", "c"})


def test_token_command_mints_an_admin_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTH_JWT_SECRET", GOOD)
    monkeypatch.setenv("CAMPAIGN_ADMIN_PROFILE_IDS", "boss")
    assert main(["token", "--profile-id", "boss", "--scope", ADMIN_SCOPE, "--ttl", "60"]) == 0
    token = capsys.readouterr().out.strip()
    caller = TokenVerifier(Settings(_env_file=None)).verify(f"Bearer {token}")
    assert caller is not None
    assert (caller.profile_id, caller.is_admin) == ("boss", True)
    assert (
        jwt.decode(token, GOOD, algorithms=["HS256"])["exp"]
        - jwt.decode(token, GOOD, algorithms=["HS256"])["iat"]
        == 60
    )


def test_missing_secret_is_a_clear_cli_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AUTH_JWT_SECRET", raising=False)
    monkeypatch.delenv("CAMPAIGN_ENV_FILE", raising=False)
    assert main(["token", "--profile-id", "x"]) == 2
    assert "AUTH_JWT_SECRET" in capsys.readouterr().err


def test_unparseable_setting_is_a_clear_cli_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTH_JWT_SECRET", GOOD)
    monkeypatch.setenv("CAMPAIGN_APP_ORIGINS", "[1]")
    assert main(["token", "--profile-id", "x"]) == 2
    assert "CAMPAIGN_APP_ORIGINS" in capsys.readouterr().err


def test_settings_page_documents_every_setting(project_root: Path) -> None:
    page = (project_root / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = [name.upper() for name in Settings.model_fields if f"| `{name.upper()}` |" not in page]
    assert missing == [], f"add these to the table of docs/settings.md: {missing}"
