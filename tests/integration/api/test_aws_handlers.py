"""The Lambda SQS handlers against a real SQS-compatible server (moto) and real loopback receivers.

``page_handler`` and ``delivery_handler`` are called as Lambda calls them: settings from the environment,
an SQS event built from messages really received from the queue. One receiver acknowledges and one
answers 500, so the delivery handler must report exactly that message as a batch item failure.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from campaign_engine import aws
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.observability import metrics
from campaign_engine.queue.port import ReceivedMessage
from campaign_engine.queue.sqs import SqsQueue, make_sqs_client
from tests.support.delivery import (
    WEBHOOK_SECRET,
    ScriptedReceiver,
    ThreadServer,
    add_members,
    make_campaign,
    notified,
    start_dispatch,
)
from tests.support.moto_server import MOTO_REGION, moto_endpoint, sqs_env  # noqa: F401 - fixtures


def _event(messages: list[ReceivedMessage]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": m.message_id,
                "receiptHandle": m.receipt,
                "body": m.body,
                "attributes": {"ApproximateReceiveCount": str(m.receive_count)},
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
    }


def _clear_caches() -> None:
    for cached in (aws._settings, aws._graph, aws._queues, aws._table, aws._api):
        cached.cache_clear()


@pytest.fixture
def lambda_env(
    base_settings: Settings,
    moto_endpoint: str,  # noqa: F811 - fixture
    sqs_env: None,  # noqa: F811 - fixture
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[SqsQueue, SqsQueue]]:
    client = make_sqs_client(moto_endpoint, MOTO_REGION)
    urls = [
        client.create_queue(QueueName=f"{name}-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        for name in ("dispatch", "delivery")
    ]
    env = {
        "NEO4J_URI": base_settings.neo4j_uri,
        "NEO4J_USER": base_settings.neo4j_user,
        "NEO4J_PASSWORD": base_settings.neo4j_password.get_secret_value(),
        "CAMPAIGN_QUEUE_BACKEND": "sqs",
        "CAMPAIGN_DISPATCH_QUEUE_URL": urls[0],
        "CAMPAIGN_DELIVERY_QUEUE_URL": urls[1],
        "AWS_ENDPOINT_URL_SQS": moto_endpoint,
        "AWS_REGION": MOTO_REGION,
        "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS": "2",
        # No back-off: an uncertain delivery must be visible again at once, which only the handler's
        # per-message visibility change makes happen (the queue's own timeout is 30 s).
        "CAMPAIGN_DELIVERY_RETRY_SECONDS": "0",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CAMPAIGN_ENV_FILE", raising=False)
    _clear_caches()
    package_logger = logging.getLogger("campaign_engine")
    level = package_logger.level
    recorder = metrics.record_to(None)  # the handlers switch this process to EMF lines; put it back
    try:
        yield SqsQueue(client, urls[0]), SqsQueue(client, urls[1])
    finally:
        package_logger.setLevel(level)
        metrics.record_to(recorder)
        client.close()
        if aws._table.cache_info().currsize:
            aws._table().close()
        if aws._graph.cache_info().currsize:
            aws._graph().close()
        _clear_caches()


def test_page_and_delivery_handlers_report_partial_batch_failures(
    graph: Graph, lambda_env: tuple[SqsQueue, SqsQueue]
) -> None:
    dispatch_queue, delivery_queue = lambda_env
    good = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    bad = ScriptedReceiver([(500, b"busy", "text/plain")])
    make_campaign(graph, "c1")
    with ThreadServer(good.app()) as good_server, ThreadServer(bad.app()) as bad_server:
        add_members(graph, "c1", ["p1", "p3"], webhook=f"{good_server.url}/hook")
        add_members(graph, "c1", ["p2"], webhook=f"{bad_server.url}/hook")
        started = start_dispatch(graph, dispatch_queue)
        pages = dispatch_queue.receive(max_messages=10, wait_seconds=1)
        assert len(pages) == 1
        assert aws.page_handler(_event(pages), None) == {"batchItemFailures": []}

        deliveries: list[ReceivedMessage] = []
        for _ in range(10):
            deliveries += delivery_queue.receive(max_messages=10, wait_seconds=1)
            if len(deliveries) >= 3:
                break
        assert len(deliveries) == 3
        by_profile = {json.loads(m.body)["profileId"]: m.message_id for m in deliveries}
        answer = aws.delivery_handler(_event(deliveries), None)
    assert answer == {"batchItemFailures": [{"itemIdentifier": by_profile["p2"]}]}
    assert notified(graph, "c1") == ["p1", "p3"]
    assert get_dispatch(graph, started.dispatch_id).acknowledged == 2
    assert len(bad.received) == 1 and len(good.received) == 2
    # The retry's back-off is a per-message visibility change, as in the local runner.
    [again] = delivery_queue.receive(max_messages=10, wait_seconds=2)
    assert again.message_id == by_profile["p2"] and again.receive_count == 2
    # Lambda's root logger stays at WARNING; the handlers must still emit the package's INFO events.
    assert logging.getLogger("campaign_engine").getEffectiveLevel() == logging.INFO


def test_handlers_print_their_measurements_as_emf_lines(
    graph: Graph, lambda_env: tuple[SqsQueue, SqsQueue], capsys: pytest.CaptureFixture[str]
) -> None:
    dispatch_queue, _ = lambda_env
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    start_dispatch(graph, dispatch_queue)
    pages = dispatch_queue.receive(max_messages=10, wait_seconds=1)
    assert aws.page_handler(_event(pages), None) == {"batchItemFailures": []}
    aws.sweep_handler({}, None)

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    names = {metric["Name"] for line in lines for metric in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"pages_walked", "dispatches"} <= names  # nothing scrapes a Lambda: both arrive as EMF
    walked = next(line for line in lines if "pages_walked" in line)
    assert (walked["channel"], walked["pages_walked"]) == ("notify", 1)
    completed = [line for line in lines if line.get("dispatches") and line["status"] == "completed"]
    assert [(line["channel"], line["dispatches"]) for line in completed] == [("notify", 1.0)]
