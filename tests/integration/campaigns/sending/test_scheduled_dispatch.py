"""Scheduled dispatch against the real graph: confirm now, fire at sendAt exactly once, or say why not.

The sweeper's step (``fire_due``) is called with an explicit ``now``, so a schedule an hour away is
tested without waiting; concurrency is real (threads released together against one Neo4j).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignPatch
from campaign_engine.domain.dispatch import parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import at_once
from tests.support.delivery import NOW, StepClock, add_members, local_queues, make_campaign

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000)

IN_AN_HOUR = NOW + timedelta(hours=1)


@pytest.fixture
def queue(tmp_path: Path) -> LocalQueue:
    return local_queues(tmp_path / "q.sqlite3").dispatch


@pytest.fixture
def api(base_settings: Settings, graph: Graph, queue: LocalQueue) -> Any:
    with api_client(base_settings, graph, clock=StepClock(NOW), dispatch_queue=queue) as client:
        yield client


def admin(api: TrpcClient, path: str, data: dict[str, Any], *, query: bool = False) -> Any:
    call = api.query if query else api.mutate
    return call(f"campaigns.{path}", data, as_=ADMIN_ID, admin=True)


def schedule(api: TrpcClient, campaign_id: str, send_at: Any, **extra: Any) -> Any:
    token = ok(admin(api, "previewDispatch", {"campaignId": campaign_id}, query=True))["previewToken"]
    return admin(
        api,
        "scheduleDispatch",
        {"campaignId": campaign_id, "sendAt": send_at, "expectedPreviewToken": token, **extra},
    )


def fire(graph: Graph, queue: LocalQueue, at: Any) -> dict[str, str]:
    return fire_due(graph, queue, now=at, settings=DISPATCH_SETTINGS)


def statuses(api: TrpcClient, campaign_id: str) -> list[tuple[str, str | None]]:
    listed = ok(admin(api, "listDispatches", {"campaignId": campaign_id}, query=True))
    return [(d["status"], d.get("lastError")) for d in listed]


def test_a_schedule_waits_then_fires_exactly_once_with_its_page_jobs(
    api: TrpcClient, graph: Graph, queue: LocalQueue
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1", "p2"])
    (scheduled,) = ok(schedule(api, "c1", "2026-03-01T14:00:00+01:00"))  # 13:00Z, an hour after NOW
    assert (scheduled["status"], scheduled["sendAt"]) == ("scheduled", "2026-03-01T13:00:00.000000Z")
    assert queue.receive(max_messages=10) == []

    assert fire(graph, queue, IN_AN_HOUR - timedelta(seconds=1)) == {}  # not yet due
    assert list(fire(graph, queue, IN_AN_HOUR).values()) == ["sending"]
    assert fire(graph, queue, IN_AN_HOUR + timedelta(seconds=5)) == {}  # fired once
    got = ok(admin(api, "getDispatch", {"dispatchId": scheduled["dispatchId"]}, query=True))
    assert (got["status"], got["startedAt"]) == ("sending", "2026-03-01T13:00:00.000000Z")
    (message,) = queue.receive(max_messages=10)
    assert parse_job(message.body).dispatch_id == scheduled["dispatchId"]


def test_concurrent_sweepers_fire_a_schedule_once(api: TrpcClient, graph: Graph, queue: LocalQueue) -> None:
    make_campaign(graph, "c1", channels=["notify"])
    add_members(graph, "c1", ["p1"])
    ok(schedule(api, "c1", "2026-03-01T13:00:00Z"))
    results = at_once(fire, [(graph, queue, IN_AN_HOUR)] * 6)
    fired = [outcome for result in results for outcome in result.values()]
    assert fired.count("sending") == 1 and set(fired) <= {"sending", "already_decided"}
    assert len(queue.receive(max_messages=10)) == 1
    assert statuses(api, "c1") == [("sending", None)]


def test_a_wall_clock_time_in_an_iana_zone(api: TrpcClient, graph: Graph) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    send_at = {"localTime": "2026-03-29T02:30", "timeZone": "Europe/Paris"}  # in the spring gap
    (scheduled,) = ok(schedule(api, "c1", send_at))
    assert scheduled["sendAt"] == "2026-03-29T01:30:00.000000Z"  # 03:30 CEST: late by the gap
    bad_zone = schedule(api, "c1", {"localTime": "2026-03-29T09:00", "timeZone": "Mars/Base"})
    assert error_code(bad_zone) == "BAD_REQUEST"


def test_a_late_sweeper_misses_instead_of_sending_stale_news(
    api: TrpcClient, graph: Graph, queue: LocalQueue
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    ok(schedule(api, "c1", "2026-03-01T13:00:00Z", maxLateSeconds=600))
    assert list(fire(graph, queue, IN_AN_HOUR + timedelta(minutes=11)).values()) == ["missed"]
    ((status, reason),) = statuses(api, "c1")
    assert status == "missed" and reason is not None and reason.startswith("missed:")
    assert queue.receive(max_messages=10) == []


def test_a_change_since_the_preview_holds_the_send_for_review_unless_told_otherwise(
    api: TrpcClient, graph: Graph, queue: LocalQueue
) -> None:
    for campaign_id in ("review", "current"):
        make_campaign(graph, campaign_id)
        add_members(graph, campaign_id, ["p1"])
    ok(schedule(api, "review", "2026-03-01T13:00:00Z"))
    ok(schedule(api, "current", "2026-03-01T13:00:00Z", onChange="send_current"))
    for campaign_id in ("review", "current"):
        add_members(graph, campaign_id, ["p2"])  # the recipient set changed
    fired = fire(graph, queue, IN_AN_HOUR)
    assert sorted(fired.values()) == ["needs_review", "sending"]
    assert statuses(api, "review")[0][0] == "needs_review"
    assert statuses(api, "current")[0][0] == "sending"
    (message,) = queue.receive(max_messages=10)
    assert parse_job(message.body).campaign_id == "current"


@pytest.mark.parametrize("change", ["paused", "archived", "edited"])
def test_pausing_archiving_or_editing_before_send_at_prevents_the_send(
    api: TrpcClient, graph: Graph, queue: LocalQueue, change: str
) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    ok(schedule(api, "c1", "2026-03-01T13:00:00Z"))
    if change == "edited":
        patch = CampaignPatch.model_validate({"campaignId": "c1", "name": "Renamed"})
        definitions.update_campaign(graph, patch=patch, now=NOW)
    else:
        definitions.set_status(graph, campaign_id="c1", status=change, now=NOW)  # type: ignore[arg-type]
    (outcome,) = fire(graph, queue, IN_AN_HOUR).values()
    assert outcome == ("needs_review" if change == "edited" else "cancelled")
    assert queue.receive(max_messages=10) == []


def test_cancel_and_the_rules_of_a_schedule(api: TrpcClient, graph: Graph, queue: LocalQueue) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    assert error_code(schedule(api, "c1", "2026-03-01T11:00:00Z")) == "BAD_REQUEST"  # in the past
    stale = admin(
        api,
        "scheduleDispatch",
        {"campaignId": "c1", "sendAt": "2026-03-01T13:00:00Z", "expectedPreviewToken": "stale"},
    )
    assert error_code(stale) == "CONFLICT"
    (scheduled,) = ok(schedule(api, "c1", "2026-03-01T13:00:00Z"))
    assert error_code(schedule(api, "c1", "2026-03-01T14:00:00Z")) == "CONFLICT"  # one pending per campaign
    cancel = {"dispatchId": scheduled["dispatchId"]}
    ok(admin(api, "cancelScheduledDispatch", cancel))
    assert error_code(admin(api, "cancelScheduledDispatch", cancel)) == "CONFLICT"
    assert fire(graph, queue, IN_AN_HOUR) == {}
    assert statuses(api, "c1") == [("cancelled", "cancelled")]
    assert queue.receive(max_messages=10) == []


def test_a_critical_schedule_fails_at_its_time_once_its_tenant_forbids_critical(
    api: TrpcClient, graph: Graph, queue: LocalQueue
) -> None:
    make_campaign(graph, "c1", priority="critical")
    make_campaign(graph, "c2", priority="critical")
    add_members(graph, "c1", ["p1"])
    add_members(graph, "c2", ["p1"])
    ok(schedule(api, "c1", IN_AN_HOUR.isoformat()))
    forbid = {"tenantId": "default", "allowCritical": False}
    assert ok(api.mutate("tenants.update", forbid, as_=ADMIN_ID, admin=True))["allowCritical"] is False
    refused = schedule(api, "c2", IN_AN_HOUR.isoformat())  # refused at once, as a dispatch is
    assert error_code(refused) == "FORBIDDEN" and "allowCritical" in refused.text
    # The one scheduled before fails at its time, saying why; nothing is enqueued.
    assert list(fire(graph, queue, IN_AN_HOUR).values()) == ["failed"]
    assert queue.receive(max_messages=10) == []
    [(status, error)] = statuses(api, "c1")
    assert status == "failed" and error is not None and "allowCritical" in error
