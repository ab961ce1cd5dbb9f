"""CSV import with a report, through ``POST /imports/profiles`` on the real app and
graph, and through ``campaign-engine profiles import FILE.csv`` as its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api import imports
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok

# A SIS export as it arrives: a byte-order mark, CRLF, a quoted field holding a comma and a line break,
# a column we do not know, and broken rows among good ones. Line numbers are where each row starts.
BROKEN = (
    "\ufeffprofileId,email,emailVerified,dob,locale,timeZone,tags,homeroom\r\n"
    "s1,s1@example.com,true,2001-02-03,es-MX,America/Mexico_City,grade-7;band,7B\r\n"  # line 2
    's2,s2@example.com,no,,,,"grade-7",\r\n'  # line 3
    "s3,not-an-address,,,,,,\r\n"  # line 4: email
    "s4,,,2001-13-40,,,,\r\n"  # line 5: dob
    "s5,s5@example.com,maybe,,,,,\r\n"  # line 6: emailVerified
    ",nobody@example.com,,,,,,\r\n"  # line 7: profileId
    "s6,,true,,,,,\r\n"  # line 8: emailVerified without email
    's7,s7@example.com,,,fr,Not/AZone,"a,b",\r\n'  # line 9: timeZone
    's8,s8@example.com,,,,,"multi\r\nline",\r\n'  # lines 10-11: tags (a line break is not a slug)
    "s9,s9@example.com,,,ar,,,\r\n"  # line 12
    "s1,s1-new@example.com,,,,,,\r\n"  # line 13: s1 again, later row wins
)


def _admin(api: TrpcClient, *, tenant: str | None = None, roles: list[str] | None = None) -> dict[str, str]:
    sub = ADMIN_ID if tenant is None else f"{tenant}-{'-'.join(roles or [])}"
    scope = ADMIN_SCOPE if tenant is None else ""
    token = mint_token(api.settings, profile_id=sub, scope=scope, tenant_id=tenant, roles=roles)
    return {"authorization": f"Bearer {token}"}


def _post(api: TrpcClient, body: str | bytes, headers: dict[str, str], *, dry_run: bool = False) -> Any:
    data = body.encode() if isinstance(body, str) else body
    return api.http.post(
        "/imports/profiles",
        params={"dryRun": "true"} if dry_run else {},
        content=data,
        headers={**headers, "content-type": "text/csv; charset=utf-8"},
    )


def _profile(api: TrpcClient, pid: str) -> Any:
    answer = api.query("profiles.get", {"profileId": pid}, as_=ADMIN_ID, admin=True)
    return answer.json()["result"]["data"] if answer.status_code == 200 else error_code(answer)


def _dump(graph: Graph) -> list[dict[str, Any]]:
    rows = graph.run(
        """
        MATCH (p:Profile) WHERE p.profileId STARTS WITH 's' OR p.profileId STARTS WITH 'bulk'
        RETURN p.profileId AS id, properties(p) AS props,
               [(p)-[:HAS_CONTACT_METHOD]->(m) | [m.value, m.isVerified, m.isPrimary]] AS emails,
               [(p)-[:HAS_TAG]->(t) | t.slug] AS tags
        ORDER BY id
        """
    )
    # The lock counter moves on every write by design (graph/locks.py); it is not the profile's data.
    kept = {"updatedAt", "campaignStateLock"}
    return [
        {**r, "props": {k: v for k, v in r["props"].items() if k not in kept}, "emails": sorted(r["emails"]),
         "tags": sorted(r["tags"])}
        for r in rows
    ]  # fmt: skip


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def test_every_bad_row_is_named_and_every_good_one_written(api: TrpcClient, graph: Graph) -> None:
    answer = _post(api, BROKEN, _admin(api))
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    report = answer.json()
    assert (report["rows"], report["created"], report["updated"]) == (11, 3, 1)
    assert report["unknownColumns"] == ["homeroom"]
    assert report["rejectedCount"] == 7
    assert [(r["line"], r["column"]) for r in report["rejected"]] == [
        (4, "email"), (5, "dob"), (6, "emailVerified"), (7, "profileId"), (8, "emailVerified"),
        (9, "timeZone"), (10, "tags"),
    ]  # fmt: skip
    assert report["rejected"][3]["reason"] == "profileId is required"
    assert all(r["reason"] for r in report["rejected"])

    s1 = _profile(api, "s1")  # written twice in file order: the later row's email replaced the first
    assert s1["locale"] == "es-MX" and s1["timeZone"] == "America/Mexico_City" and s1["dob"] == "2001-02-03"
    assert s1["emails"] == [{"address": "s1-new@example.com", "verified": False, "primary": True}]
    assert sorted(s1["tags"]) == ["band", "grade-7"]
    assert _profile(api, "s2")["emails"] == [
        {"address": "s2@example.com", "verified": False, "primary": True}
    ]
    assert _profile(api, "s9")["locale"] == "ar"
    for rejected in ("s3", "s4", "s5", "s6", "s7", "s8"):
        assert _profile(api, rejected) == "NOT_FOUND", rejected

    before = _dump(graph)
    again = _post(api, BROKEN, _admin(api)).json()  # the same file again changes nothing in the end
    # s2 and s9 were stored as their rows say; s1's two rows each change its email, one after the other.
    assert (again["created"], again["updated"], again["unchanged"], again["rejectedCount"]) == (0, 2, 2, 7)
    assert _dump(graph) == before


def test_a_dry_run_counts_and_writes_nothing(api: TrpcClient, graph: Graph) -> None:
    ok(api.mutate("profiles.upsert", {"profiles": [{"profileId": "s2"}]}, as_=ADMIN_ID, admin=True))
    before = _dump(graph)
    report = _post(api, BROKEN, _admin(api), dry_run=True).json()
    assert report["dryRun"] is True
    assert (report["created"], report["updated"], report["rejectedCount"]) == (2, 2, 7)
    assert _dump(graph) == before


def test_a_file_that_cannot_be_read_is_refused_whole(api: TrpcClient, graph: Graph) -> None:
    headers = _admin(api)
    good = "profileId,email\ns1,s1@example.com\n"
    not_utf8 = good.encode() + b"s2,caf\xe9@example.com\n"
    cases = [
        (_post(api, not_utf8, headers), 400, "not UTF-8 at byte"),
        (_post(api, "email,locale\nx@example.com,en\n", headers), 400, "no profileId column"),
        (_post(api, "", headers), 400, "empty"),
        (api.http.post("/imports/profiles", content=good, headers={**headers, "content-type": "text/plain"}),
         415, "text/csv"),
        (_post(api, good, {}), 401, ""),
        (_post(api, good, _admin(api, tenant="alpha", roles=["viewer"])), 403, "author"),
    ]  # fmt: skip
    for answer, status, words in cases:
        assert answer.status_code == status, answer.text
        assert words in answer.json()["error"]["message"]
    assert _dump(graph) == []  # the valid row before the bad byte was not written either


def test_a_file_that_stops_being_csv_keeps_the_rows_before_it(api: TrpcClient, graph: Graph) -> None:
    """Where the file stops being CSV (a field past the csv reader's 128 KiB limit) the rows before it
    are imported, the rows after it are not read, and the report names the line the bad row starts on."""
    body = (
        "profileId,email\r\n"
        + "".join(f"s{i},s{i}@example.com\r\n" for i in range(5))  # lines 2-6
        + 'bad,"multi\r\nline '
        + "x" * 200_000
        + '"\r\n'  # line 7, and the field runs on past it
        + "late,late@example.com\r\n"
    )
    answer = _post(api, body, _admin(api))
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert (report["created"], report["rejectedCount"]) == (5, 1), report
    assert report["rejected"][0]["line"] == 7 and "not CSV from here on" in report["rejected"][0]["reason"]
    assert sorted(r["id"] for r in _dump(graph)) == [f"s{i}" for i in range(5)]
    assert graph.run("MATCH (p:Profile) WHERE p.profileId IN ['bad', 'late'] RETURN p") == []


def test_a_file_past_the_upload_limit_is_refused_before_any_row_is_written(
    api: TrpcClient, graph: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PAYLOAD_TOO_LARGE as soon as the body passes ``MAX_IMPORT_BYTES`` (256 MiB; lowered here so the
    test sends kilobytes), with nothing written though its first rows were good; a file of exactly the
    limit is imported."""
    rows = "profileId,email\n" + "".join(f"s{i},s{i}@example.com\n" for i in range(100))
    monkeypatch.setattr(imports, "MAX_IMPORT_BYTES", len(rows.encode()))
    too_large = _post(api, rows + "s100,s100@example.com\n", _admin(api))
    assert (too_large.status_code, error_code(too_large)) == (413, "PAYLOAD_TOO_LARGE")
    assert "split it" in too_large.json()["error"]["message"]
    assert _dump(graph) == []
    at_the_limit = _post(api, rows, _admin(api))
    assert at_the_limit.status_code == 200, at_the_limit.text
    assert len(_dump(graph)) == 100


def test_rejections_are_all_counted_and_the_first_thousand_listed(api: TrpcClient, graph: Graph) -> None:
    lines = ["profileId,email"]
    lines += [f"bulk{i:05d},bulk{i}@example.com" for i in range(2500)]  # three batches
    lines += [f"bad{i:05d},nope" for i in range(1500)]
    report = _post(api, "\n".join(lines) + "\n", _admin(api)).json()
    assert (report["rows"], report["created"], report["rejectedCount"]) == (4000, 2500, 1500)
    assert len(report["rejected"]) == 1000
    assert report["rejected"][0] == {
        "line": 2502,
        "column": "email",
        "reason": report["rejected"][0]["reason"],
    }
    [count] = graph.run("MATCH (p:Profile) WHERE p.profileId STARTS WITH 'bulk' RETURN count(p) AS n")
    assert count["n"] == 2500


def test_a_tenant_imports_into_itself_and_cannot_take_anothers_profile(api: TrpcClient, graph: Graph) -> None:
    platform = _admin(api)
    ok(api.http.post("/trpc/profiles.upsert", json={"profiles": [{"profileId": "s1", "tenants": ["beta"]}]},
                     headers=platform))  # fmt: skip
    author = _admin(api, tenant="alpha", roles=["author"])
    report = _post(api, "profileId,locale\ns1,fr\ns2,es\n", author).json()
    assert (report["created"], report["updated"]) == (1, 0)
    assert report["rejected"] == [
        {"line": 2, "column": "profileId", "reason": "this profileId is taken outside this tenant"}
    ]
    [s1] = graph.run("MATCH (p:Profile {profileId: 's1'}) RETURN p.locale AS locale, p.tenants AS tenants")
    assert (s1["locale"], s1["tenants"]) == (None, ["beta"])
    [s2] = graph.run("MATCH (p:Profile {profileId: 's2'}) RETURN p.tenants AS tenants")
    assert s2["tenants"] == ["alpha"]
    entries = graph.run("MATCH (a:AuditEntry {procedure: 'imports.profiles'}) RETURN a.tenantId AS t")
    assert [e["t"] for e in entries] == ["alpha"]  # one entry per written batch, in the caller's tenant


def test_the_command_line_prints_the_same_report(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    path = tmp_path / "export.csv"
    path.write_text(BROKEN, encoding="utf-8", newline="")
    env = {
        **os.environ,
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_ENV_FILE": "/dev/null",
    }
    run = subprocess.run(
        [sys.executable, "-m", "campaign_engine.cli", "profiles", "import", str(path)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr  # a row was rejected: a script notices
    report = json.loads(run.stdout)
    assert (report["created"], report["updated"], report["rejectedCount"]) == (3, 1, 7)
    assert [r["line"] for r in report["rejected"]] == [4, 5, 6, 7, 8, 9, 10]

    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"profileId,email\ns20,s20@example.com\ns21,caf\xe9@example.com\n")
    refused = subprocess.run(
        [sys.executable, "-m", "campaign_engine.cli", "profiles", "import", str(bad)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "not UTF-8 at byte 44" in refused.stderr
    assert graph.run("MATCH (p:Profile {profileId: 's20'}) RETURN p") == []


def test_the_command_line_imports_into_the_tenant_it_names(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """``--tenant T`` lands the rows in T, audited in T's trail; a tenant that does not exist is refused
    before anything is written (a typo never makes a tenant up)."""
    from datetime import UTC, datetime

    from campaign_engine.domain.tenant import TenantCreate
    from campaign_engine.graph.tenants import create_tenant

    now = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    create_tenant(
        graph,
        data=TenantCreate.model_validate({"tenantId": "riverside", "name": "Riverside School"}),
        now=now,
        audit=None,
    )
    path = tmp_path / "families.csv"
    path.write_text("profileId,email\nr1,r1@example.com\nr2,r2@example.com\n", encoding="utf-8")
    env = {
        **os.environ,
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_ENV_FILE": "/dev/null",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "campaign_engine.cli", *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    refused = cli("profiles", "import", str(path), "--tenant", "riversde")
    assert refused.returncode == 3 and "no tenant 'riversde'" in refused.stderr
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n") == [{"n": 0}]
    run = cli("profiles", "import", str(path), "--tenant", "riverside")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["created"] == 2
    rows = graph.run("MATCH (p:Profile) RETURN p.profileId AS id, p.tenants AS tenants ORDER BY id")
    assert rows == [{"id": "r1", "tenants": ["riverside"]}, {"id": "r2", "tenants": ["riverside"]}]
    entries = graph.run("MATCH (a:AuditEntry {procedure: 'cli.profiles.import'}) RETURN a.tenantId AS t")
    assert [e["t"] for e in entries] == ["riverside"]
