"""``campaign-engine dev`` (``make dev``): the whole product on one machine, as child processes.

Local Neo4j (the embedded launcher), the reference inbox, the SMTP catcher, the worker and the API,
wired to each other on loopback with secrets generated once under ``.local/``. The subcommands
themselves live in ``cli.py``; this module only orchestrates them.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from campaign_engine.api.dev_subjects import SUBJECTS_PATH
from campaign_engine.config import Settings
from campaign_engine.did.engine import new_seed

__all__ = [
    "DEVIDP_CLIENT_ID",
    "child_env",
    "dev_env",
    "devidp_command",
    "new_env_file",
    "oidc_env",
    "run_dev",
]

_LOCAL = Path(".local")
_DEVIDP = Path(__file__).resolve().parent.parent / "devidp" / "provider.mjs"
DEVIDP_CLIENT_ID = "console"
_DEVIDP_AUDIENCE = "urn:campaign-engine:api"  # the resource the provider's access tokens are for

# The sign-in link and the printed token command last a working day: a console tab opened in the
# morning keeps working until the evening, and warns before it ends rather than falling to the sign-in page.
WORKING_DAY_SECONDS = 12 * 3600

_WEBHOOK_KEY = "NOTIFICATIONS_WEBHOOK_SECRET="
_SECRETS_KEY = "CAMPAIGN_SECRETS_KEY="
_DID_KEY = "CAMPAIGN_DID_KEY="  # the engine's DID key: LearnCard's format signs with it


def _secrets_key_line() -> str:
    """A Fernet key (url-safe base64 of 32 random bytes) sealing the receivers' own secrets."""
    return _SECRETS_KEY + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def _webhook_secret_line() -> str:
    """A Standard Webhooks secret: ``whsec_`` + base64 of 32 random bytes."""
    return _WEBHOOK_KEY + "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_env_file(path: Path) -> Path:
    """Fresh local secrets at ``path`` (mode 600): what ``make dev`` keeps under ``.local/`` and what
    ``bench.chaos`` writes into its own temporary folder."""
    path.write_text(
        "\n".join(
            [
                f"AUTH_JWT_SECRET={secrets.token_urlsafe(48)}",
                _webhook_secret_line(),
                _secrets_key_line(),
                _DID_KEY + new_seed(),
                f"CAMPAIGN_UNSUBSCRIBE_SECRET={secrets.token_urlsafe(48)}",
                "CAMPAIGN_ADMIN_PROFILE_IDS=admin",
                "",
            ]
        )
    )
    path.chmod(0o600)
    return path


def dev_env(*, neo4j_uri: str, local: Path = _LOCAL, extra: dict[str, str] | None = None) -> Path:
    """Local secrets for ``make dev``, generated once and kept under ``.local/``, with the address of the
    Neo4j it starts (``NEO4J_URI``), so a command run beside it with ``CAMPAIGN_ENV_FILE=.local/dev.env``
    reaches that graph. A plain webhook secret left by an older ``make dev`` is replaced (the worker and
    inbox refuse it at start), a missing ``CAMPAIGN_SECRETS_KEY`` (profiles' own webhooks need it) or
    ``CAMPAIGN_DID_KEY`` (LearnCard's format signs with it) added. ``extra`` (the OpenID provider's
    settings) is written anew each start, like NEO4J_URI."""
    path = local / "dev.env"
    if not path.exists():
        local.mkdir(exist_ok=True)
        new_env_file(path)
    lines = path.read_text().splitlines()
    kept = [
        _webhook_secret_line()
        if line.startswith(_WEBHOOK_KEY) and not line.removeprefix(_WEBHOOK_KEY).startswith("whsec_")
        else line
        for line in lines
    ]
    if not any(line.startswith(_SECRETS_KEY) for line in kept):  # an env file of an older make dev
        kept.append(_secrets_key_line())
    if not any(line.startswith(_DID_KEY) for line in kept):
        kept.append(_DID_KEY + new_seed())
    fresh = {"NEO4J_URI": neo4j_uri, **(extra or {})}
    kept = [line for line in kept if line.partition("=")[0] not in fresh] + [
        f"{k}={v}" for k, v in fresh.items()
    ]
    if kept != lines:
        path.write_text("\n".join([*kept, ""]))
    return path


