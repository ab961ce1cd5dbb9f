"""The vertical slice: dispatch -> page job -> deliveries -> signed POST to the real inbox -> notifiedAt."""

from __future__ import annotations

from pathlib import Path

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
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
    notified,
    start_dispatch,
)

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)


def test_dispatch_delivers_to_inbox_and_records_notified(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = delivery_settings(base_settings, campaign_dispatch_page_size=2)
    make_campaign(graph, "c1")
    members = [f"p{i}" for i in range(5)]
    queues = local_queues(tmp_path / "q.sqlite3")
    with inbox_server(tmp_path) as inbox:
        add_members(graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        add_members(
            graph,
            "c1",
            ["p9-optout"],
            webhook=f"{inbox.url}/api/notifications/send",
            announcementPushOptOut=True,
        )
        preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
        assert preview.notification_recipient_count == 5 and preview.audience_count == 6
        assert notified(graph, "c1") == []  # preview marks no one
        started = dispatch(
            graph,
            queues.dispatch,
            campaign_id="c1",
            expected_token=preview.preview_token,
            now=NOW,
            settings=DISPATCH_SETTINGS,
        )
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        drain(worker.handle, queues)

        assert notified(graph, "c1") == members
        for profile_id in members:
            records = inbox_records(inbox.url, profile_id)
            assert len(records) == 1
        assert inbox_records(inbox.url, "p9-optout") == []
        progress = get_dispatch(graph, started.dispatch_id)
        assert progress.status == "completed"
        assert progress.pages == 4  # 2 + 2 + 2 members, then an empty short page completes the walk
        assert (progress.enqueued, progress.acknowledged, progress.rejected) == (5, 5, 0)
        assert progress.cursor == "p9-optout"

        # A re-dispatch starts from the beginning, sends to a member added with an earlier id, skips
        # everyone already notified.
        add_members(graph, "c1", ["a-new"], webhook=f"{inbox.url}/api/notifications/send")
        again = start_dispatch(graph, queues.dispatch)
        drain(worker.handle, queues)
        assert notified(graph, "c1") == ["a-new", *members]
        assert get_dispatch(graph, again.dispatch_id).enqueued == 1
        assert all(len(inbox_records(inbox.url, p)) == 1 for p in members)
        worker.close()
