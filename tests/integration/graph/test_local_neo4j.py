"""The local launcher: readiness, JVM options and Neo4j settings from the environment, the newest JDK
without warnings, its class archive mapped, no orphan when the parent that started it dies, and
separate databases in one JVM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import neo4j
import pytest

from campaign_engine.graph.local_jdk import find_jdk
from campaign_engine.graph.local_neo4j import (
    JVM_OPTIONS_VARIABLE,
    SETTINGS_VARIABLE,
    LocalNeo4j,
    class_archive,
)
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
    # A JVM option and a setting of this test's own, beside the suite's (tests/conftest.py).
    env = {**os.environ, JVM_OPTIONS_VARIABLE: "-XX:+UseStringDeduplication"}
    env[SETTINGS_VARIABLE] = f"{os.environ[SETTINGS_VARIABLE]} db.transaction.timeout=17s"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path / "db"), str(port := free_port())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert parent.stdout is not None
        java_pid = int(parent.stdout.readline())
        assert _alive(java_pid)
        assert "NEO4J READY" in (tmp_path / "db" / "launcher.log").read_text()
        argv = Path(f"/proc/{java_pid}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:+UseStringDeduplication" in argv[: argv.index(b"-jar")]  # a JVM option, before the jar
        config = (tmp_path / "db" / "neo4j.conf").read_text().splitlines()
        assert {"dbms.cypher.min_replan_interval=1h", "db.transaction.timeout=17s"} <= set(config), config
        # The database runs with them, not only its file.
        with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=None) as driver:
            records, _, _ = driver.execute_query(
                "SHOW SETTINGS YIELD name, value WHERE name IN $names RETURN name, value",
                names=["dbms.cypher.min_replan_interval", "db.transaction.timeout"],
            )
        assert {r["name"]: r["value"] for r in records} == {
            "dbms.cypher.min_replan_interval": "1h",
            "db.transaction.timeout": "17s",
        }
        # It runs on the newest JDK installed, whose warnings about Neo4j's Unsafe and JNA use are
        # allowed away (local_jdk.py): the log holds what Neo4j says.
        assert Path(f"/proc/{java_pid}/exe").resolve() == find_jdk().java.resolve()
        log = (tmp_path / "db" / "launcher.log").read_text()
        assert "WARNING" not in log and "[warning]" not in log, log
        # make builds the class archive before the suite; a JVM that could not use it would map none.
        assert class_archive().exists(), "no class archive: make test builds it (make class-archive)"
        assert str(class_archive()) in Path(f"/proc/{java_pid}/maps").read_text(), (
            "the JVM ignored its archive"
        )

        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _alive(java_pid):
            time.sleep(0.2)
        assert not _alive(java_pid), "the launcher outlived its parent"
    finally:  # a failed check must not leave the launcher's parent (and its pipes) to a later test
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for stream in (parent.stdin, parent.stdout):
            if stream is not None:
                stream.close()


def test_one_launcher_serves_a_separate_database_on_each_of_its_ports(tmp_path: Path) -> None:
    """The suite's workers share one JVM (tests/conftest.py); a write by one must stay out of the
    others' graphs, and one stop ends them all."""
    server = LocalNeo4j(data_dir=tmp_path / "db", port=free_port(), more_ports=(free_port(),), heap="1g")
    server.start()
    try:
        first, second = server.uris
        with neo4j.GraphDatabase.driver(first, auth=None) as driver:
            driver.execute_query("CREATE (:Only {on: 'first'})")
        counts = []
        for uri in server.uris:
            with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
                records, _, _ = driver.execute_query("MATCH (n:Only) RETURN count(n) AS n")
                counts.append(records[0]["n"])
        assert counts == [1, 0]
    finally:
        server.stop()
    assert not server.ready()
    with (
        neo4j.GraphDatabase.driver(second, auth=None) as driver,
        pytest.raises(neo4j.exceptions.ServiceUnavailable),
    ):
        driver.verify_connectivity()
