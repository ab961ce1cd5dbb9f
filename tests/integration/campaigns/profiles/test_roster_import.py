"""Roster imports: OneRoster users.csv and SDS v2.1 relationships.csv through
``POST /imports/roster``, the CSV import's ``guardians`` column, and ``campaign-engine roster import``."""

from __future__ import annotations

import csv
import io
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

ONEROSTER_HEADER = (
    "sourcedId,status,dateLastModified,enabledUser,orgSourcedIds,role,username,userIds,givenName,"
    "familyName,middleName,identifier,email,sms,phone,agentSourcedIds,grades,password,birthDate"
)
# (line, cells): every broken row names its line and column; names must never be stored.
ONEROSTER_ROWS: list[dict[str, str]] = [
    {
        "sourcedId": "st1",
        "role": "student",
        "givenName": "Anaïs",
        "familyName": "Quixote",
        "email": "anais@school.example",
        "agentSourcedIds": "p1,p2",
        "grades": "07",
        "birthDate": "2014-03-04",
    },  # 2
    {"sourcedId": "st2", "role": "student", "givenName": "Bo", "agentSourcedIds": "p1"},  # 3
    {
        "sourcedId": "p1",
        "role": "parent",
        "givenName": "Carla",
        "familyName": "Quixote",
        "email": "carla@example.com",
        "agentSourcedIds": "st1,st2",
    },  # 4: both directions, one link each
    {"sourcedId": "p2", "role": "guardian", "email": "dan@example.com"},  # 5
    {"sourcedId": "t1", "role": "teacher", "email": "t@school.example"},  # 6: skipped
    {"sourcedId": "st3", "role": "student", "agentSourcedIds": "t1"},  # 7: the agent is no profile
    {"sourcedId": "st4", "role": "student", "agentSourcedIds": "ghost"},  # 8: unknown agent
    {"sourcedId": "st5", "role": "student", "agentSourcedIds": "st1"},  # 9: a student's agent is a student
    {"sourcedId": "", "role": "parent", "email": "x@example.com"},  # 10: sourcedId
    {"sourcedId": "p3", "role": "parent", "email": "not-an-address"},  # 11: email
    {"sourcedId": "p4", "status": "tobedeleted", "role": "parent"},  # 12: skipped
    {"sourcedId": "st6", "role": ""},  # 13: role
    {"sourcedId": "st7", "role": "student", "agentSourcedIds": "teen"},  # 14: the agent is a minor
]
ONEROSTER_REJECTED = [
    (7, "agentSourcedIds"),
    (8, "agentSourcedIds"),
    (9, "agentSourcedIds"),
    (10, "sourcedId"),
    (11, "email"),
    (13, "role"),
    (14, "agentSourcedIds"),
]

SDS = (
    "userSourcedId,relationshipUserSourcedId,relationshipRole,startDate\r\n"
    "k1,a1,Parent,\r\n"  # 2
    "k1,a2,guardian,\r\n"  # 3
    "k2,a1,relative,\r\n"  # 4: written only if k2's whole set can be
    "k2,a2,doctor,\r\n"  # 5: not a guardian role
    "k3,a1,parent,\r\n"  # 6: no such student
    "k4,teen,parent,\r\n"  # 7: the guardian is a minor
    ",a1,parent,\r\n"  # 8: userSourcedId
    "k1,k1,parent,\r\n"  # 9: their own guardian
)
SDS_REJECTED = [
    (5, "relationshipRole"),
    (6, "relationshipUserSourcedId"),
    (7, "relationshipUserSourcedId"),
    (8, "userSourcedId"),
    (9, "relationshipUserSourcedId"),
]


def _oneroster() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=ONEROSTER_HEADER.split(","), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(ONEROSTER_ROWS)
    return out.getvalue()


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        graph.run("CREATE (:Profile {profileId: 'teen', dob: '2015-06-01', tenants: ['default']})")
        yield client


def _headers(api: TrpcClient) -> dict[str, str]:
    token = mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    return {"authorization": f"Bearer {token}", "content-type": "text/csv"}


