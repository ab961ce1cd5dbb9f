"""The local launcher: readiness, the suite's JVM options, its class archive mapped, and no orphan when
the parent that started it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from campaign_engine.graph.local_neo4j import JVM_OPTIONS_VARIABLE, class_archive
from tests.conftest import free_port

_PARENT = """
import sys
from pathlib import Path
from campaign_engine.graph.local_neo4j import LocalNeo4j
server = LocalNeo4j(data_dir=Path(sys.argv[1]), port=int(sys.argv[2]), heap="512m", pagecache="32m")
server.start()
print(server.process.pid, flush=True)
sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; reading its state tells them apart.
    status = Path(f"/proc/{pid}/status").read_text()
    return "State:\tZ" not in status


def test_launcher_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path / "db"), str(free_port())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    java_pid = int(parent.stdout.readline())
    assert _alive(java_pid)
    assert "NEO4J READY" in (tmp_path / "db" / "launcher.log").read_text()
    argv = Path(f"/proc/{java_pid}/cmdline").read_bytes().split(b"\0")
    assert os.environ[JVM_OPTIONS_VARIABLE] == "-XX:TieredStopAtLevel=1"  # tests/conftest.py's
    assert b"-XX:TieredStopAtLevel=1" in argv[: argv.index(b"-jar")]  # a JVM option, before the jar
    # make builds the class archive before the suite; a JVM that could not use it would map none.
    assert class_archive().exists(), "no class archive: make test builds it (make infra/neo4j/target/...)"
    assert str(class_archive()) in Path(f"/proc/{java_pid}/maps").read_text(), "the JVM ignored its archive"

    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(java_pid):
        time.sleep(0.2)
    assert not _alive(java_pid), "the launcher outlived its parent"
    assert parent.stdin is not None
    parent.stdin.close()
    parent.stdout.close()
