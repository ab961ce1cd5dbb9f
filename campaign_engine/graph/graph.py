"""The ``Graph`` handle: one driver, one database, managed transactions.

Use cases pass a transaction function to ``read`` or ``write``. The whole function is re-run on
transient errors (deadlock victims, leader switches), so a transaction function must be safe to re-run:
it may only touch the graph, never a queue, a socket or a clock read that must not change.

Every driver failure that means "the graph cannot answer now" becomes ``ServiceUnavailable`` here, and
nowhere else (HTTP 503 at the API; a job that raises it is redelivered). The retries are ours, not the
driver's, because the two causes want different budgets:

- a transient server error (deadlock victim) is retried with back-off for up to 30 s, as the driver
  would;
- an unreachable graph (refused, reset, killed, still starting) is retried for ``unavailable_wait``
  seconds, which each edge chooses: the API answers 503 within about a second, so callers ask again
  and no request thread sits in a retry loop during an outage; the worker edges ride out an outage of
  up to ``NEO4J_UNAVAILABLE_WAIT_SECONDS`` (a restart), because a worker may hold what only memory
  knows (a provider accepted an email, a receiver acknowledged a notification) and must still record
  it rather than give the job back to be redone.

A commit whose connection died after COMMIT was sent (``IncompleteCommit``) is not re-run by ``write``:
it may have committed. ``write_idempotent`` re-runs it like any lost connection, for transaction
functions whose second application changes nothing (the notification worker's outcome write, which
holds what only its memory knows: the answers the receivers gave). The driver's own timeouts are
bounded too (connect, pool acquisition), so no call waits on a socket for the driver's 30 s and 60 s
defaults.

Every transaction carries a deadline (``tx_timeout``: ``NEO4J_TX_TIMEOUT_SECONDS`` on the API,
``NEO4J_WORKER_TX_TIMEOUT_SECONDS`` elsewhere), set on the driver's transaction config, so no statement
holds the graph every tenant shares for longer. Neo4j ends a transaction past it (checked about every
2 s); that is ``ServiceUnavailable`` ("try again"), never retried here (running it again would cost the
same), counted in ``campaign_engine_graph_statement_timeouts``: the API answers 503, a worker's job is
redelivered under its usual rules.

Past 350 lines on purpose: every way a statement runs (managed, left open to commit, auto-commit) sits
beside the one classification and retry of the driver's failures they all share.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, Generic, LiteralString, ParamSpec, TypeGuard, TypeVar, cast
from urllib.parse import urlsplit

import neo4j
from neo4j import exceptions as neo4j_errors

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.observability import metrics

__all__ = [
    "API_UNAVAILABLE_WAIT_SECONDS",
    "Graph",
    "PendingWrite",
    "Statements",
    "TimedSession",
    "Tx",
    "address_of",
    "open_graph",
]

P = ParamSpec("P")
R = TypeVar("R")
Tx = neo4j.ManagedTransaction

# Neo4j's answers for a transaction it ended at its deadline: past the timeout while running, or while
# waiting for a lock (the lock client is stopped by the same termination).
_DEADLINE_CODES = frozenset(
    f"Neo.ClientError.Transaction.{name}"
    for name in ("TransactionTimedOutClientConfiguration", "TransactionTimedOut", "LockClientStopped")
)

API_UNAVAILABLE_WAIT_SECONDS = 1.0
"""The API's wait for an unreachable graph: enough to replace pooled connections a restart left dead."""

_TRANSIENT_RETRY_SECONDS = 30.0  # the driver's default budget, for deadlock victims and leader switches
_FIRST_DELAY, _MULTIPLIER, _JITTER = 1.0, 2.0, 0.2  # the driver's back-off for transient errors
_UNREACHABLE_POLL = 0.5  # how often an unreachable graph is tried again (the first retry is at once)
_CONNECT_TIMEOUT = 5.0  # TCP + Bolt handshake of one new connection
_ACQUISITION_TIMEOUT = 10.0  # waiting for a pooled connection, a new one's connect included

# The driver's "the server is not there": refused, reset or killed mid-query (ServiceUnavailable and its
# routing subclasses, SessionExpired), a socket error that escaped its wrapping, or a database that is
# still starting (DatabaseUnavailable, a TransientError the server sends while it recovers).
_UNREACHABLE = (
    neo4j_errors.ServiceUnavailable,
    neo4j_errors.SessionExpired,
    neo4j_errors.DatabaseUnavailable,
    OSError,
)


def _past_deadline(exc: BaseException) -> TypeGuard[neo4j_errors.Neo4jError]:
    return isinstance(exc, neo4j_errors.Neo4jError) and exc.code in _DEADLINE_CODES


