"""A one-shot command facing a Neo4j that is not there says so within 10 s and exits non-zero, naming
the address it tried: it never hangs silently (the long-running processes wait instead)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on return: nothing listens there


@pytest.mark.parametrize(
    "command",
    [
        ["profiles", "import", "{file}"],
        ["profiles", "import", "{file}", "--tenant", "acme"],
        ["roster", "import", "--format", "oneroster", "{file}"],
        ["migrate"],
        ["sweep"],
    ],
)
def test_a_command_says_it_cannot_reach_neo4j_within_ten_seconds(tmp_path: Path, command: list[str]) -> None:
    rows = tmp_path / "people.csv"
    rows.write_text("profileId,email\np1,p1@example.com\n", encoding="utf-8")
    uri = f"bolt://127.0.0.1:{_closed_port()}"
    env = {"PATH": "/usr/bin:/bin", "NEO4J_URI": uri, "NEO4J_PASSWORD": "s3cret-pass", "LOG_LEVEL": "ERROR"}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "campaign_engine.cli", *[part.format(file=rows) for part in command]],
        env=env, capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert run.returncode == 3, run.stderr
    assert elapsed < 10, elapsed
    assert f"cannot reach Neo4j at {uri}" in run.stderr
    assert "s3cret-pass" not in run.stderr + run.stdout
