"""LearnCard's receiver format against a real loopback receiver: every POST is an LCNNotification with
the engine's DID-auth bearer (verified here against the API's /.well-known/did.json with PyJWT), no
Standard Webhooks headers, and an answer of ``true`` (bare or in a tRPC envelope) counts each recipient
once. A tenant's notificationFormat changes only its own campaigns' sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import SecretStr

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.notify.page_walk import PageWorker
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.did.engine import new_seed
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.domain.tenant import TenantCreate
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import create_tenant
from campaign_engine.queue.port import Received
from campaign_engine.wiring import Queues, build_notification_worker, build_page_worker
from tests.support.api import api_client
from tests.support.delivery import (
    NOW,
    ScriptedReceiver,
    StepClock,
    ThreadServer,
    add_members,
    delivery_settings,
    local_queues,
    make_campaign,
    notified,
    start_dispatch,
)

DOMAIN = "campaigns.example"
ANSWERS = {"bare": b"true", "envelope": b'{"result":{"data":true}}'}


def _settings(base: Settings, **extra: Any) -> Settings:
    return delivery_settings(
        base, domain_name=DOMAIN, campaign_did_key=SecretStr(f"{new_seed()},{new_seed()}"), **extra
    )


def _send(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    workers: tuple[PageWorker, NotificationWorker] | None = None,
) -> None:
    """Walk the dispatch pages, then send one batch (with ``workers`` built earlier, as a running
    process has them)."""
    pages, worker = workers or (build_page_worker(settings, graph, queues, clock=StepClock()), None)
    for message in queues.dispatch.receive(max_messages=10):
        pages.handle_page(parse_job(message.body))  # type: ignore[arg-type]
        queues.dispatch.delete(message.receipt)
    worker = worker or build_notification_worker(settings, graph, clock=StepClock())
    try:
        batch = queues.delivery.receive(max_messages=10)
        items = [Received(m, parse_job(m.body)) for m in batch]
        worker.handle_batch([i for i in items if isinstance(i.job, DeliveryJob)])  # type: ignore[misc]
    finally:
        worker.close()


def _verify(token: str, document: dict[str, Any], audience: str) -> dict[str, Any]:
    """The bearer, checked as a receiver would: its kid is one of the DID's authentication keys."""
    kid = jwt.get_unverified_header(token)["kid"]
    assert kid in document["authentication"]
    (method,) = [m for m in document["verificationMethod"] if m["id"] == kid]
    key = jwt.PyJWK(method["publicKeyJwk"], algorithm="EdDSA").key
    claims: dict[str, Any] = jwt.decode(token, key, algorithms=["EdDSA"], audience=audience)
    assert claims["iss"] == claims["vp"]["holder"] == document["id"]
    return claims


@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_a_learncard_dispatch_posts_lcn_notifications_with_a_did_bearer(
    base_settings: Settings, graph: Graph, tmp_path: Path, answer: str
) -> None:
    settings = _settings(base_settings, notifications_format="learncard")
    receiver = ScriptedReceiver([(200, ANSWERS[answer], "application/json")])
    queues = local_queues(tmp_path / "q.sqlite3")
    created = make_campaign(graph, "c1")
    with ThreadServer(receiver.app()) as server:
        add_members(graph, "c1", ["p1"], webhook=f"{server.url}/hook", did="did:key:z6MkPerson")
        add_members(graph, "c1", ["p2"], webhook=f"{server.url}/hook")
        dispatch_id = start_dispatch(graph, queues.dispatch, "c1").dispatch_id
        _send(settings, graph, queues)
    with api_client(settings, graph) as api:
        document = api.http.get("/.well-known/did.json").json()
    assert document["id"] == f"did:web:{DOMAIN}" and len(document["authentication"]) == 2  # current, previous
    bodies = {}
    for post in receiver.received:
        headers = post["headers"]
        assert not {h for h in headers if h.startswith("webhook-")}
        scheme, token = headers["authorization"].split(" ", 1)
        assert scheme == "Bearer" and _verify(token, document, server.url)["aud"] == server.url
        body = json.loads(post["body"])
        bodies[body["to"]["profileId"]] = body
    assert {pid: b["to"]["did"] for pid, b in bodies.items()} == {
        "p1": "did:key:z6MkPerson", "p2": f"did:web:{DOMAIN}:users:p2"
    }  # fmt: skip
    first = bodies["p1"]
    assert first["type"] == "ANNOUNCEMENT" and first["from"] == {"did": document["id"]}
    assert first["message"] == {"title": "Big news", "body": "Something happened"}
    metadata = first["data"]["metadata"]
    assert metadata["campaignId"] == "c1" and metadata["campaignCreatedAt"] == created
    assert (
        metadata["dispatchId"] == dispatch_id
        and metadata["locale"] == "en"
        and "campaignTestId" not in metadata
    )
    assert first["sent"].endswith("Z")
    assert notified(graph, "c1") == ["p1", "p2"]
    assert get_dispatch(graph, dispatch_id).acknowledged == 2


def test_a_tenants_format_changes_only_its_own_sends(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = _settings(base_settings)  # the deployment's format: standard
    queues = local_queues(tmp_path / "q.sqlite3")
    workers = (  # a worker process running already: its records loaded a moment ago
        build_page_worker(settings, graph, queues, clock=StepClock()),
        build_notification_worker(settings, graph, clock=StepClock()),
    )
    assert "lc" not in tenants_of(graph, settings).records()
    lc = TenantCreate.model_validate(
        {"tenantId": "lc", "name": "LearnCard", "notificationFormat": "learncard"}
    )
    create_tenant(graph, data=lc, now=NOW, audit=None)  # by the API: the worker's cache is not told
    receiver = ScriptedReceiver([(200, b"true", "application/json")])
    with ThreadServer(receiver.app()) as server:
        for campaign, tenant in (("in-lc", "lc"), ("in-default", "default")):
            make_campaign(graph, campaign, tenant_id=tenant)
            add_members(graph, campaign, [f"{tenant}-member"], webhook=f"{server.url}/hook", tenants=[tenant])
            start_dispatch(graph, queues.dispatch, campaign)
        _send(settings, graph, queues, workers)
    shapes = {}
    for post in receiver.received:
        body = json.loads(post["body"])
        standard = "webhook-signature" in post["headers"]
        assert standard != ("authorization" in post["headers"])
        shapes[body["recipient"] if standard else body["to"]["profileId"]] = "standard" if standard else "lcn"
    assert shapes == {"lc-member": "lcn", "default-member": "standard"}
    assert notified(graph, "in-lc") == ["lc-member"] and notified(graph, "in-default") == ["default-member"]


def test_learncard_format_without_a_key_refuses_to_start(base_settings: Settings, graph: Graph) -> None:
    from campaign_engine.config import ConfigError

    settings = delivery_settings(
        base_settings, notifications_format="learncard", campaign_local_development=False
    )
    with pytest.raises(ConfigError, match="CAMPAIGN_DID_KEY"):
        build_notification_worker(settings, graph)
    with pytest.raises(ConfigError, match="CAMPAIGN_DID_KEY"):
        build_notification_worker(
            settings.model_copy(update={"campaign_did_key": SecretStr("not-a-key")}), graph
        )
