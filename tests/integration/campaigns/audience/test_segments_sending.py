"""Live segments at send time, against real Neo4j and the real local queue: evaluated on every page, so a
profile tagged after going live is picked up by the next wave; matches posted and acknowledged end to
end; the preview token voided when the segment's result changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign_engine.campaigns.audience.segments import preview_segment
from campaign_engine.campaigns.engagement.events import record_event
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.domain.errors import Conflict, NotFound
from campaign_engine.domain.segment import Segment
from campaign_engine.graph.graph import Graph
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
)
from tests.support.segments import (
    DISPATCH_SETTINGS,
    HOOK,
    _delivered,
    _page_jobs,
    _policy,
    _profiles,
    _segmented,
    _tag,
)


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
