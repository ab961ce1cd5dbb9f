"""An import tells ``updated`` from ``unchanged``: a re-run of the same file changes nothing and says so.

The upsert statement itself reads each existing profile's stored facts before it writes (a tenant's:
its own view, never the shared facts or another tenant's view of a shared person) and names the rows
that held every fact already. Over HTTP and the command line, with the counts in the audit entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok

HEADER = "profileId,email,emailVerified,dob,locale,timeZone,tags\n"


def _rows(count: int, **changed: dict[str, str]) -> str:
    """``count`` rows; ``changed`` maps a profileId to the cells its row says instead."""
    lines = [HEADER]
    for i in range(count):
        cells = {"profileId": f"u{i:03d}", "email": f"u{i}@school.example", "emailVerified": "true",
                 "dob": "2001-02-03", "locale": "es-MX", "timeZone": "Europe/Madrid",
                 "tags": "grade-7;band"}  # fmt: skip
        cells.update(changed.get(cells["profileId"], {}))
        lines.append(",".join(cells.values()) + "\n")
    return "".join(lines)


def _headers(api: TrpcClient, *, tenant: str | None = None) -> dict[str, str]:
    if tenant is None:
        token = mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    else:
        token = mint_token(api.settings, profile_id=f"{tenant}-author", tenant_id=tenant, roles=["author"])
    return {"authorization": f"Bearer {token}", "content-type": "text/csv"}


def _import(api: TrpcClient, body: str, *, tenant: str | None = None) -> tuple[int, int, int]:
    answer = api.http.post("/imports/profiles", content=body.encode(), headers=_headers(api, tenant=tenant))
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["rejectedCount"] == 0, report
    return report["created"], report["updated"], report["unchanged"]


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def _audit_counts(graph: Graph) -> list[dict[str, Any]]:
    entries = graph.run(
        "MATCH (a:AuditEntry {procedure: 'imports.profiles'}) RETURN a.detail AS detail ORDER BY a.at, a.id"
    )
    return [{k: v for k, v in json.loads(e["detail"]).items() if k != "profileIds"} for e in entries]


def test_a_rerun_is_unchanged_and_only_a_changed_fact_updates(api: TrpcClient, graph: Graph) -> None:
    assert _import(api, _rows(30)) == (30, 0, 0)
    assert _import(api, _rows(30)) == (0, 0, 30)  # the same file: every existing row unchanged
    changed = _rows(
        30,
        u000={"email": "moved@school.example"},
        u001={"locale": "fr"},
        u002={"emailVerified": "false"},
        u003={"tags": "band;grade-7"},  # the same set in another order: a set is stored, so unchanged
        u004={"dob": "", "locale": "", "timeZone": ""},  # empty cells keep the stored value: unchanged
        u005={"tags": "grade-7"},
    )
    assert _import(api, changed) == (0, 4, 26)
    assert _import(api, changed) == (0, 0, 30)
    # One audit entry per batch, each counting what its batch did.
    assert _audit_counts(graph) == [
        {"count": 30, "created": 30, "updated": 0, "unchanged": 0},
        {"count": 30, "created": 0, "updated": 0, "unchanged": 30},
        {"count": 30, "created": 0, "updated": 4, "unchanged": 26},
        {"count": 30, "created": 0, "updated": 0, "unchanged": 30},
    ]


def test_a_tenant_compares_its_own_view_only(api: TrpcClient, graph: Graph) -> None:
    """A person shared by alpha and beta: what the shared facts or beta's view hold never makes
    alpha's row unchanged, and what beta changes later never makes alpha's re-run updated."""
    platform = {"authorization": _headers(api)["authorization"]}
    for tenant in ("alpha", "beta"):
        ok(api.http.post("/trpc/tenants.create", json={"tenantId": tenant, "name": tenant}, headers=platform))
    shared = {"profileId": "u000", "tenants": ["alpha", "beta"], "locale": "es-MX",
              "tags": ["band", "grade-7"],
              "emails": [{"address": "u0@school.example", "verified": True, "primary": True}],
              "dob": "2001-02-03", "timeZone": "Europe/Madrid"}  # fmt: skip
    ok(api.http.post("/trpc/profiles.upsert", json={"profiles": [shared]}, headers=platform))
    row = _rows(1)  # exactly the shared facts
    assert _import(api, row) == (0, 0, 1)  # the platform compares the shared facts
    assert _import(api, row, tenant="beta") == (0, 1, 0)  # beta's view did not hold them
    assert _import(api, row, tenant="beta") == (0, 0, 1)
    assert _import(api, row, tenant="alpha") == (0, 1, 0)  # beta's view is not alpha's
    assert _import(api, row, tenant="alpha") == (0, 0, 1)
    assert _import(api, _rows(1, u000={"locale": "fr"}), tenant="beta") == (0, 1, 0)
    assert _import(api, row, tenant="alpha") == (0, 0, 1)  # beta's change is not alpha's
    assert _import(api, row) == (0, 0, 1)  # nor the shared facts'


def test_the_command_line_reports_a_rerun_unchanged(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    path = tmp_path / "students.csv"
    path.write_text(_rows(12), encoding="utf-8")
    env = {
        **os.environ,
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_ENV_FILE": "/dev/null",
    }
    reports = []
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-m", "campaign_engine.cli", "profiles", "import", str(path)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        reports.append(json.loads(run.stdout))
    assert [(r["created"], r["updated"], r["unchanged"]) for r in reports] == [(12, 0, 0), (0, 0, 12)]
