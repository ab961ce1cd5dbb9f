"""An import the graph stops answering mid-way, on the real app and a real Neo4j: the third batch waits on
a lock another transaction holds until the API's deadline ends it. The answer is SERVICE_UNAVAILABLE
and says which rows were committed (``data.committed``: a count and line ranges), and the graph holds
exactly those rows: the batches before, the one in flight beside it, nothing of the failed one."""

from __future__ import annotations

from typing import Any

import pytest

from campaign_engine.campaigns.profiles import csv_import, roster_import
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.integration.campaigns.profiles.test_csv_import import _admin
from tests.support.api import api_client, error_code

_BATCH = 10  # batches of 10 rows (1,000 in production): each ends well within the deadline under load
_ROWS = 40  # four batches: lines 2-11, 12-21, 22-31, 32-41
_HELD = "cut-00025"  # line 27, in the third batch


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_import, "_BATCH", _BATCH)
    monkeypatch.setattr(roster_import, "_BATCH", _BATCH)


@pytest.fixture
def hasty(graph: Graph) -> Graph:
    """The session's driver with a deadline a batch meets on a loaded machine and a lock wait does not."""
    return Graph(graph.driver, database=graph.database, unavailable_wait=1.0, tx_timeout=2.0)


def _file(header: str, row: str) -> str:
    return header + "".join(row.format(i=i) for i in range(_ROWS))


def _ids_in_graph(graph: Graph) -> set[str]:
    rows = graph.run(
        "MATCH (p:Profile) WHERE p.profileId STARTS WITH 'cut-' AND p.profileId <> $held"
        " RETURN p.profileId AS id",
        held=_HELD,
    )
    return {str(r["id"]) for r in rows}


def _committed_ids(lines: list[list[int]]) -> set[str]:
    """Line n holds profile cut-(n - 2), zero-padded to five digits."""
    return {f"cut-{line - 2:05d}" for first, last in lines for line in range(first, last + 1)}


def _cut_short(base_settings: Settings, graph: Graph, hasty: Graph, path: str, body: str) -> dict[str, Any]:
    with api_client(base_settings, hasty) as api:  # started before the lock: start-up writes too
        headers = {**_admin(api), "content-type": "text/csv"}
        # The same import of other people first, without the deadline: a fresh graph plans the upsert for
        # seconds on a loaded machine (Neo4j's plan cache is the server's, whichever driver asks).
        with api_client(base_settings, graph) as patient:
            warm = patient.http.post(path, content=body.replace("cut-", "warm-").encode(), headers=headers)
            assert warm.status_code == 200, warm.text
        graph.run("CREATE (:Profile {profileId: $id, tenants: ['default']})", id=_HELD)
        held = "MATCH (p:Profile {profileId: $id}) SET p.held = true"
        holder = graph.write_pending(lambda tx: tx.run(held, id=_HELD))
        try:
            response = api.http.post(path, content=body.encode(), headers=headers)
        finally:
            holder.rollback()
    assert response.status_code == 503, response.text
    assert error_code(response) == "SERVICE_UNAVAILABLE"
    error = response.json()["error"]
    assert "Re-run the whole file" in error["message"] and "took too long" in error["message"]
    committed: dict[str, Any] = error["data"]["committed"]
    return committed


def test_a_csv_import_cut_short_says_which_rows_it_committed(
    base_settings: Settings, graph: Graph, hasty: Graph
) -> None:
    body = _file("profileId,email\n", "cut-{i:05d},cut{i}@example.com\n")
    committed = _cut_short(base_settings, graph, hasty, "/imports/profiles", body)
    # Two in flight: the fourth batch was written beside the third, so the ranges have a gap.
    assert committed == {"rows": 30, "lines": [[2, 21], [32, 41]]}
    assert _ids_in_graph(graph) == _committed_ids(committed["lines"])


def test_a_roster_import_cut_short_says_which_rows_it_committed(
    base_settings: Settings, graph: Graph, hasty: Graph
) -> None:
    header = "sourcedId,status,enabledUser,givenName,familyName,role,email,birthDate\n"
    body = _file(header, "cut-{i:05d},active,true,Ada,Lovelace,student,cut{i}@example.com,\n")
    committed = _cut_short(base_settings, graph, hasty, "/imports/roster?format=oneroster", body)
    assert committed == {"rows": 20, "lines": [[2, 21]]}  # one batch at a time: it stopped there
    assert _ids_in_graph(graph) == _committed_ids(committed["lines"])