def child_env(
    env_file: Path,
    *,
    local: Path,
    port: int,
    inbox_url: str,
    smtp_port: int,
    neo4j_uri: str,
    metrics_port: int,
) -> dict[str, str]:
    """The environment of every child of ``make dev`` (inbox, catcher, worker, API): this process's own
    plus the wiring between them on loopback. ``bench.chaos`` builds the same on free ports, with the
    inbox and the SMTP relay behind its fault-injecting fronts."""
    return {
        # Passed through as set, among the rest: POSTMARK_WEBHOOK_USERNAME / POSTMARK_WEBHOOK_PASSWORD
        # (POST /webhooks/postmark answers 404 without them) and SES_FEEDBACK_TOPIC_ARNS.
        **os.environ,
        "CAMPAIGN_ENV_FILE": str(env_file),
        "NEO4J_URI": neo4j_uri,
        "NOTIFICATIONS_WEBHOOK_URL": f"{inbox_url}/api/notifications/send",
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        # How every process knows this is local development: email may link to the loopback DOMAIN_NAME.
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(local / "queue.sqlite3"),
        # Email goes to the local SMTP catcher; each message lands in .local/mail as an .eml file.
        "CAMPAIGN_EMAIL_PROVIDER": "smtp",
        # Each process serves its own /metrics (the API on its port, the worker here): two scrape
        # targets, no shared multiprocess directory that would report every counter twice.
        "METRICS_PORT": str(metrics_port),
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(smtp_port),
        "DOMAIN_NAME": os.environ.get("DOMAIN_NAME", f"127.0.0.1:{port}"),
        "CAMPAIGN_APP_ORIGINS": os.environ.get(
            "CAMPAIGN_APP_ORIGINS", json.dumps({"default": f"http://127.0.0.1:{port}"})
        ),
    }


def oidc_env(issuer: str) -> dict[str, str]:
    """The API's settings for make dev's OpenID provider at ``issuer``: the console signs in there and
    the API verifies its tokens by its key set, beside the HS256 secret (the pasted-token fallback)."""
    return {
        # In the env file, not only the children's environment: the sign-in link and the token command
        # read it too, and the provider's plain-http key set is accepted in local development only.
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",
        "AUTH_OIDC_ISSUER": issuer,
        "AUTH_OIDC_CLIENT_ID": DEVIDP_CLIENT_ID,
        "AUTH_JWKS_URL": f"{issuer}/jwks",
        "AUTH_JWT_ISSUER": issuer,
        "AUTH_JWT_AUDIENCE": _DEVIDP_AUDIENCE,
    }


def devidp_command(*, port: int, api_origins: list[str], admins: str, token_ttl: int = 3600) -> list[str]:
    """make dev's OpenID provider (``devidp/``: node-oidc-provider, OpenID Certified) on loopback
    ``port``, for the console served at each of ``api_origins``; tests start it the same way."""
    redirects = [f"{origin}/admin{tail}" for origin in api_origins for tail in ("", "/oidc-silent")]
    return [
        "node", str(_DEVIDP), "--port", str(port), "--client-id", DEVIDP_CLIENT_ID,
        "--audience", _DEVIDP_AUDIENCE, "--admins", admins, "--access-token-ttl", str(token_ttl),
        # who it may sign in, read from the API on each sign-in (api/dev_subjects.py)
        "--subjects-url", f"{api_origins[0]}{SUBJECTS_PATH}",
        *(arg for uri in redirects for arg in ("--redirect-uri", uri)),
    ]  # fmt: skip


