"""Per-receiver secrets, end to end: the API gives each profile's webhook its own
``whsec_`` secret, the worker signs that receiver's POSTs with it, and loopback receivers built on the
official Standard Webhooks library verify their own and refuse a POST signed with another's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Received
from campaign_engine.wiring import build_notification_worker, build_page_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    WEBHOOK_SECRET,
    StepClock,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    notified,
    start_dispatch,
)
from tests.support.servers import serve_in_thread

SECRET = "notificationsWebhookSecret"
SUPPLIED = "whsec_" + "c3VwcGxpZWQtYnktdGhlLWFkbWluLTAxMjM0NTY3ODk="  # one an admin brings along


@dataclass
class Receiver:
    """A receiver written as the official library's documentation shows, holding one secret."""

    secret: str = ""
    verified: list[dict[str, Any]] = field(default_factory=list)
    refused: int = 0
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> Starlette:
        async def hook(request: Request) -> JSONResponse:
            body, headers = await request.body(), dict(request.headers)
            with self.lock:
                self.raw.append((headers, body))
                try:
                    self.verified.append(Webhook(self.secret).verify(body, headers))
                except WebhookVerificationError:
                    self.refused += 1
                    return JSONResponse({"sent": False}, status_code=400)
            return JSONResponse({"sent": True})

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return delivery_settings(base_settings)


@pytest.fixture
def api(settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=StepClock()) as client:
        yield client


def upsert(api: TrpcClient, *rows: dict[str, Any]) -> Any:
    return api.mutate("profiles.upsert", {"profiles": list(rows)}, as_=ADMIN_ID, admin=True)


def rotate(api: TrpcClient, **data: Any) -> Any:
    return api.mutate("profiles.rotateWebhookSecret", data, as_=ADMIN_ID, admin=True)


def secrets_of(answer: Any) -> dict[str, str]:
    return {entry["profileId"]: entry["secret"] for entry in ok(answer)["webhookSecrets"]}


def deliver(settings: Settings, graph: Graph, tmp_path: Path, campaign: str, *, at: datetime = NOW) -> None:
    """Dispatch ``campaign`` and let a real worker post every delivery once, its clock at ``at``."""
    queues = local_queues(tmp_path / f"{campaign}.sqlite3")
    start_dispatch(graph, queues.dispatch, campaign)
    pages = build_page_worker(settings, graph, queues, clock=StepClock())
    for message in queues.dispatch.receive(max_messages=10):
        pages.handle_page(parse_job(message.body))  # type: ignore[arg-type]
    worker = build_notification_worker(settings, graph, clock=StepClock(at))
    try:
        while batch := queues.delivery.receive(max_messages=10):
            items = []
            for message in batch:
                job = parse_job(message.body)
                assert isinstance(job, DeliveryJob)
                items.append(Received(message, job))
            for done in worker.handle_batch(items).done:
                queues.delivery.delete(done.receipt)
    finally:
        worker.close()


