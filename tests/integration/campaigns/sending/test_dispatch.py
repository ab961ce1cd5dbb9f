"""Reviewed dispatch through the real API: preview, token confirmation, limits, progress."""

from __future__ import annotations

from pathlib import Path

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import NOW, StepClock, add_members, local_queues, make_campaign
from tests.support.email import add_email_members, email_settings, make_email_campaign


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


def test_email_is_blocked_and_refused_without_an_email_provider(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    make_email_campaign(graph, "mail")
    make_email_campaign(graph, "both", channels=["notify", "email"])
    for cid in ("mail", "both"):
        add_email_members(graph, cid, [f"{cid}-member"])  # one address per profile
    revisions = _revisions(graph)
    assert base_settings.campaign_email_provider == "none"
    with api_client(base_settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch) as api:
        for cid in ("mail", "both"):
            preview = ok(
                api.query("campaigns.previewDispatch", {"campaignId": cid}, as_=ADMIN_ID, admin=True)
            )
            assert preview["blockedReason"] == "email_not_configured", cid
            assert preview["emailRecipientCount"] == 1  # the preview still shows who it would reach
            answer = api.mutate(
                "campaigns.dispatch",
                {"campaignId": cid, "expectedPreviewToken": preview["previewToken"]},
                as_=ADMIN_ID,
                admin=True,
            )
            assert error_code(answer) == "BAD_REQUEST", cid
            assert "CAMPAIGN_EMAIL_PROVIDER" in answer.json()["error"]["message"]
    # Nothing half-written: no Dispatch (not even for notify), no revision spent, no page job queued.
    assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0
    assert _revisions(graph) == revisions
    assert queues.dispatch.receive(max_messages=10) == []


def test_email_dispatches_where_a_provider_is_configured(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    make_email_campaign(graph, "mail")
    add_email_members(graph, "mail", ["p1"])
    settings = email_settings(base_settings, "http://127.0.0.1:9", "postmark-token")
    # No self-testers: this test needs no provider client, only the deployment's deliverable channels.
    with api_client(
        settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch, self_test_testers={}
    ) as api:
        preview = ok(api.query("campaigns.previewDispatch", {"campaignId": "mail"}, as_=ADMIN_ID, admin=True))
        assert preview.get("blockedReason") is None
        started = ok(
            api.mutate(
                "campaigns.dispatch",
                {"campaignId": "mail", "expectedPreviewToken": preview["previewToken"]},
                as_=ADMIN_ID,
                admin=True,
            )
        )
    assert started["channels"] == ["email"]
    assert len(queues.dispatch.receive(max_messages=10)) == 1


def _revisions(graph: Graph) -> dict[str, int]:
    return {
        r["id"]: r["revision"]
        for r in graph.run("MATCH (c:Campaign) RETURN c.id AS id, c.revision AS revision")
    }


def test_the_cap_counts_distinct_people_across_channels(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """10,000 people (2,000 on both channels, 4,000 notify only, 4,000 email only) confirm at the
    default cap of 10,000; one more refuses, though neither channel alone is near the cap."""
    queues = local_queues(tmp_path / "q.sqlite3")
    make_email_campaign(graph, "both", channels=["notify", "email"])
    add_email_members(graph, "both", [f"b{i:05}" for i in range(2_000)])
    add_members(graph, "both", [f"n{i:05}" for i in range(4_000)])
    add_email_members(graph, "both", [f"e{i:05}" for i in range(4_000)], announcementPushOptOut=True)
    settings = email_settings(base_settings, "http://127.0.0.1:9", "postmark-token")
    assert settings.campaign_preview_max_recipients == 10_000
    with api_client(
        settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch, self_test_testers={}
    ) as api:
        preview = ok(api.query("campaigns.previewDispatch", {"campaignId": "both"}, as_=ADMIN_ID, admin=True))
        assert preview["recipientCount"] == 10_000
        assert preview["notificationRecipientCount"] == preview["emailRecipientCount"] == 6_000
        add_members(graph, "both", ["n10000"])
        over = api.query("campaigns.previewDispatch", {"campaignId": "both"}, as_=ADMIN_ID, admin=True)
        assert error_code(over) == "BAD_REQUEST"
        assert "CAMPAIGN_PREVIEW_MAX_RECIPIENTS" in over.json()["error"]["message"]
        answer = api.mutate("campaigns.dispatch", {"campaignId": "both"}, as_=ADMIN_ID, admin=True)
        assert error_code(answer) == "BAD_REQUEST"
    assert queues.dispatch.receive(max_messages=10) == []
