"""The matrix's rows for the tRPC procedures an admin of tenant A writes people with: every ``profiles.*``
procedure and every procedure naming people in its input (``paths.person_procedures``), each run by
every role of A and by A's API key against the people A shares with B (``matrix.check_row``).

The read matrix (no value A wrote in any answer B gets) runs after the rows, and ``profiles.delete``
last: it takes people out of A, whom the others write about.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.integration.profiles_isolation.matrix import Baseline, Row, check_row, module_world
from tests.support.api import ok
from tests.support.isolation import Credential, World, leaks, reseed, tenant_a_credentials
from tests.support.postmark_standin import PostmarkStandin
from tests.support.shared_people import CLUB_A, MARKERS, MINOR, PARENT, PEOPLE, SECRETS, A, a_rows

pytestmark = pytest.mark.xdist_group("profiles-isolation-procedures")


def _status(world: World, path: str, data: Any, credential: Credential) -> int:
    return int(world.call(path, data, credential.headers()).status_code)


def _upsert(world: World, credential: Credential) -> int:
    # Only an admin (or its key) may set a receiver and its secret: lower roles write every other field.
    rows = a_rows(world.receiver_url, route=credential.role == "admin")
    return _status(world, "profiles.upsert", {"profiles": rows}, credential)


def _a_sees_markers(world: World) -> bool:
    a = world.role(A, "admin")
    return all(leaks(world.read("profiles.get", {"profileId": pid}, a)) for pid in PEOPLE)


def _delete(world: World, credential: Credential) -> int:
    # The admin takes the parent out of A, the key the minor: two shared people, each deleted once.
    pid = MINOR if credential.api_key else PARENT
    return _status(world, "profiles.delete", {"profileId": pid}, credential)


def _rotate(world: World, credential: Credential) -> int:
    """A's admin gives the parent a receiver in A's view first: there is a secret of A's to rotate."""
    receiver = {"profileId": PARENT, "notificationsWebhook": f"{world.receiver_url}/alpha-marker/{PARENT}",
                "notificationsWebhookSecret": SECRETS["alpha-marker"]}  # fmt: skip
    ok(world.call("profiles.upsert", {"profiles": [receiver]}, world.role(A, "admin")))
    data = {"profileId": PARENT, "secret": SECRETS["alpha-marker-rotated"], "overlapSeconds": 0}
    return _status(world, "profiles.rotateWebhookSecret", data, credential)


def _audience(path: str) -> Row:
    def write(world: World, credential: Credential) -> int:
        source = {"type": "profileIds", "profileIds": list(PEOPLE)}
        return _status(world, path, {"campaignId": CLUB_A, "source": source}, credential)

    return Row(path, "author", write)


WRITE_ROWS = [
    Row("profiles.upsert", "author", _upsert, shows=_a_sees_markers),
    Row("profiles.rotateWebhookSecret", "admin", _rotate),
    _audience("campaigns.previewAudience"),
    _audience("campaigns.addAudience"),
    _audience("campaigns.removeAudience"),
]
DELETE = Row("profiles.delete", "admin", _delete)
COVERS = frozenset(row.path for row in [*WRITE_ROWS, DELETE])


@pytest.fixture(scope="module")
def world(
    base_settings: Settings,
    session_graph: Graph,
    standin: PostmarkStandin,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[World, Baseline]]:
    yield from module_world(base_settings, session_graph, standin, tmp_path_factory.mktemp("procedures"))


@pytest.mark.parametrize("row", WRITE_ROWS, ids=lambda row: row.path)
def test_a_write_by_every_role_of_a_leaves_b_as_it_was(world: tuple[World, Baseline], row: Row) -> None:
    shared, baseline = world
    check_row(shared, baseline, row, tenant_a_credentials(shared))


def test_no_answer_b_gets_holds_a_value_a_wrote(world: tuple[World, Baseline]) -> None:
    """The read matrix: A's admin writes every marked value about every shared person (A reads each
    back), and no answer B gets, no segment B previews and nothing B's send delivers holds any of them."""
    shared, _ = world
    admin = shared.role(A, "admin")
    ok(shared.call("profiles.upsert", {"profiles": a_rows(shared.receiver_url)}, admin))
    mine = {pid: shared.read("profiles.get", {"profileId": pid}, admin) for pid in PEOPLE}
    assert set(leaks(mine)) == set(MARKERS), "A does not read back what it wrote"
    seen = {name: leaks(answer) for name, answer in shared.b_answers().items()}
    seen |= {f"B's send: {channel}": leaks(sent) for channel, sent in shared.b_deliveries().items()}
    held = {name: markers for name, markers in seen.items() if markers}
    if held:
        reseed(shared)
    assert not held, "B's answers hold values A wrote:\n" + "\n".join(f"  {k}: {v}" for k, v in held.items())


def test_no_credential_of_a_changes_a_shared_persons_identity(world: tuple[World, Baseline]) -> None:
    """``did`` and ``isServiceProfile`` are the person's, read by every tenant (an audience by DID, the
    email age rule): a tenant credential sets them only on a person it creates (docs/people.md), so each
    credential of A naming other values for the shared people is refused and B reads them as before."""
    shared, baseline = world
    rows = [{"profileId": pid, "did": f"did:web:alpha-marker.example:{pid}", "isServiceProfile": True}
            for pid in PEOPLE]  # fmt: skip
    for credential in tenant_a_credentials(shared):
        answer = shared.call("profiles.upsert", {"profiles": rows}, credential.headers())
        assert answer.status_code == 403, (credential.name, answer.text)
        if credential.role in ("author", "publisher", "admin"):
            assert "set by a platform admin once they exist" in answer.text, (credential.name, answer.text)
    assert shared.b_answers() == baseline.answers
    # A person A creates takes A's identity facts; naming them again unchanged is no change.
    admin = shared.role(A, "admin")
    new = {"profileId": "alpha-new", "did": "did:web:alpha.example:new", "isServiceProfile": True}
    for _ in range(2):
        ok(shared.call("profiles.upsert", {"profiles": [new]}, admin))
    got = shared.read("profiles.get", {"profileId": "alpha-new"}, admin)
    assert (got["did"], got["isServiceProfile"]) == (new["did"], True)
    again = shared.call("profiles.upsert", {"profiles": [{**new, "did": None}]}, admin)
    assert again.status_code == 403, again.text


def test_a_delete_by_every_role_of_a_leaves_b_as_it_was(world: tuple[World, Baseline]) -> None:
    """Last: it takes the parent and the minor out of A, whom the rows above write about."""
    shared, baseline = world
    check_row(shared, baseline, DELETE, tenant_a_credentials(shared))
