"""Session fixtures shared by every test layer: one real Neo4j per test session, wiped per test.

``make test`` runs pytest-xdist workers, each its own session with its own database, queue files and
temporary folders under its own ``tmp_path_factory`` base; the databases live in one Neo4j JVM that the
controller starts (``pytest_configure``), a run without workers starts its own.

Neo4j comes from, in order: ``NEO4J_URI`` (+ ``NEO4J_USER``/``NEO4J_PASSWORD``) if set; a testcontainers
``neo4j:5.26-community`` when a Docker engine answers a ping; else the local launcher in ``infra/neo4j``.
If none can start, the tests that need the graph error out: a missing Neo4j is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.local_neo4j import (
    JVM_OPTIONS_VARIABLE,
    SETTINGS_VARIABLE,
    LocalNeo4j,
    bolt_answers,
    repo_root,
)
from campaign_engine.graph.schema import apply_schema
from campaign_engine.graph.webhook_outbox import subscribers_for
from tests.support.concurrency import wait_for
from tests.support.graph_tokens import create_tokens
from tests.support.tls import share_default_tls_context

TEST_JWT_SECRET = "test-jwt-secret-0123456789abcdef-0123456789"
TEST_SECRETS_KEY = "9wtul5TLI0PLslIFwCMngMc1E-C7aJASuP4YVKUeqtU="  # Fernet: seals receivers\' secrets
ADMIN_ID = "admin-1"

SESSION_JIT = ("-XX:TieredStopAtLevel=4",)  # the JVM's default, tiered up to C2, over the C1 above
share_default_tls_context()


UNGROUPED = pytest.StashKey[set[str]]()
POOL_VARIABLE = "CAMPAIGN_TEST_NEO4J_URIS"


def pytest_configure(config: pytest.Config) -> None:
    """Starts, in the xdist controller, one JVM holding a session database per worker (``gwK`` takes
    the K-th of ``CAMPAIGN_TEST_NEO4J_URIS``). Three JVMs compiled the same Neo4j three times: the JIT
    was half of their CPU. The start runs on a thread: workers spawn and collect meanwhile, and each
    waits for its own database in ``neo4j_uri``."""
    _launcher_defaults()
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not isinstance(workers, int) or workers < 2:
        return
    if os.environ.get("NEO4J_URI") or os.environ.get(POOL_VARIABLE) or _docker_answers():
        return
    data_dir = Path(tempfile.mkdtemp(prefix="campaign-session-neo4j-"))
    ports = [free_port() for _ in range(workers)]
    server = LocalNeo4j(
        data_dir=data_dir, port=ports[0], more_ports=tuple(ports[1:]), heap=f"{workers}g",
        pagecache="128m", jvm_options=SESSION_JIT,
    )  # fmt: skip
    os.environ[POOL_VARIABLE] = ",".join(server.uris)
    starting = threading.Thread(target=server.start, kwargs={"timeout": 300}, daemon=True)
    starting.start()

    def stop() -> None:
        starting.join()
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)

    config.add_cleanup(stop)


def _launcher_defaults() -> None:
    """The test run's Neo4j options, for every launcher it starts (its own, the dev stacks', the chaos
    run's), set when pytest configures, never on import: a bench that imports test support must start
    the Neo4j a deployment runs, not this one.

    Every such Neo4j spends most of its CPU compiling statements, not running them (db.stats QUERIES
    over 138 graph tests: 197 s compiling, 46 s executing). Compiled by C1 only, one that lives for
    seconds to minutes reaches its answers with less CPU (local_neo4j.py); a worker's session Neo4j
    serves the whole run, where C2's faster planner pays back its own compile (SESSION_JIT). Each test
    empties the graph, so every statistic swings between nothing and a few rows, and Neo4j's replanning
    (a cached plan 10 s old whose statistics moved by 75 %) compiled the same statements again and
    again: here a plan stays for the run."""
    os.environ.setdefault(JVM_OPTIONS_VARIABLE, "-XX:TieredStopAtLevel=1")
    os.environ.setdefault(SETTINGS_VARIABLE, "dbms.cypher.min_replan_interval=1h")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Notes the tests whose ``xdist_group`` a ``--dist loadgroup`` worker dropped. Modules share a
    folder, a browser or a dev stack through their group; run apart they race (two ``npm ci`` into one
    folder). pytest-xdist groups by appending ``@group`` to the node id, which pytest 9.2's structured
    ids ignore (pytest-xdist#1386): the grouping vanishes without a word, so each such test fails."""
    if config.getoption("loadgroup", False):  # set only in an xdist worker under --dist loadgroup
        marked = (i for i in items if i.get_closest_marker("xdist_group"))
        config.stash[UNGROUPED] = {i.nodeid for i in marked if "@" not in i.nodeid}


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.nodeid in item.config.stash.get(UNGROUPED, set()):
        pytest.fail(
            "--dist loadgroup ignored this test's xdist_group: this pytest and pytest-xdist do not "
            "group (pytest-xdist#1386); install the versions pyproject.toml allows",
            pytrace=False,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _docker_answers() -> bool:
    """A Docker engine answers ``GET /_ping`` on its socket (DOCKER_HOST over TCP is trusted as set)."""
    if os.environ.get("DOCKER_HOST", "").startswith("tcp://"):
        return True
    path = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(3)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            reply = sock.recv(64)
    except OSError:
        return False
    return reply.startswith(b"HTTP/1.") and b" 200 " in reply


def _neo4j_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's own Neo4j data folder. Each pytest-xdist worker is a session with its own Neo4j,
    so a folder named by ``CAMPAIGN_TEST_NEO4J_DIR`` gets one subfolder per worker (``gw0``, ``gw1``)."""
    chosen = os.environ.get("CAMPAIGN_TEST_NEO4J_DIR")
    if not chosen:
        return tmp_path_factory.mktemp("neo4j")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return Path(chosen) / worker if worker else Path(chosen)


def _pooled_uri() -> str | None:
    uris = os.environ.get(POOL_VARIABLE, "").split(",")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else len(uris)
    return uris[index] if index < len(uris) and uris[index] else None


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    pooled = _pooled_uri()
    if pooled is not None:
        wait_for(f"this worker's database at {pooled}", lambda: bolt_answers(pooled), timeout=300, every=0.25)
        yield pooled
        return
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26-community") as container:
            os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"] = "neo4j", container.password
            yield container.get_connection_url()
        return
    data_dir = _neo4j_dir(tmp_path_factory)
    server = LocalNeo4j(
        data_dir=data_dir, port=free_port(), heap="1g", pagecache="128m", jvm_options=SESSION_JIT
    )
    server.start(timeout=300)  # a JVM start on a loaded 2-core machine can outlast the 120 s default
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture(scope="session")
def base_settings(neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        campaign_local_queue_path=str(tmp_path_factory.mktemp("queue") / "queue.sqlite3"),
        neo4j_uri=neo4j_uri,
        neo4j_user=os.environ.get("NEO4J_USER", "neo4j"),
        neo4j_password=os.environ.get("NEO4J_PASSWORD", ""),
        auth_jwt_secret=TEST_JWT_SECRET,
        campaign_admin_profile_ids=ADMIN_ID,
        domain_name="campaigns.test",
        metrics_public=True,  # in-process apps serve /metrics; tests that need the token set one
        campaign_secrets_key=TEST_SECRETS_KEY,
        _env_file=None,
    )


@pytest.fixture(scope="session")
def session_graph(base_settings: Settings) -> Iterator[Graph]:
    # Seeds of thousands of rows run on workers sharing two cores: the worker's 60 s statement deadline
    # is a product bound, proved by test_statement_deadline.py on its own graph, not a bound on set-up.
    graph = open_graph(base_settings, tx_timeout=600)
    apply_schema(graph)
    create_tokens(graph)
    yield graph
    graph.close()


@pytest.fixture
def graph(session_graph: Graph) -> Graph:
    """The session's graph with every node and relationship removed before the test, and this process's
    view of its event-webhook endpoints forgotten: a test's endpoints, cached for seconds, and those it
    touched would otherwise queue events and kick relay jobs into the next test's queues."""
    session_graph.run("MATCH (n) DETACH DELETE n")
    view = subscribers_for(session_graph)
    view.invalidate()
    view.take_touched()
    return session_graph


@pytest.fixture(scope="session")
def project_root() -> Path:
    return repo_root()
