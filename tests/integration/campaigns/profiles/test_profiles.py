"""Profiles: batched idempotent upsert, read, delete and JSONL import against a real Neo4j."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.profiles.records import get_profile, import_jsonl
from campaign_engine.config import Settings
from campaign_engine.domain.errors import BadRequest
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import CAMPAIGN_AGE_OK, EMAIL_AGE_OK, TENANT_VIEW, policy_params
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


def upsert(api: TrpcClient, *profiles: dict[str, Any]) -> Any:
    return api.mutate("profiles.upsert", {"profiles": list(profiles)}, as_=ADMIN_ID, admin=True)


def get(api: TrpcClient, profile_id: str) -> Any:
    return api.query("profiles.get", {"profileId": profile_id}, as_=ADMIN_ID, admin=True)


def test_upsert_creates_then_updates_idempotently(api: TrpcClient) -> None:
    row = {
        "profileId": "p1",
        "did": "did:plc:abc",
        "dob": "2000-02-29",
        "locale": "fr-CA",
        "emails": [{"address": "a@example.org", "verified": True, "primary": True}],
        "tags": ["teachers", "beta"],
        "notificationsWebhook": "https://inbox.example.org/hook",
    }
    first = ok(upsert(api, row, {"profileId": "p2"}))
    assert [s["profileId"] for s in first.pop("webhookSecrets")] == ["p1"]  # its own receiver's secret
    assert first == {"created": 2, "updated": 0, "unchanged": 0, "missingConnections": 0, "guardianLinks": 0}
    again = {"created": 0, "updated": 0, "unchanged": 1, "missingConnections": 0, "guardianLinks": 0,
             "webhookSecrets": []}  # fmt: skip
    assert ok(upsert(api, row)) == again  # the same webhook keeps its secret: nothing answered
    profile = ok(get(api, "p1"))
    assert profile["tags"] == ["beta", "teachers"]
    assert profile["emails"] == [{"address": "a@example.org", "verified": True, "primary": True}]
    assert profile["announcementEmailOptOut"] is False


def test_omitted_lists_are_kept_and_provided_lists_replace(api: TrpcClient, graph: Graph) -> None:
    ok(upsert(api, {"profileId": "p1", "tags": ["a"], "emails": [{"address": "a@example.org"}]}))
    ok(upsert(api, {"profileId": "p1", "locale": "es"}))
    assert ok(get(api, "p1"))["tags"] == ["a"]
    ok(upsert(api, {"profileId": "p1", "tags": ["b"], "emails": []}))
    profile = ok(get(api, "p1"))
    assert (profile["tags"], profile["emails"]) == (["b"], [])
    assert graph.run("MATCH (m:ContactMethod) RETURN count(m) AS n")[0]["n"] == 0


# (field, a stored value, what profiles.get shows after an explicit null)
FIELDS: list[tuple[str, Any, Any]] = [
    ("did", "did:plc:kept", None),
    ("dob", "2012-05-01", None),
    ("locale", "fr-CA", None),
    ("isManaged", True, False),
    ("isServiceProfile", True, False),
    ("notificationsWebhook", "https://inbox.example.org/hook", None),
    ("timeZone", "Pacific/Kiritimati", None),
    ("emails", [{"address": "a@example.org", "verified": True, "primary": True}], []),
    ("tags", ["beta"], []),
    ("connections", ["friend"], []),
]


@pytest.mark.parametrize(("field", "value", "cleared"), FIELDS, ids=[f[0] for f in FIELDS])
def test_an_omitted_field_keeps_its_value_and_null_clears_it(
    api: TrpcClient, field: str, value: Any, cleared: Any
) -> None:
    ok(upsert(api, {"profileId": "friend"}, {"profileId": "p1", field: value}))
    other = ("tags", ["other"]) if field != "tags" else ("locale", "es")
    for row in (
        {"profileId": "p1"},
        {"profileId": "p1", other[0]: other[1]},
        {"profileId": "p1", other[0]: None},
    ):
        ok(upsert(api, row))
        assert ok(get(api, "p1"))[field] == value, row
    ok(upsert(api, {"profileId": "p1", field: None}))
    assert ok(get(api, "p1"))[field] == cleared


@pytest.mark.parametrize(("field", "value", "cleared"), FIELDS, ids=[f[0] for f in FIELDS])
def test_jsonl_import_changes_only_what_a_line_names(
    graph: Graph, base_settings: Settings, tmp_path: Path, field: str, value: Any, cleared: Any
) -> None:
    def run_import(*rows: dict[str, Any]) -> None:
        path = tmp_path / "profiles.jsonl"
        path.write_text("\n".join(json.dumps(row) for row in rows))
        with path.open() as lines:
            import_jsonl(graph, lines, secrets=base_settings.secret_box())

    def stored() -> Any:
        return get_profile(graph, "p1").model_dump(by_alias=True, mode="json")[field]

    run_import({"profileId": "friend"}, {"profileId": "p1", field: value})
    run_import({"profileId": "p1"})
    assert stored() == value
    run_import({"profileId": "p1", field: None})
    assert stored() == cleared


def test_an_upsert_that_omits_dob_and_flags_keeps_a_managed_minor_ineligible(
    api: TrpcClient, graph: Graph
) -> None:
    ok(upsert(api, {"profileId": "minor", "dob": "2015-01-01", "isManaged": True, "isServiceProfile": True}))
    graph.run("CREATE (:Campaign {id: 'strict', excludeMinors: true})")

    def eligibility() -> dict[str, Any]:
        return graph.run(
            f"MATCH (p:Profile {{profileId: 'minor'}}), (c:Campaign {{id: 'strict'}}) {TENANT_VIEW} "
            f"RETURN coalesce({CAMPAIGN_AGE_OK}, false) AS campaign, "
            f"coalesce({EMAIL_AGE_OK}, false) AS email",
            **policy_params(datetime(2026, 3, 1, tzinfo=UTC), 18),
        )[0]

    assert eligibility() == {"campaign": False, "email": False}
    ok(upsert(api, {"profileId": "minor", "locale": "es", "tags": ["beta"]}))
    assert eligibility() == {"campaign": False, "email": False}
    node = graph.run("MATCH (p:Profile {profileId: 'minor'}) RETURN p {.*} AS p")[0]["p"]
    assert (node["dob"], node["isManaged"], node["isServiceProfile"]) == ("2015-01-01", True, True)


def test_flags_are_stored_as_false_when_omitted_on_create_or_cleared(api: TrpcClient, graph: Graph) -> None:
    ok(
        upsert(
            api, {"profileId": "new"}, {"profileId": "cleared", "isManaged": True, "isServiceProfile": True}
        )
    )
    ok(upsert(api, {"profileId": "cleared", "isManaged": None, "isServiceProfile": None}))
    rows = graph.run(
        "MATCH (p:Profile) RETURN p.profileId AS id, p.isManaged AS managed, p.isServiceProfile AS service "
        "ORDER BY id"
    )
    assert rows == [
        {"id": "cleared", "managed": False, "service": False},
        {"id": "new", "managed": False, "service": False},
    ]


def test_an_upsert_never_touches_the_opt_outs(api: TrpcClient, graph: Graph) -> None:
    ok(upsert(api, {"profileId": "p1"}))
    graph.run("MATCH (p:Profile) SET p.announcementEmailOptOut = true, p.announcementPushOptOut = true")
    ok(upsert(api, {"profileId": "p1", "locale": None, "isManaged": None, "tags": None}))
    profile = ok(get(api, "p1"))
    assert (profile["announcementEmailOptOut"], profile["announcementPushOptOut"]) == (True, True)


def test_connections_link_existing_profiles_both_ways(api: TrpcClient) -> None:
    result = ok(upsert(api, {"profileId": "a", "connections": ["b", "ghost"]}, {"profileId": "b"}))
    assert result["missingConnections"] == 1
    assert ok(get(api, "b"))["connections"] == ["a"]


def test_invalid_row_names_its_index_and_writes_nothing(api: TrpcClient, graph: Graph) -> None:
    response = upsert(api, {"profileId": "ok"}, {"profileId": "bad", "dob": "2001-02-30"})
    assert error_code(response) == "BAD_REQUEST"
    paths = [issue["path"] for issue in response.json()["error"]["data"]["issues"]]
    assert ["profiles", 1, "dob"] in paths
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0


@pytest.mark.parametrize(
    "row",
    [
        {"profileId": "x", "emails": [{"address": "not-an-email"}]},
        {"profileId": "x", "notificationsWebhook": "ftp://example.org"},
        {"profileId": "x", "did": "plc:abc"},
        {"profileId": "has space"},
        {"profileId": "x", "tags": ["Upper"]},
        {"profileId": "x", "timeZone": "Mars/Olympus_Mons"},
        {"profileId": "x", "timeZone": "../../etc/passwd"},
        {"profileId": "x", "timeZone": "+01:00"},
    ],
)
def test_field_rules(api: TrpcClient, row: dict[str, Any]) -> None:
    assert error_code(upsert(api, row)) == "BAD_REQUEST"


def test_batch_limits_and_duplicate_ids(api: TrpcClient) -> None:
    assert error_code(upsert(api, *[{"profileId": f"p{i}"} for i in range(1001)])) == "BAD_REQUEST"
    assert error_code(upsert(api, {"profileId": "p"}, {"profileId": "p"})) == "BAD_REQUEST"


def test_a_did_taken_by_another_profile_rolls_back_the_batch(api: TrpcClient, graph: Graph) -> None:
    ok(upsert(api, {"profileId": "owner", "did": "did:plc:same"}))
    response = upsert(api, {"profileId": "new-1"}, {"profileId": "new-2", "did": "did:plc:same"})
    assert error_code(response) == "BAD_REQUEST"
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 1


def test_delete_removes_profile_and_its_campaign_edges(api: TrpcClient, graph: Graph) -> None:
    ok(upsert(api, {"profileId": "p1", "emails": [{"address": "a@example.org"}]}))
    graph.run(
        """
        MATCH (p:Profile {profileId: 'p1'})
        CREATE (c:Campaign {id: 'c'}), (p)-[:IN_CAMPAIGN_AUDIENCE]->(c), (p)-[:CAMPAIGN_STATE]->(c),
               (p)-[:CAMPAIGN_TEST]->(c)
        """
    )
    assert ok(api.mutate("profiles.delete", {"profileId": "p1"}, as_=ADMIN_ID, admin=True)) == {
        "deleted": True
    }
    counts = graph.run("MATCH (n) WHERE n:Profile OR n:ContactMethod RETURN count(n) AS n")[0]["n"]
    edges = graph.run("MATCH (:Campaign {id: 'c'})<-[r]-() RETURN count(r) AS n")[0]["n"]
    assert (counts, edges) == (0, 0)
    assert error_code(get(api, "p1")) == "NOT_FOUND"
    assert (
        error_code(api.mutate("profiles.delete", {"profileId": "p1"}, as_=ADMIN_ID, admin=True))
        == "NOT_FOUND"
    )


def test_jsonl_import_streams_batches(graph: Graph, tmp_path: Path) -> None:
    path = tmp_path / "profiles.jsonl"
    path.write_text("\n".join(json.dumps({"profileId": f"p{i:05d}", "tags": ["all"]}) for i in range(2500)))
    seen: list[int] = []
    with path.open() as lines:
        result = import_jsonl(graph, lines, batch_size=1000, progress=seen.append)
    assert (result.created, result.updated, seen) == (2500, 0, [1000, 1000, 500])
    assert graph.run("MATCH (:Profile)-[:HAS_TAG]->(:Tag {slug: 'all'}) RETURN count(*) AS n")[0]["n"] == 2500


def test_jsonl_import_names_the_bad_line(graph: Graph, tmp_path: Path) -> None:
    path = tmp_path / "profiles.jsonl"
    path.write_text('{"profileId": "a"}\n{"profileId": "b", "dob": "yesterday"}\n')
    with path.open() as lines, pytest.raises(BadRequest, match="line 2: dob"):
        import_jsonl(graph, lines)
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0


@pytest.mark.parametrize(
    ("webhook", "local_development", "extra_ports", "accepted"),
    [
        ("http://inbox.example.org/hook", False, frozenset(), False),  # plain http: production refuses
        ("http://127.0.0.1:8025/hook", True, frozenset(), True),  # make dev's inbox
        ("https://inbox.example.org:8443/hook", False, frozenset(), False),  # a port egress does not allow
        ("https://inbox.example.org:8443/hook", False, frozenset({8443}), True),  # CAMPAIGN_EGRESS_PORTS
        ("https://inbox.example.org/hook", False, frozenset(), True),
    ],
)
def test_a_receiver_url_must_be_one_egress_allows(
    base_settings: Settings,
    graph: Graph,
    webhook: str,
    local_development: bool,
    extra_ports: frozenset[int],
    accepted: bool,
) -> None:
    settings = base_settings.model_copy(
        update={"campaign_local_development": local_development, "campaign_egress_ports": extra_ports}
    )
    with api_client(settings, graph) as api:
        response = upsert(api, {"profileId": "ok"}, {"profileId": "r", "notificationsWebhook": webhook})
        if accepted:
            ok(response)
            return
        assert error_code(response) == "BAD_REQUEST"
        assert "profiles.1.notificationsWebhook" in response.json()["error"]["message"]
        assert webhook not in response.text  # the URL may carry a secret: never echoed
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0
