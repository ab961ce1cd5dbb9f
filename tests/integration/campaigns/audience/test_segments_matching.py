"""What a live segment matches, against real Neo4j: the rules (engagement, seeks, the tenant boundary,
member-of cycles, the age policy), previewSegment's count against an independent Cypher count, and
explain's verdict per condition."""

from __future__ import annotations

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.members import get_audience
from campaign_engine.campaigns.audience.segments import preview_segment
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.domain.campaign import CampaignCreate, CampaignPatch
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.segment import Segment
from campaign_engine.graph.graph import Graph
from tests.support.delivery import (
    NOW,
    add_members,
    make_campaign,
)
from tests.support.segments import (
    DISPATCH_SETTINGS,
    _audience,
    _plan_statement,
    _policy,
    _profiles,
    _segmented,
    _state,
    _tag,
)


def test_remind_those_who_did_not_see_it_is_member_of_and_not_engaged(graph: Graph) -> None:
    _profiles(graph, ["a", "b", "c", "d"])
    make_campaign(graph, "launch", channels=["inApp"])
    add_members(graph, "launch", ["a", "b", "c"])
    _state(graph, "launch", "a", shownFirstAt="2026-02-01T00:00:00.000000Z")
    _state(graph, "launch", "b", emailClickedAt="2026-02-01T00:00:00.000000Z")
    reminder = {
        "all": [{"memberOf": "launch"}, {"engaged": {"campaignId": "launch", "event": "shown"}, "not": True}]
    }
    _segmented(graph, "reminder", reminder)
    assert _audience(graph, "reminder") == ["b", "c"]
    assert get_stats(graph, campaign_id="reminder", policy=_policy()).audience == 2
    assert (
        preview_dispatch(graph, campaign_id="reminder", now=NOW, settings=DISPATCH_SETTINGS).recipient_count
        == 2
    )
    counted = preview_segment(graph, segment=Segment.model_validate(reminder), tenant_id="default", now=NOW,
                              adult_age=18)  # fmt: skip
    assert counted.matches == 2
    clicked = {"engaged": {"campaignId": "launch", "event": "emailClicked"}}
    assert preview_segment(graph, segment=Segment.model_validate(clicked), tenant_id="default", now=NOW,
                           adult_age=18).matches == 1  # fmt: skip
    # memberOf a campaign that is itself a segment: its matches count as its audience
    _tag(graph, ["d"], "beta")
    _segmented(graph, "tagged", {"tag": "beta"})
    _segmented(graph, "over", {"memberOf": "tagged"})
    assert _audience(graph, "over") == ["d"]
    assert get_stats(graph, campaign_id="over", policy=_policy()).audience == 1


def test_get_audience_tells_static_members_from_segment_matches(graph: Graph) -> None:
    """The console offers removal only where removeAudience can remove: a static member (one who also
    matches is still one), never a match of the rule alone; a campaign without a segment has members only."""
    _profiles(graph, ["a", "b", "c"])
    _tag(graph, ["b", "c"], "beta")
    _segmented(graph, "mixed", {"tag": "beta"})
    add_members(graph, "mixed", ["a", "c"])
    make_campaign(graph, "plain")
    add_members(graph, "plain", ["b"])

    def marked(campaign_id: str) -> list[tuple[str, bool]]:
        page = get_audience(graph, campaign_id=campaign_id, cursor=None, limit=10, policy=_policy())
        return [(r.profile_id, r.member) for r in page.records]

    assert marked("mixed") == [("a", True), ("b", False), ("c", True)]
    assert marked("plain") == [("b", True)]


def test_a_profile_reached_twice_by_a_seek_is_one_member_and_no_match_is_skipped(graph: Graph) -> None:
    _profiles(graph, ["hub", "a", "b", "c"])
    graph.run(  # connections stored both ways: the seek reaches each profile twice
        "MATCH (h:Profile {profileId: 'hub'}), (p:Profile) WHERE p.profileId IN ['a', 'b', 'c'] "
        "CREATE (h)-[:CONNECTED_WITH]->(p), (p)-[:CONNECTED_WITH]->(h)"
    )
    _segmented(graph, "c1", {"connectedTo": "hub"})
    add_members(graph, "c1", ["z"])
    assert _audience(graph, "c1", limit=1) == ["a", "b", "c", "z"]
    text, params = _plan_statement(graph, "c1")
    page = graph.driver.execute_query(text, {**params, "limit": 3}, database_=graph.database).records[0]
    assert (page["read"], page["last"]) == (3, "c")  # a page of a, b, c: never a, b, z skipping c


def test_the_tenant_boundary_holds_for_matches_and_references(graph: Graph) -> None:
    _profiles(graph, ["a1", "a2"])
    _profiles(graph, ["x1"], tenant="other")
    _tag(graph, ["a1", "x1"], "beta")
    make_campaign(graph, "theirs", tenant_id="other")
    _segmented(graph, "mine", {"tag": "beta"})
    assert _audience(graph, "mine") == ["a1"]
    assert (
        preview_dispatch(graph, campaign_id="mine", now=NOW, settings=DISPATCH_SETTINGS).recipient_count == 1
    )
    for segment, path in [
        ({"memberOf": "theirs"}, "segment.memberOf"),
        ({"all": [{"tag": "beta"}, {"engaged": {"campaignId": "theirs", "event": "shown"}}]},
         "segment.all.1.engaged.campaignId"),
    ]:  # fmt: skip
        with pytest.raises(BadRequest, match=path.replace(".", r"\.")) as refused:
            make_campaign(graph, "refused", segment=segment)
        assert refused.value.issues and refused.value.issues[0]["path"] == path.split(".")[:1] + [
            int(p) if p.isdigit() else p for p in path.split(".")[1:]
        ]
        with pytest.raises(BadRequest):
            preview_segment(graph, segment=Segment.model_validate(segment), tenant_id="default", now=NOW,
                            adult_age=18)  # fmt: skip
    assert graph.run("MATCH (c:Campaign {id: 'refused'}) RETURN count(c) AS n")[0]["n"] == 0


