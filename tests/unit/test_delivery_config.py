"""Start-up checks of the delivery settings: a public DOMAIN_NAME for email, `make dev`'s own secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from campaign_engine.config import ConfigError, Settings
from campaign_engine.dev_stack import dev_env

PLAIN_SECRET = "a-plain-shared-secret-0123456789"


def _email(domain_name: str | None = None, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "campaign_email_provider": "smtp",
        "campaign_unsubscribe_secret": SecretStr("u" * 40),
        "campaign_app_origins": {"default": "https://app.example.com"},
        "email_from": "news@example.com",
        **overrides,
    }
    if domain_name is not None:
        values["domain_name"] = domain_name
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_email_refuses_the_default_localhost_domain() -> None:
    assert Settings(_env_file=None).domain_name == "localhost"
    with pytest.raises(ConfigError, match="DOMAIN_NAME") as info:
        _email().require_email()
    assert "CAMPAIGN_LOCAL_DEVELOPMENT" in str(info.value)  # the message says how local runs opt out


@pytest.mark.parametrize(
    "domain",
    [
        "localhost:8000",
        "LOCALHOST",
        "api.localhost",
        "127.0.0.1:8000",
        "127.1",
        "10.0.0.5",
        "192.168.1.10:443",
        "169.254.169.254",
        "0.0.0.0",
        "intranet",
        "campaigns.local",
        "api.internal",
        "router.home.arpa",
    ],
)
def test_email_refuses_a_domain_nobody_else_can_reach(domain: str) -> None:
    with pytest.raises(ConfigError, match="DOMAIN_NAME"):
        _email(domain).require_email()
    _email(domain, campaign_local_development=True).require_email()  # `make dev`


@pytest.mark.parametrize("domain", ["campaigns.example.com", "campaigns.example.com:8443", "8.8.8.8"])
def test_email_accepts_a_public_domain(domain: str) -> None:
    _email(domain).require_email()


def test_without_email_the_domain_is_not_checked() -> None:
    Settings(_env_file=None, campaign_email_provider="none").require_email()


def test_make_dev_generates_a_standard_webhooks_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = dev_env(neo4j_uri="bolt://127.0.0.1:7687")
    settings = Settings(_env_file=path)
    assert settings.notifications_webhook_secret is not None
    assert settings.notifications_webhook_secret.get_secret_value().startswith("whsec_")
    settings.require_webhooks()
    assert settings.secret_box() is not None  # profiles' own webhooks can be given their secrets
    again = dev_env(neo4j_uri="bolt://127.0.0.1:7687")
    assert again.read_text() == path.read_text()  # generated once, then kept


def test_make_dev_replaces_a_plain_secret_left_by_an_older_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    old = tmp_path / ".local" / "dev.env"
    old.parent.mkdir()
    old.write_text(f"AUTH_JWT_SECRET={'j' * 48}\nNOTIFICATIONS_WEBHOOK_SECRET={PLAIN_SECRET}\n")
    with pytest.raises(ConfigError, match="NOTIFICATIONS_WEBHOOK_SECRET"):
        Settings(_env_file=old).require_webhooks()
    settings = Settings(_env_file=dev_env(neo4j_uri="bolt://127.0.0.1:7687"))
    settings.require_webhooks()
    assert settings.secret_box() is not None  # the key an older env file lacked is added
    assert settings.auth_jwt_secret is not None and settings.auth_jwt_secret.get_secret_value() == "j" * 48


def test_make_dev_records_where_its_neo4j_listens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command run beside ``make dev`` with ``CAMPAIGN_ENV_FILE=.local/dev.env`` reaches the Neo4j it
    started, on whatever port ``NEO4J_PORT`` chose this time, and the secrets stay as they were."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEO4J_URI", raising=False)
    first = dev_env(neo4j_uri="bolt://127.0.0.1:7687").read_text()
    assert Settings(_env_file=".local/dev.env").neo4j_uri == "bolt://127.0.0.1:7687"
    moved = dev_env(neo4j_uri="bolt://127.0.0.1:17687").read_text()
    assert Settings(_env_file=".local/dev.env").neo4j_uri == "bolt://127.0.0.1:17687"
    assert moved.count("NEO4J_URI=") == 1
    assert moved.replace("17687", "7687") == first  # only the address changed