def _post(api: TrpcClient, path: str, body: str, **params: str) -> Any:
    answer = api.http.post(path, params=params, content=body.encode(), headers=_headers(api))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _graph(graph: Graph) -> dict[str, Any]:
    profiles = graph.run(
        "MATCH (p:Profile) OPTIONAL MATCH (p)-[:HAS_CONTACT_METHOD]->(m) "
        "RETURN p.profileId AS id, properties(p) AS props, collect(m.value) AS emails ORDER BY id"
    )
    links = graph.run(
        "MATCH (g)-[r:GUARDIAN_OF]->(m) RETURN g.profileId AS g, m.profileId AS m, properties(r) AS r "
        "ORDER BY g, m"
    )
    for p in profiles:
        p["props"].pop("campaignStateLock", None)
    return {"profiles": profiles, "links": links}


def _pairs(graph: Graph) -> list[tuple[str, str, str]]:
    return [(r["g"], r["m"], r["r"]["consent"]) for r in _graph(graph)["links"]]


def test_a_oneroster_file_names_every_broken_row_and_links_families(api: TrpcClient, graph: Graph) -> None:
    before = _graph(graph)
    dry = _post(api, "/imports/roster", _oneroster(), format="oneroster", dryRun="true")
    assert _graph(graph) == before  # a dry run writes nothing
    report = _post(api, "/imports/roster", _oneroster(), format="oneroster")
    assert [(r["line"], r["column"]) for r in report["rejected"]] == ONEROSTER_REJECTED, report["rejected"]
    assert report["rejectedCount"] == len(ONEROSTER_REJECTED) and all(r["reason"] for r in report["rejected"])
    assert "'teen' is a minor" in report["rejected"][-1]["reason"]
    assert (report["rows"], report["skipped"], report["created"], report["guardianLinks"]) == (13, 2, 8, 3)
    assert {k: dry[k] for k in ("rejected", "created", "guardianLinks")} == {
        k: report[k] for k in ("rejected", "created", "guardianLinks")
    }
    # Consent is not in the file: links are recorded revoked, never routed.
    assert _pairs(graph) == [("p1", "st1", "revoked"), ("p1", "st2", "revoked"), ("p2", "st1", "revoked")]
    stored = _graph(graph)
    st1 = next(p for p in stored["profiles"] if p["id"] == "st1")
    assert st1["emails"] == [] and st1["props"]["isManaged"] is True and st1["props"]["dob"] == "2014-03-04"
    assert next(p for p in stored["profiles"] if p["id"] == "p1")["emails"] == ["carla@example.com"]
    dumped = json.dumps(stored)
    assert not any(name in dumped for name in ("Anaïs", "Quixote", "Carla", "anais@")), (
        "no names, no pupil email"
    )
    assert stored["links"][0]["r"]["source"] == "oneroster"

    again = _post(api, "/imports/roster", _oneroster(), format="oneroster")  # idempotent, and says so
    assert (again["created"], again["updated"], again["unchanged"], again["guardianLinks"]) == (0, 0, 8, 0)
    assert again["rejectedCount"] == len(ONEROSTER_REJECTED)
    assert _graph(graph) == stored
    granted = _post(api, "/imports/roster", _oneroster(), format="oneroster", consentCollected="true")
    assert granted["guardianLinks"] == 3 and {c for _, _, c in _pairs(graph)} == {"granted"}
    assert _post(api, "/imports/roster", _oneroster(), format="oneroster")["guardianLinks"] == 0
    assert {c for _, _, c in _pairs(graph)} == {"granted"}  # a later import without consent keeps it
    verified = {
        "profileId": "p1",
        "emails": [{"address": "carla@example.com", "verified": True, "primary": True}],
    }
    ok(api.mutate("profiles.upsert", {"profiles": [verified]}, as_=ADMIN_ID, admin=True))
    _post(api, "/imports/roster", _oneroster(), format="oneroster")  # a roster never undoes a verification
    p1 = ok(api.query("profiles.get", {"profileId": "p1"}, as_=ADMIN_ID, admin=True))
    assert p1["emails"] == verified["emails"]


