"""The admin console's stack and its one browser. Every module of this package is in one xdist group, so
the package runs on one worker and its browser tests share one Chromium (package scope) where each
module once started its own; each test isolates itself in its own browser contexts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
from playwright.sync_api import Browser
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.config import Settings
from campaign_engine.dev_stack import devidp_command, oidc_env
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, TEST_SECRETS_KEY, free_port
from tests.support.browser import chromium
from tests.support.concurrency import wait_for
from tests.support.delivery import WEBHOOK_SECRET, inbox_server
from tests.support.processes import REPO_ROOT, CliProcess
from tests.support.servers import serve_in_thread

UNSUBSCRIBE_SECRET = "admin-console-unsubscribe-secret-0123456789"
ORIGINS = {"default": "https://app.campaigns.test"}


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[tuple[str, Settings, Path]]:
    """API + inbox in threads, worker + SMTP catcher as processes; yields (api url, settings, mailbox)."""
    mailbox = tmp_path / "mail"
    smtp_port = free_port()
    queue_path = tmp_path / "queue.sqlite3"
    with inbox_server(tmp_path) as inbox:
        settings = base_settings.model_copy(
            update={
                "campaign_local_queue_path": str(queue_path),
                "notifications_webhook_url": f"{inbox.url}/api/notifications/send",
                "notifications_webhook_secret": SecretStr(WEBHOOK_SECRET),
                "campaign_allow_private_webhooks": True,
                "campaign_local_development": True,
                "campaign_email_provider": "smtp",
                "smtp_host": "127.0.0.1",
                "smtp_port": smtp_port,
                "email_from": "news@campaigns.test",
                "campaign_unsubscribe_secret": SecretStr(UNSUBSCRIBE_SECRET),
                "campaign_app_origins": ORIGINS,
                "campaign_dispatch_page_size": 5,  # 12 recipients: three pages per channel
                "campaign_dispatch_delay_seconds": 0,
                "campaign_experiment_min_per_variant": 2,  # a test wave of a few readers in the review
            }
        )
        keep = ("CAMPAIGN_", "NOTIFICATIONS_", "NEO4J_", "AUTH_", "AWS_", "SMTP_", "EMAIL_", "DOMAIN_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        env.update(
            {
                "NEO4J_URI": settings.neo4j_uri,
                "NEO4J_USER": settings.neo4j_user,
                "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
                "CAMPAIGN_QUEUE_BACKEND": "local",
                "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
                "NOTIFICATIONS_WEBHOOK_URL": f"{inbox.url}/api/notifications/send",
                "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
                "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
                "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
                "CAMPAIGN_EMAIL_PROVIDER": "smtp",
                "SMTP_HOST": "127.0.0.1",
                "SMTP_PORT": str(smtp_port),
                "EMAIL_FROM": "news@campaigns.test",
                "DOMAIN_NAME": settings.domain_name,
                "CAMPAIGN_UNSUBSCRIBE_SECRET": UNSUBSCRIBE_SECRET,
                "CAMPAIGN_APP_ORIGINS": json.dumps(ORIGINS),
                "CAMPAIGN_DISPATCH_PAGE_SIZE": "5",
                "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
                "CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT": "2",
                "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "5",
                "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
                "CAMPAIGN_WORKER_THREADS": "2",
                "CAMPAIGN_SECRETS_KEY": TEST_SECRETS_KEY,  # the relay signs event webhooks with it
            }
        )
        children = [
            CliProcess(
                ["smtp-catcher", "--port", str(smtp_port), "--mailbox", str(mailbox)],
                env,
                tmp_path / "smtp.log",
            ),
            CliProcess(["worker"], env, tmp_path / "worker.log"),
        ]
        try:
            with serve_in_thread(create_app(settings, graph=graph)) as url:
                yield url, settings, mailbox
        finally:
            for child in children:
                child.stop()


class Idp(NamedTuple):
    issuer: str
    api_port: int  # the port the console it redirects to is served on (oidc_stack)
    log: Path


# The provider's access tokens last this long, so every journey on it also lives through silent renewals.
IDP_TOKEN_SECONDS = 40


@pytest.fixture(scope="package")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Idp]:
    """make dev's OpenID provider (devidp/, node-oidc-provider), started as make dev starts it, once for
    the package: its client's redirect URIs name one API port, which oidc_stack serves on."""
    api_port, port = free_port(), free_port()
    log = tmp_path_factory.mktemp("idp") / "idp.log"
    command = devidp_command(
        port=port, api_origins=[f"http://127.0.0.1:{api_port}"], admins=ADMIN_ID, token_ttl=IDP_TOKEN_SECONDS
    )
    issuer = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def answers() -> bool:
        assert process.poll() is None, log.read_text()
        try:
            return httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for("the OpenID provider to answer", answers, timeout=60, every=0.1)
        yield Idp(issuer, api_port, log)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def oidc_stack(base_settings: Settings, graph: Graph, idp: Idp) -> Iterator[tuple[str, Settings]]:
    """The API as make dev configures it beside its provider (no worker: signing in sends nothing)."""
    provider = {name.lower(): value for name, value in oidc_env(idp.issuer).items()}
    settings = base_settings.model_copy(
        update={**provider, "campaign_local_development": True, "campaign_app_origins": ORIGINS}
    )
    with serve_in_thread(create_app(settings, graph=graph), port=idp.api_port) as url:
        yield url, settings
