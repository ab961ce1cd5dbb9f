"""Event-webhook endpoints: a rotated secret signs with both for the overlap, an endpoint failing for
days is disabled and says so, URLs follow the egress rules, and other tenants cannot see them.

Time is a ``StepClock``: an outage of ten minutes, or five days of failures, is the clock moved on
and the sweep run, never a wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from campaign_engine.config import Settings
from campaign_engine.domain.webhook_events import RETRY_SCHEDULE_SECONDS
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import (
    StepClock,
    ThreadServer,
    drain,
    make_campaign,
)
from tests.support.event_webhooks import EventReceiver, Stack


def test_rotation_signs_with_old_and_new_secret_for_the_overlap(stack: Stack, graph: Graph) -> None:
    receiver = EventReceiver()
    with (
        ThreadServer(receiver.app()) as endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch) as api,
    ):
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events",
                                "events": ["campaign.created"]}, as_=ADMIN_ID, admin=True))  # fmt: skip
        old = created["secret"]
        new = ok(
            api.mutate("webhookEndpoints.rotateSecret", {"id": created["id"]}, as_=ADMIN_ID, admin=True)
        )["secret"]
        assert new != old and new.startswith("whsec_")
        receiver.secrets.extend([old, new])
        make_campaign(graph, "c1")
        stack.run()
        assert [r["verifiedBy"] for r in receiver.received] == [[old, new]]  # each secret verifies alone
        assert [r["event"]["type"] for r in receiver.received] == ["campaign.created"]  # only what it took

        stack.later(86_400)  # the overlap is over: the old secret no longer signs
        make_campaign(graph, "c2")
        stack.run()
        assert [r["verifiedBy"] for r in receiver.received][1:] == [[new]]


def test_an_endpoint_failing_for_days_is_disabled_and_says_so(stack: Stack, graph: Graph) -> None:
    receiver = EventReceiver(down=True)
    with (
        ThreadServer(receiver.app()) as endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch,
                   webhooks_queue=stack.queues.webhooks) as api,
    ):  # fmt: skip
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events", "events": ["*"]},
                                as_=ADMIN_ID, admin=True))  # fmt: skip
        receiver.secrets.append(created["secret"])
        make_campaign(graph, "c1", status="draft")
        stack.run()
        waited = 0
        for _ in range(40):  # each retry when due, until it is disabled
            row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
            if not row["enabled"]:
                break
            step = RETRY_SCHEDULE_SECONDS[min(row["failures"], len(RETRY_SCHEDULE_SECONDS)) - 1]
            stack.later(step)
            waited += step
            stack.run()
        assert 5 * 86_400 <= waited < 5 * 86_400 + 36_000  # disabled at the first failure past five days
        assert not row["enabled"] and row["disabledReason"].startswith("failing since 2026-03-01T12:00:00")
        assert "last status 503" in row["disabledReason"] and row["pending"] == 1
        attempts = receiver.refused
        stack.later(86_400)
        stack.run()
        assert receiver.refused == attempts  # disabled: no more attempts

        receiver.down = False
        ok(
            api.mutate(
                "webhookEndpoints.update", {"id": created["id"], "enabled": True}, as_=ADMIN_ID, admin=True
            )
        )
        drain(stack.worker.handle, stack.queues)  # the API's kick, no sweep: resumed at once
        assert [r["event"]["type"] for r in receiver.received] == ["campaign.created"]  # nothing was lost
        row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
        assert row["enabled"] and row["disabledReason"] is None and row["failures"] == 0


def test_endpoint_urls_follow_the_egress_rules_and_other_tenants_cannot_see_them(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = base_settings.model_copy(update={"campaign_admin_profile_ids": ADMIN_ID})
    url = "https://hooks.example/e"
    with api_client(settings, graph, clock=StepClock()) as api:

        def create(data: dict[str, Any]) -> Any:
            return api.mutate("webhookEndpoints.create", data, as_=ADMIN_ID, admin=True)

        refused = create({"url": "http://hooks.example/e", "events": ["*"]})
        assert refused.status_code == 400 and "url" in refused.text
        assert create({"url": url, "events": ["nope"]}).status_code == 400
        assert create({"url": url, "events": []}).status_code == 400
        created = ok(create({"url": url, "events": ["*"]}))
        beta = _beta_admin(api)
        assert ok(api.http.get("/trpc/webhookEndpoints.list", headers=beta))["records"] == []
        for path, data in (
            ("webhookEndpoints.update", {"id": created["id"], "description": "mine now"}),
            ("webhookEndpoints.rotateSecret", {"id": created["id"]}),
            ("webhookEndpoints.delete", {"id": created["id"]}),
        ):
            answer = api.http.post(f"/trpc/{path}", json=data, headers=beta)
            assert answer.json()["error"]["data"]["code"] == "NOT_FOUND", path
        answer = api.http.get(
            "/trpc/webhookEndpoints.deliveries",
            params={"input": json.dumps({"id": created["id"]})},
            headers=beta,
        )
        assert answer.json()["error"]["data"]["code"] == "NOT_FOUND"


def _beta_admin(api: TrpcClient) -> dict[str, str]:
    from campaign_engine.api.auth import mint_token

    token = mint_token(api.settings, profile_id="admin-b", scope="", tenant_id="beta", roles=["admin"])
    return {"authorization": f"Bearer {token}"}
