"""Live segments against real Neo4j and the real local queue: evaluated at send time, on every
page; the tenant boundary, the preview token, previewSegment's count and explain's verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.exports import recipient_rows
from campaign_engine.campaigns.audience.members import get_audience
from campaign_engine.campaigns.audience.segments import preview_segment
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.engagement.events import record_event
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate, CampaignPatch
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound
from campaign_engine.domain.segment import Segment
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy, policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query
from campaign_engine.graph.schema import apply_schema
from campaign_engine.queue.port import Queue
from campaign_engine.wiring import Queues, build_page_worker, build_worker
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
)
from tests.support.plans import operators

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

HOOK = "http://127.0.0.1:9/hook"


def _profiles(graph: Graph, ids: list[str], *, tenant: str = "default", **props: Any) -> None:
    graph.run(
        "UNWIND $ids AS id MERGE (p:Profile {profileId: id}) "
        "SET p.tenants = [$tenant], p.notificationsWebhook = $hook, p += $props",
        ids=ids, tenant=tenant, hook=HOOK, props=props,
    )  # fmt: skip


def _tag(graph: Graph, ids: list[str], slug: str) -> None:
    graph.run(
        "MERGE (t:Tag {slug: $slug}) WITH t UNWIND $ids AS id MATCH (p:Profile {profileId: id}) "
        "MERGE (p)-[:HAS_TAG {slug: t.slug, profileId: id}]->(t)",  # as upsert_profiles.cypher writes it
        slug=slug, ids=ids,
    )  # fmt: skip


def _state(graph: Graph, campaign_id: str, profile_id: str, **props: Any) -> None:
    graph.run(
        "MATCH (p:Profile {profileId: $pid}), (c:Campaign {id: $cid}) CREATE (p)-[s:CAMPAIGN_STATE]->(c) "
        "SET s += $props",
        pid=profile_id, cid=campaign_id, props=props,
    )  # fmt: skip


def _segmented(graph: Graph, campaign_id: str, segment: dict[str, Any], **extra: Any) -> None:
    make_campaign(graph, campaign_id, segment=segment, **extra)


def _page_jobs(queue: Queue) -> list[PageJob]:
    out = []
    for message in queue.receive(max_messages=10):
        job = parse_job(message.body)
        assert isinstance(job, PageJob)
        queue.delete(message.receipt)
        out.append(job)
    return out


def _delivered(queue: Queue) -> list[str]:
    found: list[str] = []
    while batch := queue.receive(max_messages=10):
        found += [parse_job(m.body).profile_id for m in batch]  # type: ignore[union-attr]
        for m in batch:
            queue.delete(m.receipt)
    return sorted(found)


def _policy() -> Policy:
    return Policy(now=NOW, adult_age=18, domain="campaigns.test")


def _audience(graph: Graph, campaign_id: str, limit: int = 100) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = get_audience(graph, campaign_id=campaign_id, cursor=cursor, limit=limit, policy=_policy())
        ids += [r.profile_id for r in page.records]
        if not page.has_more:
            return ids
        cursor = page.cursor


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def test_a_profile_tagged_after_going_live_is_picked_up_by_the_next_wave(
    base_settings: Settings, graph: Graph, queues: Queues
) -> None:
    _profiles(graph, ["p1", "p2", "p3", "p4", "p5"])
    _tag(graph, ["p1", "p3"], "beta")
    _segmented(graph, "c1", {"tag": "beta"})
    add_members(graph, "c1", ["p2"], webhook=HOOK)  # a static member beside the segment
    dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW, settings=DISPATCH_SETTINGS
    )
    (job,) = _page_jobs(queues.dispatch)
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    worker = build_page_worker(settings, graph, queues, clock=StepClock())
    assert worker.handle_page(job).outcome == "next"  # p1 (segment) and p2 (static)
    assert _delivered(queues.delivery) == ["p1", "p2"]
    _tag(graph, ["p4"], "beta")  # tagged while the campaign is live, before the next wave
    (successor,) = _page_jobs(queues.dispatch)
    assert worker.handle_page(successor).outcome == "next"
    assert _delivered(queues.delivery) == ["p3", "p4"]
    (last,) = _page_jobs(queues.dispatch)
    assert worker.handle_page(last).outcome == "completed"
    assert _delivered(queues.delivery) == []


def test_segment_matches_are_posted_and_acknowledged_end_to_end(
    base_settings: Settings, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    """The delivery recheck takes the page's word that a segment matched (its job says so); opted-out
    matches are still refused there, as members are."""
    with inbox_server(tmp_path) as inbox:
        hook = f"{inbox.url}/api/notifications/send"
        _profiles(graph, ["s1", "s2", "s3"])
        graph.run("MATCH (p:Profile) SET p.notificationsWebhook = $hook", hook=hook)
        graph.run("MATCH (p:Profile {profileId: 's3'}) SET p.announcementPushOptOut = true")
        _tag(graph, ["s1", "s2", "s3"], "beta")
        _segmented(graph, "c1", {"tag": "beta"})
        dispatch_id = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW,
                               settings=DISPATCH_SETTINGS).dispatch_id  # fmt: skip
        settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        assert [len(inbox_records(inbox.url, p)) for p in ("s1", "s2", "s3")] == [1, 1, 0]
    record = get_dispatch(graph, dispatch_id)
    assert (record.status, record.acknowledged) == ("completed", 2)
    # Their apps record engagement like members'; someone never sent it still may not.
    record_event(graph, profile_id="s1", campaign_id="c1", event="shown", action_id=None, test_id=None,
                 policy=_policy())  # fmt: skip
    with pytest.raises(NotFound):
        record_event(graph, profile_id="s3", campaign_id="c1", event="shown", action_id=None, test_id=None,
                     policy=_policy())  # fmt: skip
    follow_up = Segment.model_validate({"engaged": {"campaignId": "c1", "event": "shown"}})
    assert preview_segment(graph, segment=follow_up, tenant_id="default", now=NOW, adult_age=18).matches == 1


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


def test_the_preview_token_is_voided_when_the_segment_result_changes(graph: Graph, queues: Queues) -> None:
    _profiles(graph, ["p1", "p2"])
    _tag(graph, ["p1"], "beta")
    _segmented(graph, "c1", {"tag": "beta"})
    token = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS).preview_token
    _tag(graph, ["p2"], "beta")
    with pytest.raises(Conflict):
        dispatch(
            graph,
            queues.dispatch,
            campaign_id="c1",
            expected_token=token,
            now=NOW,
            settings=DISPATCH_SETTINGS,
        )
    fresh = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert fresh.recipient_count == 2
    token = fresh.preview_token
    dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=token, now=NOW, settings=DISPATCH_SETTINGS
    )


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


def _plan_statement(graph: Graph, campaign_id: str) -> tuple[str, dict[str, Any]]:
    node = graph.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS c", id=campaign_id)[0]["c"]
    compiled = graph.read(lambda tx: compile_for(tx, node))
    assert compiled is not None
    params = {"campaignId": campaign_id, "cursor": "", "limit": 100, "now": "2026-03-01T12:00:00.000000Z",
              "readyAt": {}, "fallbackReadyAt": "2026-03-01T12:00:00.000000Z", "staleBefore": None,
              **policy_params(NOW, 18), **compiled.params(NOW)}  # fmt: skip
    return segment_query("dispatch_page", compiled), params


@pytest.mark.parametrize(
    ("segment", "seek"),
    [
        ({"tag": "beta"}, "RelationshipIndexSeek"),
        ({"all": [{"locale": "fr"}, {"timeZone": "UTC", "not": True}]}, "NodeIndexSeekByRange"),
        ({"timeZone": "UTC"}, "NodeIndexSeek"),
        ({"memberOf": "launch"}, "RelationshipIndexSeek"),
        ({"engaged": {"campaignId": "launch", "event": "clicked"}}, "NodeUniqueIndexSeek"),
    ],
)
def test_each_arm_seeks_an_index_and_never_scans_profiles(
    graph: Graph, segment: dict[str, Any], seek: str
) -> None:
    make_campaign(graph, "launch", channels=["inApp"])
    _segmented(graph, "c1", segment)
    text, params = _plan_statement(graph, "c1")
    plan = graph.driver.execute_query("EXPLAIN " + text, params, database_=graph.database).summary.plan
    ops = operators(plan)
    assert sum("RelationshipIndexSeek" in op for op in ops) >= 1, ops  # the static members
    assert any(seek in op for op in ops), ops
    assert not any("Scan" in op for op in ops), ops


def test_a_small_segment_among_many_profiles_reads_only_its_candidates(graph: Graph) -> None:
    many = [f"p{i:05d}" for i in range(5000)]
    graph.run(
        "UNWIND $ids AS id CREATE (:Profile {profileId: id, tenants: ['default'], timeZone: 'UTC'})", ids=many
    )
    _tag(graph, many[::250], "rare")  # 20 of 5,000
    _segmented(graph, "c1", {"tag": "rare"})
    text, params = _plan_statement(graph, "c1")
    summary = graph.driver.execute_query("PROFILE " + text, params, database_=graph.database).summary
    hits = _db_hits(summary.profile)
    assert hits < 1_000, hits  # all profiles would be > 5,000 on the profile index alone
    row = graph.driver.execute_query(text, params, database_=graph.database).records[0]
    assert row["read"] == 20


def _db_hits(plan: dict[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(child) for child in plan.get("children", []))


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
            found = service.my_campaigns(profile_id=profile_id, include_tests=False)
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
        (card,) = service.my_campaigns(profile_id="m2", include_tests=False).campaigns
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


def test_a_tag_segment_page_reads_its_own_rows_whatever_the_segment(graph: Graph) -> None:
    """A tag seek keysets on tag_member (slug, profileId): the page after a cursor deep in a segment of
    4,000 reads about as much as the first page of a segment of 400, not the whole tag each time."""

    def page_hits(campaign_id: str, slug: str, count: int, cursor: str) -> int:
        ids = [f"{slug}{i:05d}" for i in range(count)]
        _profiles(graph, ids)
        _tag(graph, ids, slug)
        _segmented(graph, campaign_id, {"tag": slug})
        text, params = _plan_statement(graph, campaign_id)
        params |= {"cursor": cursor, "limit": 50}
        summary = graph.driver.execute_query("PROFILE " + text, params, database_=graph.database).summary
        return _db_hits(summary.profile)

    small = page_hits("c1", "small", 400, "")
    deep = page_hits("c2", "large", 4000, "large03000")
    assert deep < 2 * small, (deep, small)  # a top-n over the tag would read 4,000 links and more
