"""Every profile has its campaignUnsubscribeId before its first email: allocated when
the profile is created, and by the schema backfill for profiles made before that, so the email claim
never pays the unique-index insert. An id, once given, never changes: links already sent carry it.

Real Neo4j.
"""

from __future__ import annotations

from campaign_engine.campaigns.profiles.records import upsert_profiles
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema


def _ids(graph: Graph) -> dict[str, str | None]:
    rows = graph.run("MATCH (p:Profile) RETURN p.profileId AS pid, p.campaignUnsubscribeId AS uid")
    return {row["pid"]: row["uid"] for row in rows}


def test_a_created_profile_gets_its_id_and_an_update_keeps_it(graph: Graph) -> None:
    upsert_profiles(
        graph,
        ProfileUpsert.model_validate({"profiles": [{"profileId": "p1"}, {"profileId": "p2"}]}),
        tenant_id="default",
    )
    first = _ids(graph)
    assert all(first.values()), first
    assert first["p1"] != first["p2"]
    one = ProfileUpsert.model_validate({"profiles": [{"profileId": "p1", "locale": "fr"}]})
    upsert_profiles(graph, one, tenant_id="default")
    assert _ids(graph) == first


def test_the_backfill_gives_older_profiles_an_id_once_and_keeps_every_existing_one(graph: Graph) -> None:
    graph.run("UNWIND range(1, 25) AS i CREATE (:Profile {profileId: 'old' + toString(i)})")
    graph.run("CREATE (:Profile {profileId: 'has-one', campaignUnsubscribeId: 'kept-id'})")
    apply_schema(graph)  # the graph fixture removed the backfill's marker with everything else
    ids = _ids(graph)
    assert all(ids.values()), ids
    assert len(set(ids.values())) == len(ids)
    assert ids["has-one"] == "kept-id"
    # Done once: later starts skip the scan (profiles are created with their id since).
    graph.run("CREATE (:Profile {profileId: 'raw-later'})")
    apply_schema(graph)
    after = _ids(graph)
    assert after.pop("raw-later") is None
    assert after == ids
