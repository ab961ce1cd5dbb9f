"""Unsubscribing end to end, the real app over a real Neo4j: a link survives archive, delete and a profile
rename, a deleted profile's link does nothing, and unsubscribe ids are allocated once."""

from __future__ import annotations

from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.optout import ensure_unsubscribe_ids
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, ok
from tests.support.concurrency import at_once
from tests.support.unsubscribe import (
    SECRET,
    UID,
    _one_click,
    _profile,
    _state,
)

# --- identity: campaigns, renames, deletions -------------------------------------------------------


def _create_campaign(api: TrpcClient, campaign_id: str) -> None:
    ok(
        api.mutate(
            "campaigns.create",
            {
                "id": campaign_id,
                "name": "News",
                "channels": ["notify"],
                "notification": {"title": "T", "body": "B"},
            },
            as_=ADMIN_ID,
            admin=True,
        )
    )


def test_link_keeps_working_after_archive_and_delete(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    _create_campaign(api, "c-archived")
    _create_campaign(api, "c-deleted")
    ok(
        api.mutate(
            "campaigns.setStatus",
            {"campaignId": "c-archived", "status": "archived"},
            as_=ADMIN_ID,
            admin=True,
        )
    )
    ok(api.mutate("campaigns.delete", {"campaignId": "c-deleted"}, as_=ADMIN_ID, admin=True))
    assert graph.run("MATCH (c:Campaign {id: 'c-deleted'}) RETURN c") == []
    assert _one_click(api, token).status_code == 200
    assert _state(graph)["optOut"] is True


def test_link_survives_profile_rename(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    ok(
        api.mutate(
            "profiles.upsert",
            {
                "profiles": [
                    {
                        "profileId": "p1",
                        "did": "did:plc:renamed",
                        "locale": "fr",
                        "emails": [{"address": "new.name@example.net", "verified": True, "primary": True}],
                    }
                ]
            },
            as_=ADMIN_ID,
            admin=True,
        )
    )
    assert _state(graph)["uid"] == UID  # the upsert never touches the unsubscribe id
    response = api.http.post("/campaigns/unsubscribe/browser", params={"token": token})
    assert response.status_code == 200
    assert _state(graph)["optOut"] is True


def test_deleted_profile_link_does_nothing_and_never_transfers(
    api: TrpcClient, graph: Graph, token: str
) -> None:
    _profile(graph)
    _profile(graph, "bystander", unsubscribe_id="other-id")
    alive = _one_click(api, UnsubscribeTokens(SECRET).issue("never-allocated"))

    ok(api.mutate("profiles.delete", {"profileId": "p1"}, as_=ADMIN_ID, admin=True))
    gone = _one_click(api, token)
    assert gone.status_code == 200
    assert gone.text == alive.text  # no answer reveals whether the profile exists
    assert graph.run("MATCH (p:Profile {campaignUnsubscribeId: $uid}) RETURN p", uid=UID) == []

    # The same profileId comes back: it gets a fresh id, and the old link cannot reach it.
    ok(api.mutate("profiles.upsert", {"profiles": [{"profileId": "p1"}]}, as_=ADMIN_ID, admin=True))
    ids = graph.write(ensure_unsubscribe_ids, ["p1"])
    assert ids["p1"] != UID
    for response in (
        _one_click(api, token),
        api.http.post("/campaigns/unsubscribe/browser", params={"token": token}),
        api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": token}),
    ):
        assert response.status_code == 200
    assert _state(graph)["optOut"] is False
    assert _state(graph, "bystander")["optOut"] is False
    # ... while a link issued for the new id works.
    assert _one_click(api, UnsubscribeTokens(SECRET).issue(ids["p1"])).status_code == 200
    assert _state(graph)["optOut"] is True


def test_ensure_unsubscribe_ids_keeps_existing_ids(graph: Graph) -> None:
    _profile(graph, "a", unsubscribe_id="kept-id")
    _profile(graph, "b", unsubscribe_id=None)
    _profile(graph, "c", unsubscribe_id=None)
    first = graph.write(ensure_unsubscribe_ids, ["c", "b", "a", "missing", "b"])
    assert set(first) == {"a", "b", "c"}
    assert first["a"] == "kept-id"
    assert len(set(first.values())) == 3
    assert graph.write(ensure_unsubscribe_ids, ["a", "b", "c"]) == first


def _allocate_concurrently(graph: Graph, ids: list[str]) -> list[dict[str, str]]:
    return at_once(lambda order: graph.write(ensure_unsubscribe_ids, order), [(ids,), (ids[::-1],)])


def test_concurrent_allocations_agree_on_one_id(graph: Graph) -> None:
    """Two claims allocating at once for the same profiles: both must see the one id that was stored."""
    for round_ in range(10):
        ids = [f"r{round_}-a", f"r{round_}-b"]
        for pid in ids:
            _profile(graph, pid, unsubscribe_id=None)
        results = _allocate_concurrently(graph, ids)
        stored = {pid: _state(graph, pid)["uid"] for pid in ids}
        assert results == [stored, stored]