def test_an_sds_relationships_file_names_every_broken_row(api: TrpcClient, graph: Graph) -> None:
    rows = [{"profileId": k, "dob": "2015-01-01"} for k in ("k1", "k2", "k4")]
    rows += [{"profileId": a, "dob": "1980-01-01"} for a in ("a1", "a2")]
    ok(api.mutate("profiles.upsert", {"profiles": rows}, as_=ADMIN_ID, admin=True))
    before = _graph(graph)
    dry = _post(api, "/imports/roster", SDS, format="sds", dryRun="true")
    assert _graph(graph) == before and dry["guardianLinks"] == 3
    report = _post(api, "/imports/roster", SDS, format="sds")
    assert [(r["line"], r["column"]) for r in report["rejected"]] == SDS_REJECTED, report["rejected"]
    assert dry["rejected"] == report["rejected"]
    assert report["guardianLinks"] == 3 and report["rows"] == 8
    assert _pairs(graph) == [("a1", "k1", "revoked"), ("a1", "k2", "revoked"), ("a2", "k1", "revoked")]
    stored = _graph(graph)
    assert _post(api, "/imports/roster", SDS, format="sds")["guardianLinks"] == 0 and _graph(graph) == stored
    missing = api.http.post(
        "/imports/roster",
        params={"format": "sds"},
        content=b"userSourcedId,role\r\nk1,x\r\n",
        headers=_headers(api),
    )
    assert missing.status_code == 400 and "relationshipUserSourcedId" in missing.text


def test_the_csv_import_links_guardians_after_all_rows(api: TrpcClient, graph: Graph) -> None:
    body = (
        "profileId,dob,guardians\r\n"
        "kid1,2015-01-01,mum:granted;dad:revoked\r\n"  # 2: both created by later rows
        "kid2,2015-01-01,mum:maybe\r\n"  # 3: unreadable cell, the row is refused
        "kid3,2015-01-01,ghost:granted\r\n"  # 4: no such guardian
        "mum,1980-01-01,\r\n"
        "dad,,\r\n"
    )
    before = _graph(graph)
    dry = _post(api, "/imports/profiles", body, dryRun="true")
    assert _graph(graph) == before and dry["guardianLinks"] == 2
    report = _post(api, "/imports/profiles", body)
    assert [(r["line"], r["column"]) for r in report["rejected"]] == [(3, "guardians"), (4, "guardians")]
    assert dry["rejected"] == report["rejected"] and report["guardianLinks"] == 2
    assert _pairs(graph) == [("dad", "kid1", "revoked"), ("mum", "kid1", "granted")]
    assert _graph(graph)["links"][0]["r"]["source"] == "csv"
    assert _post(api, "/imports/profiles", body)["guardianLinks"] == 0


def test_a_row_refused_past_the_listed_thousand_links_no_guardian(api: TrpcClient, graph: Graph) -> None:
    """A row refused when its batch is written (its profileId is another tenant's) names a guardian after
    a thousand other refusals, so it is counted but not listed: it must still link nothing, and count once."""
    graph.run("CREATE (:Profile {profileId: 'foreign', dob: '2015-01-01', tenants: ['beta']})")
    token = mint_token(api.settings, profile_id="alpha-author", tenant_id="alpha", roles=["author"])
    body = "profileId,email,dob,guardians\r\n"
    body += "".join(f"bad{i:04d},nope,,\r\n" for i in range(1000))
    body += "foreign,,2015-01-01,mum:granted\r\nmum,,1980-01-01,\r\n"
    headers = {"authorization": f"Bearer {token}", "content-type": "text/csv"}
    answer = api.http.post("/imports/profiles", content=body.encode(), headers=headers)
    report = answer.json()
    assert answer.status_code == 200, answer.text
    assert (report["rejectedCount"], len(report["rejected"]), report["guardianLinks"]) == (1001, 1000, 0)
    assert _pairs(graph) == []


