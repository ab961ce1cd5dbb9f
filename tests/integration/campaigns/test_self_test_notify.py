"""sendTestToMe, notify part: the default wiring enqueues a test delivery that the real worker posts.

Real graph, real local queue file, the reference inbox on loopback: the admin's test arrives with its
``campaignTestId`` and ``campaignHasInApp`` false, and nothing a stat or a dispatch can see moves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.config import ConfigError, Settings
from campaign_engine.delivery.runner import Worker
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_queues, build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    add_members,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    make_campaign,
    notified,
)


def _settings(base: Settings, tmp_path: Path, inbox_url: str) -> Settings:
    return delivery_settings(
        base,
        campaign_local_queue_path=str(tmp_path / "queue.sqlite3"),
        notifications_webhook_url=f"{inbox_url}/api/notifications/send",
    )


def test_notify_self_test_reaches_the_inbox_and_never_counts(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1", channels=["notify", "inApp"])
    add_members(graph, "c1", ["u1"])
    graph.run("MERGE (:Profile {profileId: $a})", a=ADMIN_ID)  # the admin is not in the audience
    with inbox_server(tmp_path) as inbox:
        settings = _settings(base_settings, tmp_path, inbox.url)
        with api_client(settings, graph, clock=StepClock()) as api:  # default testers: notify is wired
            result = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
            assert sorted(result["channels"]) == ["inApp", "notify"]
            queues = build_queues(settings)
            worker: Worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
            try:
                drain(worker.handle, queues)
            finally:
                worker.close()
            stats = ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        [record] = inbox_records(inbox.url, ADMIN_ID)
        assert inbox_records(inbox.url, "u1") == []
    meta = record["metadata"]
    assert meta["campaignTestId"] == result["testId"] and meta["campaignId"] == "c1"
    assert meta["campaignHasInApp"] is False and meta.get("dispatchId") is None
    assert record["title"] == "Big news"
    assert notified(graph, "c1") == []
    assert stats["notified"] == 0
    assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0
    assert graph.run("MATCH (:Profile {profileId: $a})-[s:CAMPAIGN_STATE]->() RETURN count(s) AS n",
                     a=ADMIN_ID)[0]["n"] == 0  # fmt: skip


def test_notify_self_test_needs_the_admin_profile(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_campaign(graph, "c1", channels=["notify"])
    settings = _settings(base_settings, tmp_path, "http://127.0.0.1:9")
    with api_client(settings, graph, clock=StepClock()) as api:
        response = api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True)
        assert error_code(response) == "NOT_FOUND"
    assert build_queues(settings).delivery.receive(max_messages=10) == []


def test_without_a_webhook_secret_notify_is_refused_by_name_and_nothing_is_written(
    base_settings: Settings, graph: Graph
) -> None:
    # inApp alone could be tested: the test must not pass for one that silently left notify out.
    make_campaign(graph, "c1", channels=["inApp", "notify"], now=NOW)
    graph.run("MERGE (:Profile {profileId: $a})", a=ADMIN_ID)
    assert base_settings.notifications_webhook_secret is None
    with api_client(base_settings, graph, clock=StepClock()) as api:
        response = api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True)
        assert error_code(response) == "BAD_REQUEST"
        assert "NOTIFICATIONS_WEBHOOK_SECRET" in response.json()["error"]["message"]
    assert graph.run("MATCH ()-[t:CAMPAIGN_TEST]->() RETURN count(t) AS n")[0]["n"] == 0


def test_an_unusable_webhook_secret_stops_the_api_at_start(base_settings: Settings, graph: Graph) -> None:
    plain = base_settings.model_copy(
        update={"notifications_webhook_secret": SecretStr("a-plain-shared-secret-0123456789")}
    )
    with pytest.raises(ConfigError, match="NOTIFICATIONS_WEBHOOK_SECRET") as info:
        create_app(plain, graph=graph)
    assert "a-plain-shared" not in str(info.value)