def forged(secret: str, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers for ``body``, signed by the official library with ``secret``."""
    now = datetime.now(tz=UTC)
    return {
        "webhook-id": "forged-1",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign("forged-1", now, body.decode()),
        "content-type": "application/json",
    }


def test_each_receiver_verifies_its_own_posts_and_refuses_one_signed_with_another_receivers_secret(
    settings: Settings, graph: Graph, api: TrpcClient, tmp_path: Path
) -> None:
    own_a, own_b, default = Receiver(), Receiver(), Receiver(secret=WEBHOOK_SECRET)
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p-a", "p-b", "p-d"])
    with (
        serve_in_thread(own_a.app()) as url_a,
        serve_in_thread(own_b.app()) as url_b,
        serve_in_thread(default.app()) as url_d,
    ):
        answer = upsert(
            api,
            {"profileId": "p-a", "notificationsWebhook": f"{url_a}/hook"},
            {"profileId": "p-b", "notificationsWebhook": f"{url_b}/hook"},
            {"profileId": "p-d"},
        )
        generated = secrets_of(answer)
        assert sorted(generated) == ["p-a", "p-b"]  # only profiles with their own webhook
        assert generated["p-a"] != generated["p-b"] and WEBHOOK_SECRET not in generated.values()
        own_a.secret, own_b.secret = generated["p-a"], generated["p-b"]

        deliver(delivery_settings(settings, notifications_webhook_url=f"{url_d}/hook"), graph, tmp_path, "c1")

        assert [v["recipient"] for v in own_a.verified] == ["p-a"]
        assert [v["recipient"] for v in own_b.verified] == ["p-b"]
        assert [v["recipient"] for v in default.verified] == ["p-d"]
        assert (own_a.refused, own_b.refused, default.refused) == (0, 0, 0)
        assert notified(graph, "c1") == ["p-a", "p-b", "p-d"]

        # Whoever runs receiver A holds A's secret: what it signs, B and the default inbox refuse.
        _, body = own_a.raw[0]
        forgery = forged(own_a.secret, body)
        for url in (url_b, url_d):
            assert httpx.post(f"{url}/hook", content=body, headers=forgery, timeout=5).status_code == 400
        assert (own_b.refused, default.refused) == (1, 1)
        assert httpx.post(f"{url_a}/hook", content=body, headers=forgery, timeout=5).status_code == 200


def test_a_rotation_signs_with_both_secrets_during_the_overlap_then_only_the_new_one(
    settings: Settings, graph: Graph, api: TrpcClient, tmp_path: Path
) -> None:
    receiver = Receiver()
    make_campaign(graph, "c1")
    make_campaign(graph, "c2")
    add_members(graph, "c1", ["p-a"])
    graph.run(
        "MATCH (p:Profile {profileId: 'p-a'}), (c:Campaign {id: 'c2'}) "
        "MERGE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: 'c2', profileId: 'p-a', source: 'test', "
        "addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}]->(c)"
    )
    with serve_in_thread(receiver.app()) as url:
        old = secrets_of(upsert(api, {"profileId": "p-a", "notificationsWebhook": f"{url}/hook"}))["p-a"]
        rotated = ok(rotate(api, profileId="p-a", overlapSeconds=3600))
        new = rotated["secret"]
        assert rotated["profileId"] == "p-a" and new.startswith("whsec_") and new != old
        receiver.secret = old  # the receiver has not switched yet: nothing is lost meanwhile

        deliver(settings, graph, tmp_path, "c1", at=NOW + timedelta(minutes=59))
        receiver.secret = new
        deliver(settings, graph, tmp_path, "c2", at=NOW + timedelta(minutes=61))

    (during_headers, during_body), (after_headers, after_body) = receiver.raw
    assert len(during_headers["webhook-signature"].split()) == 2  # one v1 signature per live secret
    for secret in (old, new):
        Webhook(secret).verify(during_body, during_headers)
    Webhook(new).verify(after_body, after_headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(after_body, after_headers)  # the overlap is over: the old secret is retired
    assert receiver.refused == 0 and len(receiver.verified) == 2


def test_a_graph_dump_and_profiles_get_hold_no_secret_in_clear(
    settings: Settings, graph: Graph, api: TrpcClient
) -> None:
    supplied = SUPPLIED
    generated = secrets_of(
        upsert(
            api,
            {"profileId": "p-a", "notificationsWebhook": "http://127.0.0.1:9/a"},
            {"profileId": "p-b", "notificationsWebhook": "http://127.0.0.1:9/b", SECRET: supplied},
        )
    )
    rotated = ok(rotate(api, profileId="p-a", overlapSeconds=600))["secret"]
    secrets = [generated["p-a"], supplied, rotated]
    dump = json.dumps(
        [r["props"] for r in graph.run("MATCH (n) RETURN properties(n) AS props")]
        + [r["props"] for r in graph.run("MATCH ()-[r]->() RETURN properties(r) AS props")]
    )
    assert "notificationsWebhookKeys" in dump  # the rings are there, sealed
    for secret in secrets:
        assert secret not in dump and secret.removeprefix("whsec_") not in dump
    for profile_id in ("p-a", "p-b"):
        got = api.query("profiles.get", {"profileId": profile_id}, as_=ADMIN_ID, admin=True)
        assert ok(got)["notificationsWebhook"] and not any(s in got.text for s in secrets)
        assert "notificationsWebhookKeys" not in got.text


def _ring(graph: Graph, profile_id: str) -> str | None:
    query = "MATCH (p:Profile {profileId: $id}) RETURN p.notificationsWebhookKeys AS k"
    rows = graph.run(query, id=profile_id)
    return rows[0]["k"]


def test_a_generated_secret_is_answered_once_and_kept_until_the_webhook_changes(
    settings: Settings, graph: Graph, api: TrpcClient
) -> None:
    row = {"profileId": "p-a", "notificationsWebhook": "http://127.0.0.1:9/a"}
    first = secrets_of(upsert(api, row))
    sealed = _ring(graph, "p-a")
    assert list(first) == ["p-a"] and sealed is not None
    assert secrets_of(upsert(api, row)) == {}  # the same row again: no new secret, nothing answered
    assert secrets_of(upsert(api, {"profileId": "p-a", "locale": "fr"})) == {}
    assert _ring(graph, "p-a") == sealed
    moved = secrets_of(upsert(api, {**row, "notificationsWebhook": "http://127.0.0.1:9/elsewhere"}))
    assert list(moved) == ["p-a"] and moved["p-a"] != first["p-a"]  # a new receiver: a new secret
    supplied = SUPPLIED
    assert secrets_of(upsert(api, {**row, "notificationsWebhookSecret": supplied})) == {}  # the admin has it
    ok(upsert(api, {"profileId": "p-a", "notificationsWebhook": None}))
    assert _ring(graph, "p-a") is None  # no webhook of its own, no secrets of its own


@pytest.mark.parametrize(
    "row",
    [
        {"notificationsWebhook": "http://127.0.0.1:9/a", SECRET: "whsec_not*base64!"},
        {"notificationsWebhook": "http://127.0.0.1:9/a", SECRET: "a-plain-secret-0123456789abc"},
        {"notificationsWebhook": "http://127.0.0.1:9/a", SECRET: "whsec_dG9vLXNob3J0"},
        {SECRET: SUPPLIED},
    ],
    ids=["not-base64", "not-whsec", "too-short", "without-webhook"],
)
def test_a_malformed_supplied_secret_is_bad_request_with_nothing_written(
    graph: Graph, api: TrpcClient, row: dict[str, Any]
) -> None:
    answer = upsert(api, {"profileId": "ok"}, {"profileId": "p-a", **row})
    assert error_code(answer) == "BAD_REQUEST"
    assert row[SECRET].removeprefix("whsec_") not in answer.text  # never echoed
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0


def test_without_a_secrets_key_no_own_webhook_is_set_and_a_sealed_one_is_never_signed_with_the_default(
    settings: Settings, graph: Graph, api: TrpcClient, tmp_path: Path
) -> None:
    keyless = settings.model_copy(update={"campaign_secrets_key": None})
    with api_client(keyless, graph) as bare:
        answer = upsert(bare, {"profileId": "p-a", "notificationsWebhook": "http://127.0.0.1:9/a"})
        assert error_code(answer) == "BAD_REQUEST" and "CAMPAIGN_SECRETS_KEY" in answer.text
    assert graph.run("MATCH (p:Profile) RETURN count(p) AS n")[0]["n"] == 0

    receiver = Receiver(secret=WEBHOOK_SECRET)  # holds the default secret: a POST signed with it verifies
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p-a"])
    with serve_in_thread(receiver.app()) as url:
        secrets_of(upsert(api, {"profileId": "p-a", "notificationsWebhook": f"{url}/hook"}))
        deliver(keyless, graph, tmp_path, "c1")  # a worker that cannot open the ring
    assert receiver.raw == [] and notified(graph, "c1") == []  # held for retry, never default-signed
