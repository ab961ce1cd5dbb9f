"""The matrix's rows for the file imports: the profiles CSV and both roster formats over HTTP (every role
of tenant A and A's API key), and the command line's ``profiles import`` (JSONL and CSV) and
``roster import`` run as a process with each of those credentials (``--token``), each against the people
A shares with B. Without ``--token`` the command acts as the platform, which writes the shared facts
every tenant reads where it wrote none of its own (docs/people.md): no tenant's write, so no row here."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import TEST_JWT_SECRET, TEST_SECRETS_KEY
from tests.integration.profiles_isolation.matrix import Baseline, Row, check_row, module_world
from tests.support.isolation import Credential, World, leaks, tenant_a_credentials
from tests.support.postmark_standin import PostmarkStandin
from tests.support.shared_people import DECLINED, MINOR, PEOPLE, A, a_rows

pytestmark = pytest.mark.xdist_group("profiles-isolation-imports")

_CSV_COLUMNS = ("profileId", "email", "emailVerified", "dob", "locale", "timeZone", "tags", "guardians")


def _profiles_csv(receiver: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(_CSV_COLUMNS)
    for row in a_rows(receiver, route=False):
        guardians = ";".join(f"{g['profileId']}:{g['consent']}" for g in row.get("guardians", []))
        writer.writerow([row["profileId"], row["emails"][0]["address"], "true", row["dob"], row["locale"],
                         row["timeZone"], ";".join(row["tags"]), guardians])  # fmt: skip
    return out.getvalue()


# A's roster: the minor's one guardian is B's declined adult, with consent collected (granted in A).
_ONEROSTER = (
    "sourcedId,status,role,email,agentSourcedIds,birthDate\n"
    f"{MINOR},active,student,,{DECLINED},\n"
    f"{DECLINED},active,guardian,{DECLINED}@alpha-marker.example,{MINOR},\n"
)
_SDS = f"userSourcedId,relationshipUserSourcedId,relationshipRole\n{MINOR},{DECLINED},parent\n"


def _a_sees_markers(world: World) -> bool:
    a = world.role(A, "admin")
    return all(leaks(world.read("profiles.get", {"profileId": pid}, a)) for pid in PEOPLE)


def _a_sees_declined_granted(world: World) -> bool:
    minor = world.read("profiles.get", {"profileId": MINOR}, world.role(A, "admin"))
    return {"profileId": DECLINED, "consent": "granted"} in minor["guardians"]


Body = Callable[[World, Credential], str]


def _http(route: str, body: Body) -> Callable[[World, Credential], int]:
    def write(world: World, credential: Credential) -> int:
        headers = {**credential.headers(), "content-type": "text/csv"}
        answer = world.api.http.post(route, content=body(world, credential).encode(), headers=headers)
        return (
            int(answer.status_code)
            if answer.status_code != 200 or not answer.json()["rejectedCount"]
            else 422
        )

    return write


def _cli(args: list[str], body: Body, suffix: str) -> Callable[[World, Credential], int]:
    """The command as a process on the test's Neo4j, with the credential's token (``--token -``, read
    from standard input) in tenant A: 200 when it exits 0, 403 when it refuses the credential."""

    def write(world: World, credential: Credential) -> int:
        file = Path(world.settings.campaign_local_queue_path).parent / f"a-file{suffix}"
        file.write_text(body(world, credential), encoding="utf-8")
        settings = world.settings
        env = {
            **os.environ, "NEO4J_URI": settings.neo4j_uri, "NEO4J_USER": settings.neo4j_user,
            "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value() if settings.neo4j_password else "",
            "CAMPAIGN_SECRETS_KEY": TEST_SECRETS_KEY, "AUTH_JWT_SECRET": TEST_JWT_SECRET,
            "CAMPAIGN_ENV_FILE": "",
        }  # fmt: skip
        token = credential.headers()["authorization"].removeprefix("Bearer ")
        command = [
            sys.executable,
            "-m",
            "campaign_engine.cli",
            *args,
            "--tenant",
            A,
            "--token",
            "-",
            str(file),
        ]
        done = subprocess.run(
            command, input=token + "\n", env=env, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode == 0:
            return 200
        if "does not hold" in done.stderr or "not accepted" in done.stderr:
            return 403
        print(done.stdout, done.stderr)
        return 500

    return write


def _jsonl(world: World, credential: Credential) -> str:
    rows = a_rows(world.receiver_url, route=credential.role == "admin")
    return "".join(json.dumps(row) + "\n" for row in rows)


def _csv(world: World, credential: Credential) -> str:
    return _profiles_csv(world.receiver_url)


def _constant(text: str) -> Body:
    return lambda world, credential: text


HTTP_ROWS = [
    Row("POST /imports/profiles", "author", _http("/imports/profiles", _csv), shows=_a_sees_markers),
    Row("POST /imports/roster?format=oneroster", "author",
        _http("/imports/roster?format=oneroster&consentCollected=true", _constant(_ONEROSTER)),
        shows=_a_sees_declined_granted),
    Row("POST /imports/roster?format=sds", "author",
        _http("/imports/roster?format=sds&consentCollected=true", _constant(_SDS)),
        shows=_a_sees_declined_granted),
]  # fmt: skip
_ROSTER = ["roster", "import", "--consent-collected", "--format"]
CLI_ROWS = [
    Row("profiles import FILE.jsonl", "author", _cli(["profiles", "import"], _jsonl, ".jsonl"),
        shows=_a_sees_markers),
    Row("profiles import FILE.csv", "author", _cli(["profiles", "import"], _csv, ".csv"),
        shows=_a_sees_markers),
    Row("roster import --format oneroster", "author",
        _cli([*_ROSTER, "oneroster"], _constant(_ONEROSTER), ".csv"), shows=_a_sees_declined_granted),
    Row("roster import --format sds", "author",
        _cli([*_ROSTER, "sds"], _constant(_SDS), ".csv"), shows=_a_sees_declined_granted),
]  # fmt: skip
COVERS_HTTP = frozenset(row.path.split("?")[0] for row in HTTP_ROWS)
COVERS_CLI = frozenset(" ".join(row.path.split()[:2]) for row in CLI_ROWS)


@pytest.fixture(scope="module")
def world(
    base_settings: Settings,
    session_graph: Graph,
    standin: PostmarkStandin,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[World, Baseline]]:
    yield from module_world(base_settings, session_graph, standin, tmp_path_factory.mktemp("imports"))


@pytest.mark.parametrize("row", HTTP_ROWS, ids=lambda row: row.path)
def test_an_http_import_by_every_role_of_a_leaves_b_as_it_was(
    world: tuple[World, Baseline], row: Row
) -> None:
    shared, baseline = world
    check_row(shared, baseline, row, tenant_a_credentials(shared))


@pytest.mark.parametrize("row", CLI_ROWS, ids=lambda row: row.path)
def test_a_command_line_import_for_a_leaves_b_as_it_was(world: tuple[World, Baseline], row: Row) -> None:
    shared, baseline = world
    check_row(shared, baseline, row, tenant_a_credentials(shared))
