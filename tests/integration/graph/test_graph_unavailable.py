"""How an unreachable graph shows, without killing anything: the real driver aimed
at a loopback port nobody listens on is a graph that is down. The kill under load, with the worker and
the restart, is ``tests/e2e/test_graph_outage.py``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from neo4j.exceptions import CypherSyntaxError, IncompleteCommit, SessionExpired

from campaign_engine.config import Settings
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.graph.graph import Graph, Tx, open_graph
from campaign_engine.unsubscribe.i18n import STRINGS
from campaign_engine.unsubscribe.pages import page_headers
from campaign_engine.unsubscribe.routes import BROWSER_PATH, ONE_CLICK_PATH, unsubscribe_router
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.conftest import free_port
from tests.support.email import UNSUBSCRIBE_SECRET


def _down(*, unavailable_wait: float) -> Graph:
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{free_port()}", _env_file=None)
    return open_graph(settings, unavailable_wait=unavailable_wait)


def _one(tx: Tx) -> Any:
    return tx.run("RETURN 1 AS one").single()


def _autocommit(graph: Graph) -> Any:
    with graph.autocommit_reads() as session:
        return session.run("RETURN 1 AS one").single()


CALLS: dict[str, Callable[[Graph], Any]] = {
    "read": lambda graph: graph.read(_one),
    "write": lambda graph: graph.write(_one),
    "run": lambda graph: graph.run("RETURN 1 AS one"),
    "autocommit_reads": _autocommit,
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_down_graph_is_service_unavailable_after_its_wait_not_the_drivers(call: str) -> None:
    """The API's wait (1 s) bounds the answer, not the driver's 30 s retry budget; a worker's longer
    wait is really waited (it rides out a restart). Auto-commit reads never wait."""
    for wait, at_least in ((1.0, 0.0), (3.0, 2.0)):
        graph = _down(unavailable_wait=wait)
        try:
            started = time.monotonic()
            with pytest.raises(ServiceUnavailable):
                CALLS[call](graph)
            elapsed = time.monotonic() - started
        finally:
            graph.close()
        assert elapsed < wait + 2.0, (call, wait, elapsed)
        if call != "autocommit_reads":
            assert elapsed >= at_least, (call, wait, elapsed)


def test_errors_that_are_not_about_availability_pass_through(graph: Graph) -> None:
    with pytest.raises(CypherSyntaxError):
        graph.read(lambda tx: tx.run("RETURN (").consume())
    with pytest.raises(CypherSyntaxError):
        graph.run("RETURN (")


def test_a_lost_connection_is_retried_but_a_commit_cut_off_only_by_write_idempotent(graph: Graph) -> None:
    """The connection failures are raised from inside the transaction function, where the driver
    raises them when a socket dies mid-transaction; the driver and Neo4j are real."""
    attempts: list[str] = []

    def lost_once(tx: Tx) -> Any:
        attempts.append("lost_once")
        if len(attempts) == 1:
            raise SessionExpired("connection lost mid-transaction")
        return tx.run("RETURN 1 AS one").single(strict=True)["one"]

    assert graph.write(lost_once) == 1
    assert attempts == ["lost_once", "lost_once"]

    runs: list[str] = []

    def cut_off(tx: Tx) -> None:
        runs.append("cut_off")
        raise IncompleteCommit("COMMIT sent, then the connection died: it may have committed")

    with pytest.raises(ServiceUnavailable):
        graph.write(cut_off)
    assert runs == ["cut_off"]  # re-running it could apply a committed write twice

    def cut_off_once(tx: Tx) -> Any:
        runs.append("cut_off_once")
        if runs.count("cut_off_once") == 1:
            raise IncompleteCommit("COMMIT sent, then the connection died: it may have committed")
        return tx.run("RETURN 1 AS one").single(strict=True)["one"]

    assert graph.write_idempotent(cut_off_once) == 1  # declared safe to apply twice: re-run
    assert runs == ["cut_off", "cut_off_once", "cut_off_once"]


@pytest.fixture
def pages_on_a_down_graph() -> Iterator[tuple[TestClient, str]]:
    graph = _down(unavailable_wait=0.0)
    tokens = UnsubscribeTokens(UNSUBSCRIBE_SECRET)
    app = FastAPI()
    app.include_router(unsubscribe_router(graph=graph, tokens=tokens, clock=lambda: datetime.now(UTC)))
    try:
        with TestClient(app) as client:
            yield client, tokens.issue("some-unsubscribe-id")
    finally:
        graph.close()


@pytest.mark.parametrize("language", sorted(STRINGS))
def test_unsubscribe_posts_answer_503_with_every_page_header(
    pages_on_a_down_graph: tuple[TestClient, str], language: str
) -> None:
    client, token = pages_on_a_down_graph
    form = {"content-type": "application/x-www-form-urlencoded", "accept-language": language}
    body = b"List-Unsubscribe=One-Click"

    page = client.post(BROWSER_PATH, params={"token": token}, content=body, headers=form)
    assert page.status_code == 503
    assert {k: page.headers[k] for k in page_headers(language)} == page_headers(language)
    assert page.headers["retry-after"].isdigit()
    assert page.headers["content-type"].startswith("text/html")
    assert f"<h1>{STRINGS[language].unavailable_heading}</h1>" in page.text

    one_click = client.post(ONE_CLICK_PATH, params={"token": token}, content=body, headers=form)
    assert one_click.status_code == 503
    assert {k: one_click.headers[k] for k in page_headers("en")} == page_headers("en")
    assert one_click.headers["retry-after"].isdigit()
    assert one_click.headers["content-type"].startswith("text/plain")

    confirm = client.get(ONE_CLICK_PATH, params={"token": token}, headers=form)
    assert confirm.status_code == 200  # the confirmation form needs no graph
