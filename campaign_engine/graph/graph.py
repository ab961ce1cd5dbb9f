"""The ``Graph`` handle: one driver, one database, managed transactions.

Use cases pass a transaction function to ``read`` or ``write``. The driver retries the whole function on
transient errors (deadlocks, leader switches), so a transaction function must be safe to re-run: it
may only touch the graph, never a queue, a socket or a clock read that must not change.
Driver errors that mean "the graph is unreachable" become ``ServiceUnavailable``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

import neo4j
from neo4j import exceptions as neo4j_errors

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable

__all__ = ["Graph", "Statements", "Tx", "open_graph"]

P = ParamSpec("P")
R = TypeVar("R")
Tx = neo4j.ManagedTransaction
Statements = neo4j.ManagedTransaction | neo4j.Session  # what a read helper may run its statements on


@contextmanager
def _unreachable_as_service_error() -> Iterator[None]:
    try:
        yield
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
        raise ServiceUnavailable("the graph database is unavailable") from exc


class Graph:
    def __init__(self, driver: neo4j.Driver, *, database: str) -> None:
        self.driver = driver
        self.database = database

    def read(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        with _unreachable_as_service_error(), self.driver.session(database=self.database) as session:
            return session.execute_read(fn, *args, **kwargs)

    def write(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        with _unreachable_as_service_error(), self.driver.session(database=self.database) as session:
            return session.execute_write(fn, *args, **kwargs)

    @contextmanager
    def autocommit_reads(self) -> Iterator[neo4j.Session]:
        """A read session whose ``run`` is one auto-commit statement: one round trip, no BEGIN/COMMIT,
        about a third less driver CPU than ``read``. For hot batched reads that need neither several
        statements in one snapshot nor the managed retry: a transient error is ``ServiceUnavailable``
        (HTTP 503, "ask again") instead of a retry."""
        try:
            with (
                _unreachable_as_service_error(),
                self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session,
            ):
                yield session
        except neo4j_errors.TransientError as exc:
            raise ServiceUnavailable("the graph database is busy; try again") from exc

    def run(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        """One auto-managed write query returning plain dicts (admin tasks, tests, benchmarks)."""
        with _unreachable_as_service_error():
            records, _, _ = self.driver.execute_query(cypher, params, database_=self.database)
        return [record.data() for record in records]

    def close(self) -> None:
        self.driver.close()


def open_graph(settings: Settings) -> Graph:
    auth = None
    password = settings.neo4j_password.get_secret_value()
    if password:
        auth = (settings.neo4j_user, password)
    # Server notifications are advice (e.g. "property does not exist" for optional properties that
    # our queries read with coalesce), logged as warnings for every such query: off. Errors still raise.
    driver = neo4j.GraphDatabase.driver(
        settings.neo4j_uri,
        auth=auth,
        max_connection_pool_size=100,
        notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF,
    )
    return Graph(driver, database=settings.neo4j_database)
