"""Our own processes in end-to-end tests: ``python -m campaign_engine.cli ...`` as a user starts them,
with an explicit environment, their output in files, and stopped by their own pid only (SIGTERM, then
SIGKILL), never by name, so a test never touches another test's processes or a developer's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from campaign_engine.config import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]

# Settings this process may carry that a child must not inherit: the child reads only what it is given.
_OWN_SETTINGS = (
    "CAMPAIGN_",
    "NOTIFICATIONS_",
    "NEO4J_",
    "AUTH_",
    "AWS_",
    "SMTP_",
    "EMAIL_",
    "POSTMARK_",
    "METRICS_",
)


def worker_env(settings: Settings, **named: str) -> dict[str, str]:
    """The environment of a ``campaign-engine worker`` on the test's graph, local queue, receiver and
    SMTP catcher, as ``settings`` names them, plus the test's own ``named`` settings (page sizes,
    delays, timeouts); nothing of this process's own settings leaks in."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_SETTINGS)}
    clean.pop("PROMETHEUS_MULTIPROC_DIR", None)
    secret = settings.notifications_webhook_secret
    unsubscribe = settings.campaign_unsubscribe_secret
    return {
        **clean,
        "NEO4J_URI": settings.neo4j_uri,
        "NEO4J_USER": settings.neo4j_user,
        "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(settings.campaign_local_queue_path),
        "NOTIFICATIONS_WEBHOOK_URL": str(settings.notifications_webhook_url),
        "NOTIFICATIONS_WEBHOOK_SECRET": secret.get_secret_value() if secret else "",
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_EMAIL_PROVIDER": "smtp",
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(settings.smtp_port),
        "EMAIL_FROM": settings.email_from,
        "DOMAIN_NAME": settings.domain_name,
        "CAMPAIGN_UNSUBSCRIBE_SECRET": unsubscribe.get_secret_value() if unsubscribe else "",
        "CAMPAIGN_APP_ORIGINS": json.dumps(settings.campaign_app_origins),
        "CAMPAIGN_WORKER_THREADS": "2",
        **named,
    }


class CliProcess:
    """One ``campaign-engine`` child: stdout and stderr into ``log``, or stderr apart when ``stderr``
    names its own file (the structured log on stderr, the command's output on stdout)."""

    def __init__(
        self, args: Sequence[str], env: Mapping[str, str], log: Path, *, stderr: Path | None = None
    ) -> None:
        self.log = log
        self.stderr = stderr
        self._files = [log.open("ab")] + ([stderr.open("ab")] if stderr is not None else [])
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "campaign_engine.cli", *args],
            env=dict(env),
            cwd=REPO_ROOT,
            stdout=self._files[0],
            stderr=self._files[1] if stderr is not None else subprocess.STDOUT,
        )

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill9(self) -> None:
        """A crash: SIGKILL, no clean shutdown."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self, *, timeout: float = 30) -> None:
        """SIGTERM (the process finishes the batch in hand), SIGKILL if it has not exited in ``timeout``."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        for file in self._files:
            file.close()
