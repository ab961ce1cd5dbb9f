"""Reviewed dispatch through the real API: preview, token confirmation, limits, progress."""

from __future__ import annotations

from pathlib import Path

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import NOW, StepClock, add_members, local_queues, make_campaign


def test_preview_token_confirms_exactly_once(base_settings: Settings, graph: Graph, tmp_path: Path) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1", "p2"])
    add_members(graph, "c1", ["kid"], dob="2015-01-01")
    with api_client(base_settings, graph, clock=StepClock(), dispatch_queue=queues.dispatch) as api:

        def call(kind: str, path: str, data: object) -> object:
            fn = api.query if kind == "q" else api.mutate
            return fn(f"campaigns.{path}", data, as_=ADMIN_ID, admin=True)

        preview = ok(call("q", "previewDispatch", {"campaignId": "c1"}))
        assert preview["notificationRecipientCount"] == 2 and preview["audienceCount"] == 3
        assert preview["emailRecipientCount"] == 0 and preview.get("blockedReason") is None
        assert "p1" not in str(preview)
        add_members(graph, "c1", ["p3"])  # the audience changed since the preview
        assert (
            error_code(
                call("m", "dispatch", {"campaignId": "c1", "expectedPreviewToken": preview["previewToken"]})
            )
            == "CONFLICT"
        )
        fresh = ok(call("q", "previewDispatch", {"campaignId": "c1"}))["previewToken"]
        started = ok(call("m", "dispatch", {"campaignId": "c1", "expectedPreviewToken": fresh}))
        assert started["channels"] == ["notify"]
        assert (
            error_code(call("m", "dispatch", {"campaignId": "c1", "expectedPreviewToken": fresh}))
            == "CONFLICT"
        )
        got = ok(call("q", "getDispatch", {"dispatchId": started["dispatchId"]}))
        assert got["status"] == "sending" and got["pages"] == 0
        assert [d["dispatchId"] for d in ok(call("q", "listDispatches", {"campaignId": "c1"}))] == [
            started["dispatchId"]
        ]
    assert len(queues.dispatch.receive(max_messages=10)) == 1


def test_blocked_and_oversized_dispatches_enqueue_nothing(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    make_campaign(graph, "draft", status="draft")
    make_campaign(graph, "empty")
    make_campaign(graph, "big")
    add_members(graph, "draft", ["p1"])
    add_members(graph, "big", ["p1", "p2", "p3"])
    settings = base_settings.model_copy(update={"campaign_preview_max_recipients": 2})
    with api_client(settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch) as api:

        def preview(cid: str) -> object:
            return api.query("campaigns.previewDispatch", {"campaignId": cid}, as_=ADMIN_ID, admin=True)

        assert ok(preview("draft"))["blockedReason"] == "not_live"
        assert ok(preview("empty"))["blockedReason"] == "no_recipients"
        assert error_code(preview("big")) == "BAD_REQUEST"
        for cid in ("draft", "empty", "big"):
            answer = api.mutate("campaigns.dispatch", {"campaignId": cid}, as_=ADMIN_ID, admin=True)
            assert error_code(answer) == "BAD_REQUEST"
    assert queues.dispatch.receive(max_messages=10) == []