def _sign_in_link(env_file: Path, *, host: str, port: int) -> str:
    """The console URL for the local admin, valid for ``WORKING_DAY_SECONDS``; the token rides in the
    fragment, which browsers never send to a server or put in a Referer, and the console clears it from
    the address bar once read."""
    from campaign_engine.api.auth import ADMIN_SCOPE, mint_token

    token = mint_token(
        Settings(_env_file=env_file), profile_id="admin", scope=ADMIN_SCOPE, ttl_seconds=WORKING_DAY_SECONDS
    )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{shown}:{port}/admin#token={token}"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_dev(*, host: str, port: int) -> int:
    """Everything on one machine: local Neo4j, reference inbox, worker and API on ``host:port``.
    Ctrl-C stops it all."""
    from campaign_engine.graph.local_neo4j import LocalNeo4j
    from campaign_engine.observability.logs import configure_logging

    inbox_port = int(os.environ.get("INBOX_PORT", "8025"))
    smtp_port = int(os.environ.get("SMTP_CATCHER_PORT", "1025"))
    neo4j_port = int(os.environ.get("NEO4J_PORT", "7687"))
    idp_port = int(os.environ.get("OIDC_PORT", "9400"))
    issuer = f"http://127.0.0.1:{idp_port}"
    neo4j_uri = f"bolt://127.0.0.1:{neo4j_port}"
    env_file = dev_env(neo4j_uri=neo4j_uri, extra=oidc_env(issuer))
    # Each child configures its own logging the same way (JSON lines unless LOG_FORMAT says otherwise).
    configure_logging(Settings(_env_file=env_file))
    env = child_env(
        env_file,
        local=_LOCAL,
        port=port,
        inbox_url=f"http://127.0.0.1:{inbox_port}",
        smtp_port=smtp_port,
        neo4j_uri=neo4j_uri,
        metrics_port=int(os.environ.get("METRICS_PORT", "9464")),
    )
    # Ctrl-C, a closed terminal or a plain `kill` all stop everything we started: installed
    # explicitly because a shell that starts us in the background hands us SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    hours = WORKING_DAY_SECONDS // 3600
    neo4j = LocalNeo4j(data_dir=_LOCAL / "neo4j", port=neo4j_port, heap="1g", pagecache="256m")
    print(f"starting Neo4j on {neo4j.uri} ...", flush=True)
    neo4j.start()
    exe = [sys.executable, "-m", "campaign_engine.cli"]
    children: list[subprocess.Popen[bytes]] = []
    try:
        children.append(
            subprocess.Popen(  # noqa: S603 - our own entry point
                [*exe, "inbox", "--port", str(inbox_port), "--db", str(_LOCAL / "inbox.sqlite3")], env=env
            )
        )
        children.append(
            subprocess.Popen(  # noqa: S603 - our own entry point
                [*exe, "smtp-catcher", "--port", str(smtp_port), "--mailbox", str(_LOCAL / "mail")], env=env
            )
        )
        children.append(subprocess.Popen([*exe, "worker"], env=env))  # noqa: S603
        origins = [f"http://{name}:{port}" for name in ("127.0.0.1", "localhost")]
        admins = Settings(_env_file=env_file).campaign_admin_profile_ids
        idp = devidp_command(port=idp_port, api_origins=origins, admins=admins)
        children.append(subprocess.Popen(idp, env=env))  # noqa: S603 - our own provider script
        print(
            "\ncampaign-engine is starting on "
            f"http://{host}:{port}  (reference inbox on http://127.0.0.1:{inbox_port}; "
            f"email is caught in {_LOCAL / 'mail'}; metrics at http://{host}:{port}/metrics"
            f" and http://127.0.0.1:{env['METRICS_PORT']}/metrics)\n"
            f"Sign in to the console at http://127.0.0.1:{port}/admin with the local OpenID provider"
            f" ({issuer}): as 'admin', or as anyone granted a role. Or paste a token.\n"
            f"Mint an admin token valid for {hours} hours (the console asks for a new one when it ends):\n"
            f"  CAMPAIGN_ENV_FILE={env_file} .venv/bin/campaign-engine token "
            f"--profile-id admin --scope campaigns:admin --ttl {WORKING_DAY_SECONDS}\n",
            flush=True,
        )
        link = _sign_in_link(env_file, host=host, port=port)
        until = time.strftime("%H:%M %Z", time.localtime(time.time() + WORKING_DAY_SECONDS))
        print(
            f"Admin console, signed in as 'admin' for {hours} hours (until {until}; the console warns"
            f" before then and takes a new token or link without losing your edits):\n  {link}\n",
            flush=True,
        )
        api = subprocess.Popen([*exe, "serve", "--host", host, "--port", str(port)], env=env)  # noqa: S603
        children.append(api)
        api.wait()
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        neo4j.stop()
    return 0