def _as_service_error(exc: BaseException) -> ServiceUnavailable | None:
    """The one classification of driver failures as "the graph cannot answer now" (None: not one)."""
    if _past_deadline(exc):
        metrics.graph_statement_timeout("lock_wait" if exc.code.endswith("LockClientStopped") else "running")
        return ServiceUnavailable("the graph database took too long to answer; try again")
    if isinstance(exc, neo4j_errors.IncompleteCommit):
        return ServiceUnavailable("the graph database went away during a commit; try again")
    if isinstance(exc, _UNREACHABLE):
        return ServiceUnavailable("the graph database is unavailable")
    if isinstance(exc, neo4j_errors.ConnectionPoolError):  # acquisition timed out: every connection busy
        return ServiceUnavailable("the graph database is busy; try again")
    if isinstance(exc, neo4j_errors.Neo4jError) and exc.is_retryable():
        return ServiceUnavailable("the graph database is busy; try again")
    return None


@contextmanager
def _unavailable_as_service_error() -> Iterator[None]:
    try:
        yield
    except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError) as exc:
        mapped = _as_service_error(exc)
        if mapped is None:
            raise
        raise mapped from exc


class PendingWrite(Generic[R]):
    """A write transaction whose function has run and whose commit is still to come (``write_pending``).

    ``commit`` or ``rollback`` ends it, once, on any one thread: the caller may hand it to another
    thread and start its next transaction meanwhile. Until then it holds its locks and its connection."""

    def __init__(self, session: neo4j.Session, tx: neo4j.Transaction, result: R) -> None:
        self._session = session
        self._tx = tx
        self.result = result

    def commit(self) -> None:
        """Raises if the commit failed (nothing was written) or was cut off (``ServiceUnavailable``: it
        may have been written); never re-runs the function."""
        try:
            with _unavailable_as_service_error():
                self._tx.commit()
        finally:
            self._session.close()

    def rollback(self) -> None:
        try:
            self._tx.close()  # rolls back an open transaction
        finally:
            self._session.close()


class TimedSession:
    """An auto-commit read session whose every statement carries the graph's deadline (a ``Query``
    timeout: auto-commit statements have no transaction config of their own)."""

    def __init__(self, session: neo4j.Session, timeout: float | None) -> None:
        self._session = session
        self._timeout = timeout

    def run(
        self, query: LiteralString | neo4j.Query, parameters: dict[str, Any] | None = None, **kwargs: Any
    ) -> neo4j.Result:
        if not isinstance(query, neo4j.Query):
            query = neo4j.Query(query, timeout=self._timeout)
        return self._session.run(query, parameters, **kwargs)


Statements = neo4j.ManagedTransaction | neo4j.Session | TimedSession
"""What a read helper may run its statements on."""


