"""Control of the local Neo4j launcher in ``infra/neo4j`` (for machines without Docker).

``start`` builds the launcher with Maven when its jar is missing, runs it with a small explicit heap,
and waits for its readiness line plus a driver ``verify_connectivity``. The child keeps a pipe on its
stdin: when the parent dies the pipe closes and the launcher shuts down instead of orphaning the store.
A detached start (``campaign-engine neo4j start``) records the pid in ``<data>/launcher.pid``.

``CAMPAIGN_NEO4J_JVM_OPTIONS`` adds JVM options to every launcher a process (and its children) starts,
and ``CAMPAIGN_NEO4J_SETTINGS`` (``name=value`` pairs, space-separated) raw Neo4j settings. The test
suite sets ``-XX:TieredStopAtLevel=1``: its databases live for seconds to minutes, where the
optimising compiler's work costs more than it returns while many start at once; only each worker's
session database, which serves the whole run, compiles with C2 (``jvm_options``). It also sets
``dbms.cypher.min_replan_interval``: its graph is emptied before every test, and Neo4j's replanning on
moved statistics recompiled its statements all day (``tests/conftest.py``). Benchmarks and ``make
dev`` leave both unset.

The launcher runs on the newest JDK installed, or on ``CAMPAIGN_NEO4J_JAVA`` (``local_jdk.py``).

``build_class_archive`` writes a dynamic class-data-sharing archive of the launcher
(``neo4j-launcher.<JDK build>.jsa`` beside its jar, made by ``make``): a JVM mapping it skips loading and
verifying the classes a start and a first query load. Measured on two loaded cores, a start and stop
took 7.4 s of CPU and 18-31 s wall without it, 4.5 s and 6-7 s with it; the suite starts about twenty
Neo4j processes. An archive older than the jar is not mapped (``archive_current``), so a stale one
costs speed, never correctness.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import neo4j

from campaign_engine.graph.local_jdk import Jdk, find_jdk

__all__ = [
    "JVM_OPTIONS_VARIABLE",
    "SETTINGS_VARIABLE",
    "LocalNeo4j",
    "archive_current",
    "bolt_answers",
    "build_class_archive",
    "build_launcher",
    "class_archive",
    "launcher_jar",
    "repo_root",
]

JVM_OPTIONS_VARIABLE = "CAMPAIGN_NEO4J_JVM_OPTIONS"
SETTINGS_VARIABLE = "CAMPAIGN_NEO4J_SETTINGS"


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def launcher_jar() -> Path:
    return repo_root() / "infra" / "neo4j" / "target" / "neo4j-launcher.jar"


def class_archive(jdk: Jdk | None = None) -> Path:
    """The launcher's class archive for ``jdk`` (the one ``find_jdk`` picks): one per runtime build,
    so a newly installed JDK gets its own archive instead of a warning."""
    build = re.sub(r"[^A-Za-z0-9.+-]", "_", (jdk or find_jdk()).build)
    return launcher_jar().with_name(f"neo4j-launcher.{build}.jsa")


def archive_current(jdk: Jdk | None = None) -> bool:
    archive = class_archive(jdk)
    return archive.exists() and archive.stat().st_mtime >= launcher_jar().stat().st_mtime


def build_launcher() -> Path:
    jar = launcher_jar()
    if jar.exists():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("the local Neo4j launcher needs Maven (mvn) and a JDK 17 to build")
    subprocess.run(  # noqa: S603 - fixed argv, no shell
        [mvn, "-q", "-B", "package", "-DskipTests"], cwd=jar.parents[1], check=True
    )
    return jar


@dataclass
class LocalNeo4j:
    data_dir: Path
    port: int = 7687
    heap: str = "1g"
    pagecache: str = "256m"
    jvm_options: tuple[str, ...] = ()
    """This launcher's own JVM options, after the environment's: a later ``-XX`` flag wins."""
    more_ports: tuple[int, ...] = ()
    """Further databases in the same JVM, one per port (``uris``), stored under ``data_dir``; they
    share the heap, so size ``heap`` for all of them."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def uris(self) -> list[str]:
        return [f"bolt://127.0.0.1:{port}" for port in (self.port, *self.more_ports)]

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "launcher.pid"

    def start(
        self, *, timeout: float = 120.0, detached: bool = False, extra_options: tuple[str, ...] = ()
    ) -> None:
        jar = build_launcher()
        jdk = find_jdk()
        archive = class_archive(jdk)
        sharing = [f"-XX:SharedArchiveFile={archive}"] if archive_current(jdk) and not extra_options else []
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            str(jdk.java), *jdk.options(), f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC",
            *os.environ.get(JVM_OPTIONS_VARIABLE, "").split(), *self.jvm_options, *sharing, *extra_options,
            "-jar", str(jar), "--data", str(self.data_dir),
            "--port", ",".join(str(port) for port in (self.port, *self.more_ports)),
            "--pagecache", self.pagecache, "--watch-stdin", "false" if detached else "true",
            "--settings", os.environ.get(SETTINGS_VARIABLE, ""),
        ]  # fmt: skip
        log_path = self.data_dir / "launcher.log"
        offset = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                args,
                stdin=subprocess.DEVNULL if detached else subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=detached,
            )
        if detached:
            # A detached launcher must not die with us; stdin is /dev/null, so we stop it by pid.
            self.pid_file.write_text(str(self.process.pid))
        self._wait_ready(timeout, log_path, offset)

    def _wait_ready(self, timeout: float, log_path: Path, offset: int) -> None:
        """Ready = the launcher printed its readiness line (the database answered a query) and the
        driver connects."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Neo4j launcher exited early; see {log_path}")
            with log_path.open("rb") as log:
                log.seek(offset)
                announced = log.read().count(b"NEO4J READY") > len(self.more_ports)
            if announced and self.ready():
                return
            time.sleep(0.25)
        raise TimeoutError(f"Neo4j did not become ready on {self.uri} within {timeout:.0f}s")

    def ready(self) -> bool:
        return bolt_answers(self.uri)

    def stop(self, *, timeout: float = 60.0) -> None:
        pid = self._pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        else:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
        self.pid_file.unlink(missing_ok=True)
        self.process = None

    def kill(self, *, timeout: float = 30.0) -> None:
        """SIGKILL, no clean shutdown: what a crash or an OOM kill does (outage tests). The store
        recovers on the next ``start`` with the same ``data_dir``."""
        pid = self._pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=timeout)
            if self.process.stdin is not None:
                self.process.stdin.close()
        else:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)
        self.process = None

    def status(self) -> str:
        pid = self._pid()
        if pid is None or not _alive(pid):
            return "stopped"
        return f"running pid={pid} uri={self.uri} ready={self.ready()}"

    def _pid(self) -> int | None:
        if self.process is not None:
            return self.process.pid
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None


def bolt_answers(uri: str) -> bool:
    """One connectivity check of a launcher's database, by its URI (a worker knows only its own)."""
    try:
        with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
            driver.verify_connectivity()
    except (neo4j.exceptions.ServiceUnavailable, OSError):
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# What the archive run does after the start, so the archive also holds the classes of the Cypher a
# first request plans: an index, a batched write, an index seek, a subquery and an aggregation.
_WARM_UP = (
    "CREATE INDEX warm_up IF NOT EXISTS FOR (n:WarmUp) ON (n.key)",
    "UNWIND range(1, 100) AS i MERGE (n:WarmUp {key: i}) SET n.at = datetime()",
    "MATCH (n:WarmUp) WHERE n.key IN [1, 2] AND EXISTS { MATCH (n)--() } RETURN count(n)",
    "MATCH (n:WarmUp {key: 1}) CALL (n) { RETURN n.at AS at } RETURN collect(at)",
    "MATCH (n:WarmUp) DETACH DELETE n",
)


def build_class_archive(work_dir: Path, port: int) -> Path:
    """Write ``class_archive()`` from one start, a warm-up and a clean stop of a throwaway store in
    ``work_dir``; the file appears whole or not at all (processes that start meanwhile go without).
    An archive already made by this JDK from this jar is kept (``make`` asks on every run)."""
    jdk = find_jdk()
    archive = class_archive(jdk)
    if archive_current(jdk):
        return archive
    partial = archive.with_suffix(".jsa.partial")
    server = LocalNeo4j(data_dir=work_dir, port=port, heap="512m", pagecache="32m")
    server.start(timeout=300.0, extra_options=(f"-XX:ArchiveClassesAtExit={partial}",))
    try:
        with neo4j.GraphDatabase.driver(server.uri, auth=None) as driver:
            for query in _WARM_UP:
                driver.execute_query(query)
    finally:
        server.stop(timeout=120.0)
    partial.replace(archive)
    return archive