def test_the_command_line_prints_the_same_report(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    graph.run("CREATE (:Profile {profileId: 'teen', dob: '2015-06-01', tenants: ['default']})")
    path = tmp_path / "users.csv"
    path.write_text(_oneroster(), encoding="utf-8", newline="")
    env = {
        **os.environ,
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_ENV_FILE": "/dev/null",
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "campaign_engine.cli",
            "roster",
            "import",
            "--format",
            "oneroster",
            str(path),
            "--consent-collected",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1, run.stderr  # rows were rejected: a script notices
    report = json.loads(run.stdout)
    assert [(r["line"], r["column"]) for r in report["rejected"]] == ONEROSTER_REJECTED
    assert _pairs(graph) == [("p1", "st1", "granted"), ("p1", "st2", "granted"), ("p2", "st1", "granted")]
    [entry] = graph.run(
        "MATCH (a:AuditEntry {procedure: 'cli.roster.import', targetId: 'batch'}) "
        "WHERE a.detail CONTAINS 'guardianLinks' RETURN a.actor AS actor"
    )
    assert entry["actor"].startswith("cli:")


def test_rejections_are_all_counted_and_the_first_thousand_listed(api: TrpcClient, graph: Graph) -> None:
    body = "userSourcedId,relationshipUserSourcedId,relationshipRole\r\n" + "k1,a1,teacher\r\n" * 1005
    report = _post(api, "/imports/roster", body, format="sds")
    assert report["rejectedCount"] == 1005 and len(report["rejected"]) == 1000
    assert [r["line"] for r in report["rejected"]] == list(range(2, 1002))


def test_a_tenant_links_only_within_itself(api: TrpcClient, graph: Graph) -> None:
    graph.run(
        "CREATE (:Profile {profileId: 'k1', dob: '2015-01-01', tenants: ['alpha']}), "
        "(:Profile {profileId: 'a1', dob: '1980-01-01', tenants: ['alpha']}), "
        "(:Profile {profileId: 'b1', dob: '1980-01-01', tenants: ['beta']}), "
        "(:Profile {profileId: 'k9', dob: '2015-01-01', tenants: ['beta']})"
    )
    token = mint_token(api.settings, profile_id="alpha-author", scope="", tenant_id="alpha", roles=["author"])
    body = (
        "userSourcedId,relationshipUserSourcedId,relationshipRole\r\n"
        + "k1,a1,parent\r\nk9,a1,parent\r\nk1,b1,parent\r\n"
    )
    answer = api.http.post(
        "/imports/roster",
        params={"format": "sds"},
        content=body.encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "text/csv"},
    )
    report = answer.json()
    assert [r["line"] for r in report["rejected"]] == [3, 4]
    assert report["rejected"][0]["reason"] == "profile 'k9' not found"  # another tenant's: not named as such
    assert report["rejected"][1]["reason"].startswith("guardian 'b1' is not a profile of this tenant")
    assert report["guardianLinks"] == 0 and _pairs(graph) == []  # k1's set had a bad link: left as it was
    entries = graph.run("MATCH (a:AuditEntry {procedure: 'imports.roster'}) RETURN a.tenantId AS t")
    assert entries == []


def test_a_roster_that_stops_being_csv_keeps_the_rows_before_it(api: TrpcClient, graph: Graph) -> None:
    """Profiles are written as they are read, a batch at a time: where the file stops being CSV (here a
    field past the csv reader's 128 KiB limit) the rows before it are imported and the report says
    where reading stopped."""
    rows = [f"g{i:04d},guardian,g{i}@example.com" for i in range(1500)]  # more than one batch
    body = (
        "sourcedId,role,email\r\n"
        + "\r\n".join(rows)
        + "\r\nbad,guardian,"
        + "x" * 200_000
        + "\r\nlate,guardian,\r\n"
    )
    report = _post(api, "/imports/roster", body, format="oneroster")
    assert (report["created"], report["rejectedCount"]) == (1500, 1), report
    assert report["rejected"][0]["line"] == 1502 and "not CSV from here on" in report["rejected"][0]["reason"]
    [found] = graph.run("MATCH (p:Profile) WHERE p.profileId STARTS WITH 'g' RETURN count(p) AS n")
    assert found["n"] == 1500 and graph.run("MATCH (p:Profile {profileId: 'late'}) RETURN p") == []