class Graph:
    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str,
        unavailable_wait: float = 0.0,
        tx_timeout: float | None = None,
    ) -> None:
        self.driver = driver
        self.database = database
        self.unavailable_wait = unavailable_wait
        self.tx_timeout = tx_timeout
        """Seconds any one transaction may run before Neo4j ends it (None: the server's default)."""
        self.reachable = True
        """False from an attempt that found the graph unreachable until one reaches it again (``probe``
        included): the local worker takes no messages meanwhile (``delivery/runner.py``)."""

    def read(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        timed = self._timed(fn)

        def attempt() -> R:
            with self.driver.session(database=self.database) as session:
                return session.execute_read(timed, *args, **kwargs)

        return self._retrying(attempt)

    def write(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        return self._retrying(self._writer(fn, *args, **kwargs))

    def write_idempotent(self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``write`` for a function whose second application changes nothing: a commit cut off
        (``IncompleteCommit``) is re-run within ``unavailable_wait`` instead of raised, so the outcome is
        known once the graph is back. The function must read what it writes, not only add to it."""
        return self._retrying(self._writer(fn, *args, **kwargs), rerun_incomplete_commit=True)

    def _writer(
        self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> Callable[[], R]:
        timed = self._timed(fn)

        def attempt() -> R:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(timed, *args, **kwargs)

        return attempt

    def _timed(self, fn: Callable[Concatenate[Tx, P], R]) -> Callable[Concatenate[Tx, P], R]:
        """``fn`` carrying the deadline in the driver's transaction config."""
        return neo4j.unit_of_work(timeout=self.tx_timeout)(fn)

    def write_pending(
        self, fn: Callable[Concatenate[Tx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> PendingWrite[R]:
        """``write`` up to its commit: the function is run (and re-run on transient errors) in a
        transaction left open, which the caller commits or rolls back (``PendingWrite``). For a pipeline
        that starts its next transaction while this one commits."""

        def attempt() -> PendingWrite[R]:
            session = self.driver.session(database=self.database)
            try:
                tx = session.begin_transaction(timeout=self.tx_timeout)
                try:
                    # The function sees only ``run``, which both transaction kinds share.
                    return PendingWrite(session, tx, fn(cast(Tx, tx), *args, **kwargs))
                except BaseException:
                    tx.close()
                    raise
            except BaseException:
                session.close()
                raise

        return self._retrying(attempt)

    @contextmanager
    def autocommit_reads(self) -> Iterator[TimedSession]:
        """A read session whose ``run`` is one auto-commit statement: one round trip, no BEGIN/COMMIT,
        about a third less driver CPU than ``read``. For hot batched reads that need neither several
        statements in one snapshot nor the managed retry: any failure to answer is ``ServiceUnavailable``
        (HTTP 503, "ask again") at once, never a retry."""
        with (
            _unavailable_as_service_error(),
            self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session,
        ):
            yield TimedSession(session, self.tx_timeout)

    def run(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        """One auto-managed write query returning plain dicts (admin tasks, tests, benchmarks)."""

        def attempt() -> list[dict[str, Any]]:
            query = neo4j.Query(cypher, timeout=self.tx_timeout)
            return _plain(self.driver.execute_query(query, params, database_=self.database).records)

        return self._retrying(attempt)

    def run_autocommit(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        """``run`` as one auto-commit statement: one round trip, no BEGIN or COMMIT, about half the
        driver CPU (the rate limit's count, on every app call). Retried as ``run`` is, so a statement
        whose answer was cut off may apply twice: only for writes where that is harmless. Values come
        as the driver gives them (return plain values, not nodes)."""

        def attempt() -> list[dict[str, Any]]:
            query = neo4j.Query(cypher, timeout=self.tx_timeout)
            with self.driver.session(database=self.database) as session:
                # dict(record), not .data(): its recursive conversion cost 3-4 us more a row.
                return [dict(record) for record in session.run(query, params)]

        return self._retrying(attempt)

    def probe(self) -> bool:
        """One connectivity check, no retry (bounded by the driver's connect timeout); sets ``reachable``."""
        try:
            self.driver.verify_connectivity()
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError):
            self.reachable = False
        else:
            self.reachable = True
        return self.reachable

    def close(self) -> None:
        self.driver.close()

    def _retrying(self, attempt: Callable[[], R], *, rerun_incomplete_commit: bool = False) -> R:
        """Run ``attempt`` (one driver attempt, see ``open_graph``) until it answers or its budget is
        spent; then raise ``ServiceUnavailable``. Errors that are not about availability pass through."""
        started = time.monotonic()
        transient_delay = _FIRST_DELAY
        unreachable_tries = 0
        while True:
            try:
                answer = attempt()
            except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError) as exc:
                mapped = _as_service_error(exc)
                if mapped is None:
                    raise
                if _past_deadline(exc):
                    raise mapped from exc  # running it again would cost the same: the caller decides
                incomplete = isinstance(exc, neo4j_errors.IncompleteCommit)
                if isinstance(exc, _UNREACHABLE):
                    self.reachable = False
                if isinstance(exc, _UNREACHABLE) and (rerun_incomplete_commit or not incomplete):
                    budget = self.unavailable_wait
                    pause = 0.0 if unreachable_tries == 0 else _UNREACHABLE_POLL
                    unreachable_tries += 1
                elif isinstance(exc, neo4j_errors.Neo4jError) and exc.is_retryable():
                    budget = _TRANSIENT_RETRY_SECONDS
                    pause = transient_delay * (1 + random.uniform(-_JITTER, _JITTER))  # noqa: S311
                    transient_delay *= _MULTIPLIER
                else:
                    raise mapped from exc
                if time.monotonic() + pause - started > budget:
                    raise mapped from exc
            else:
                self.reachable = True
                return answer
            time.sleep(pause)


def _plain(records: Iterable[neo4j.Record]) -> list[dict[str, Any]]:
    return [record.data() for record in records]


def address_of(uri: str) -> str:
    """host:port of a graph URI, for log lines: never the credentials a URI may carry."""
    parts = urlsplit(uri)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def open_graph(
    settings: Settings, *, unavailable_wait: float | None = None, tx_timeout: float | None = None
) -> Graph:
    """The graph of one edge. ``unavailable_wait``: how long a call waits for an unreachable Neo4j
    (default ``NEO4J_UNAVAILABLE_WAIT_SECONDS``, the worker edges' wait; the API passes its own).
    ``tx_timeout``: each transaction's deadline (default ``NEO4J_WORKER_TX_TIMEOUT_SECONDS``; the API
    passes ``NEO4J_TX_TIMEOUT_SECONDS``)."""
    auth = None
    password = settings.neo4j_password.get_secret_value()
    if password:
        auth = (settings.neo4j_user, password)
    driver = neo4j.GraphDatabase.driver(
        settings.neo4j_uri,
        auth=auth,
        max_connection_pool_size=100,
        connection_timeout=_CONNECT_TIMEOUT,
        connection_acquisition_timeout=_ACQUISITION_TIMEOUT,
        # One attempt per execute_read/execute_write/execute_query: Graph._retrying retries, with a
        # budget per cause (the driver's single budget would keep an API call 30 s on a down graph).
        max_transaction_retry_time=0,
        # Server notifications are advice (e.g. "property does not exist" for optional properties that
        # our queries read with coalesce), logged as warnings for every such query: off. Errors still raise.
        notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF,
    )
    wait = settings.neo4j_unavailable_wait_seconds if unavailable_wait is None else unavailable_wait
    deadline = settings.neo4j_worker_tx_timeout_seconds if tx_timeout is None else tx_timeout
    return Graph(driver, database=settings.neo4j_database, unavailable_wait=wait, tx_timeout=deadline)
