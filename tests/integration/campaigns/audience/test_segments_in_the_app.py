"""Live segments where the rest of the product reads them: the app's card to each match and what they
do with it, the recipients export, and campaigns and tags saved before their keys were backfilled."""

from __future__ import annotations

import pytest

from campaign_engine.campaigns.audience.exports import recipient_rows
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.engagement.events import record_event
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.schema import apply_schema
from tests.support.delivery import (
    add_members,
    make_campaign,
)
from tests.support.segments import (
    _audience,
    _policy,
    _profiles,
    _segmented,
    _state,
    _tag,
)


def test_the_app_shows_a_live_segments_card_to_its_matches_and_records_what_they_do(graph: Graph) -> None:
    """getMyCampaigns evaluates a live in-app segment for its caller at read time (a tag given after
    the campaign went live shows the card at once), and recordEvent accepts the match's engagement."""
    _profiles(graph, ["m1", "m2", "kid"])
    _profiles(graph, ["other"], tenant="t2")
    _tag(graph, ["m1", "kid", "other"], "beta")
    graph.run("MATCH (p:Profile {profileId: 'kid'}) SET p.dob = '2015-01-01'")
    _segmented(graph, "seg", {"tag": "beta"}, channels=["inApp"], excludeMinors=True)
    make_campaign(graph, "plain", channels=["inApp"])
    add_members(graph, "plain", ["m1"])

    def cards(profile_id: str, service: EngagementService | None = None) -> list[str]:
        if service is not None:
            found = service.my_campaigns(profile_id=profile_id)
        else:
            found = my_campaigns(graph, profile_id=profile_id, include_tests=False, policy=_policy())
        return sorted(card.campaign_id for card in found.campaigns)

    assert cards("m1") == ["plain", "seg"]
    assert cards("m2") == []
    assert cards("kid") == []  # the age policy holds for matches as for members
    assert cards("other") == []  # tagged, but in another tenant
    _tag(graph, ["m2"], "beta")  # tagged after going live: seen on the next read
    service = EngagementService(graph, policy=_policy)  # the API's batched reads, on an autocommit session
    try:
        assert cards("m2", service) == ["seg"]
        recorded = service.record_event(profile_id="m2", campaign_id="seg", event="shown", action_id=None,
                                        test_id=None)  # fmt: skip
        assert recorded.recorded and recorded.state is not None and recorded.state.shown_count == 1
        with pytest.raises(NotFound):  # a match the age policy refuses has nothing to engage with
            record_event(graph, profile_id="kid", campaign_id="seg", event="shown", action_id=None,
                         test_id=None, policy=_policy())  # fmt: skip
        (card,) = service.my_campaigns(profile_id="m2").campaigns
        assert card.state is not None and card.state.shown_count == 1
    finally:
        service.close()
    with pytest.raises(NotFound):
        record_event(graph, profile_id="other", campaign_id="seg", event="shown", action_id=None,
                     test_id=None, policy=_policy())  # fmt: skip


def test_the_recipients_export_of_a_segment_holds_members_matches_and_those_reached_before(
    graph: Graph,
) -> None:
    """One row each, in profileId order across pages: a static member, a match now, and one the
    campaign reached while they matched who has lost the tag (the rows getStats counts)."""
    _profiles(graph, ["a", "b", "c", "d", "e"])
    _tag(graph, ["b", "c", "e"], "beta")
    _segmented(graph, "c1", {"tag": "beta"})
    add_members(graph, "c1", ["a", "b"])
    _state(graph, "c1", "d", notifiedAt="2026-02-01T00:00:00.000000Z")  # reached, then untagged
    _state(graph, "c1", "e", notifiedAt="2026-02-01T00:00:00.000000Z")
    rows = list(recipient_rows(graph, campaign_id="c1", policy=_policy(), page=2))
    assert [(r["profileId"], r["source"]) for r in rows] == [
        ("a", "test"), ("b", "test"), ("c", "segment"), ("d", "reached"), ("e", "segment")
    ]  # fmt: skip
    notified = sum(1 for r in rows if r["notifiedAt"] is not None)
    assert notified == get_stats(graph, campaign_id="c1", policy=_policy()).notified == 2


def test_the_export_says_segment_for_whom_the_audience_holds_now(graph: Graph) -> None:
    """A row is a match now when the audience page holds it: someone the campaign reached who still
    carries the tag but has left the campaign's tenant is no member of its audience, so 'reached'."""
    _profiles(graph, ["f", "g"])
    _tag(graph, ["f", "g"], "beta")
    _segmented(graph, "c1", {"tag": "beta"})
    _state(graph, "c1", "f", notifiedAt="2026-02-01T00:00:00.000000Z")
    graph.run("MATCH (p:Profile {profileId: 'f'}) SET p.tenants = ['other']")
    rows = list(recipient_rows(graph, campaign_id="c1", policy=_policy(), page=1))
    assert [(r["profileId"], r["source"]) for r in rows] == [("f", "reached"), ("g", "segment")]
    assert _audience(graph, "c1") == ["g"]


def test_segment_campaigns_and_tags_saved_before_their_keys_are_backfilled(graph: Graph) -> None:
    _profiles(graph, ["m1"])
    _tag(graph, ["m1"], "beta")
    _segmented(graph, "seg", {"tag": "beta"}, channels=["inApp"], message={"title": 'A "segment": quoted'})
    make_campaign(graph, "plain", channels=["inApp"], message={"title": 'Not a "segment": rule'})
    graph.run("MATCH (c:Campaign) REMOVE c.hasSegment")  # as the release before them saved them
    graph.run("MATCH ()-[g:HAS_TAG]->() REMOVE g.slug, g.profileId")
    graph.run("MATCH (m:SchemaMigration) WHERE m.name IN ['campaign_has_segment', 'has_tag_keys'] DELETE m")
    assert _audience(graph, "seg") == []  # the tag seek reads the keys
    apply_schema(graph)
    assert _audience(graph, "seg") == ["m1"]
    flags = graph.run("MATCH (c:Campaign) RETURN c.id AS id, c.hasSegment AS has ORDER BY id")
    assert [(r["id"], r["has"]) for r in flags] == [("plain", False), ("seg", True)]
    found = my_campaigns(graph, profile_id="m1", include_tests=False, policy=_policy())
    assert [card.campaign_id for card in found.campaigns] == ["seg"]