def test_a_member_of_cycle_is_refused_naming_the_path(graph: Graph) -> None:
    _profiles(graph, ["a1"])
    _tag(graph, ["a1"], "beta")
    _segmented(graph, "one", {"tag": "beta"})
    _segmented(graph, "two", {"memberOf": "one"})
    patch = CampaignPatch.model_validate({"campaignId": "one", "segment": {"memberOf": "two"}})
    with pytest.raises(BadRequest, match=r"segment\.memberOf: .*cycle"):
        definitions.update_campaign(graph, patch=patch, now=NOW)


def test_an_age_condition_the_age_policy_leaves_nobody_to_match_is_refused(graph: Graph) -> None:
    minors = {"all": [{"tag": "beta"}, {"ageBelow": 16}]}
    data = {"id": "kids", "name": "Kids", "channels": ["inApp"], "message": {"title": "Hi"}}
    data["segment"] = minors
    with pytest.raises(BadRequest, match=r"segment\.all\.1\.ageBelow: the campaign excludes minors"):
        definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default",
                                    now=NOW, adult_age=18)  # fmt: skip
    allowed = CampaignCreate.model_validate({**data, "excludeMinors": False})
    definitions.create_campaign(graph, data=allowed, tenant_id="default", now=NOW, adult_age=18)
    adults = CampaignCreate.model_validate({**data, "id": "grown", "segment": {"all": [{"tag": "beta"},
                                            {"not": {"ageBelow": 18}}]}})  # fmt: skip
    definitions.create_campaign(graph, data=adults, tenant_id="default", now=NOW, adult_age=18)


_INDEPENDENT = """
MATCH (p:Profile) WHERE 'default' IN coalesce(p.tenants, [])
  AND (EXISTS { (p)-[:HAS_TAG]->(:Tag {slug: 'beta'}) } OR p.locale = 'fr' OR p.locale STARTS WITH 'fr-')
  AND NOT coalesce(p.timeZone = 'Europe/Paris', false)
  AND (p.dob IS NULL OR p.dob <= '2008-03-01')
RETURN count(p) AS n
"""


def test_preview_segment_counts_what_an_independent_cypher_count_finds(graph: Graph) -> None:
    rows = []
    for i in range(60):
        rows.append({
            "profileId": f"p{i:03d}", "tenants": ["default" if i % 7 else "other"],
            "locale": ["fr", "fr-CA", "fry", "en"][i % 4], "timeZone": ["Europe/Paris", "UTC", None][i % 3],
            "dob": [None, "1990-05-01", "2012-01-01", "2008-03-01", "2008-03-02"][i % 5],
        })  # fmt: skip
    graph.run(
        "UNWIND $rows AS r CREATE (p:Profile) SET p = r",
        rows=[{k: v for k, v in r.items() if v is not None} for r in rows],
    )
    _tag(graph, [f"p{i:03d}" for i in range(0, 60, 3)], "beta")
    segment = {
        "all": [
            {"any": [{"tag": "beta"}, {"locale": "fr"}]},
            {"timeZone": "Europe/Paris", "not": True},
            {"not": {"ageBelow": 18}},
        ]
    }
    expected = graph.run(_INDEPENDENT)[0]["n"]
    assert expected > 5
    counted = preview_segment(graph, segment=Segment.model_validate(segment), tenant_id="default", now=NOW,
                              adult_age=18)  # fmt: skip
    assert counted.matches == expected
    lone = Segment.model_validate({"all": [{"timeZone": "UTC"}]})  # a seek that is the whole rule
    assert preview_segment(graph, segment=lone, tenant_id="default", now=NOW, adult_age=18).matches == sum(
        1 for r in rows if r["timeZone"] == "UTC" and r["tenants"] == ["default"]
    )


def test_explain_gives_each_condition_its_verdict(graph: Graph) -> None:
    _profiles(graph, ["a", "b"], locale="es-MX")
    make_campaign(graph, "launch", channels=["inApp"])
    add_members(graph, "launch", ["a", "b"])
    _state(graph, "launch", "a", shownFirstAt="2026-02-01T00:00:00.000000Z")
    unseen_rule = {"engaged": {"campaignId": "launch", "event": "shown"}, "not": True}
    reminder = {"all": [{"memberOf": "launch"}, unseen_rule, {"any": [{"locale": "es"}, {"tag": "vip"}]}]}
    _segmented(graph, "reminder", reminder)
    seen = explain_recipient(graph, campaign_id="reminder", profile_id="a", now=NOW, adult_age=18)
    unseen = explain_recipient(graph, campaign_id="reminder", profile_id="b", now=NOW, adult_age=18)
    assert seen.segment is not None and unseen.segment is not None
    verdicts = {c.path: (c.condition, c.holds, c.ok) for c in seen.segment.conditions}
    assert verdicts == {
        "all.0": ("memberOf", True, True),
        "all.1": ("engaged", True, False),
        "all.2.any.0": ("locale", True, True),
        "all.2.any.1": ("tag", False, False),
    }
    assert not seen.segment.matched and unseen.segment.matched
    assert unseen.member and unseen.member_source == "segment"
    assert not seen.member and seen.channels[0].blocked_by == "not_member"
