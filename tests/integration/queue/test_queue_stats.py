"""Queue depth for the scrape-time gauges: the local queue's one SQL read and SQS's GetQueueAttributes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from campaign_engine.delivery.gauges import count_dispatches, scrape_gauges
from campaign_engine.graph.graph import Graph
from campaign_engine.observability.metrics_server import start_metrics_server
from campaign_engine.observability.metrics_serving import serving_registry
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import QueueStats
from campaign_engine.queue.sqs import SqsQueue, make_sqs_client
from tests.support.delivery import NOW, add_members, make_campaign, start_dispatch
from tests.support.moto_server import MOTO_REGION, moto_endpoint, sqs_env  # noqa: F401 - fixtures

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SteppingClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_local_queue_reports_each_state_and_the_oldest_age(tmp_path: Path) -> None:
    clock = SteppingClock()
    queue = LocalQueue(tmp_path / "q.sqlite3", "delivery", visibility_timeout=30, clock=clock)
    assert queue.stats() == QueueStats(visible=0, in_flight=0, delayed=0, oldest_age_seconds=None)

    queue.send_batch(["a", "b"])
    clock.now += 5
    queue.send_batch(["later"], delay_seconds=60)
    clock.now += 5
    received = queue.receive(max_messages=1)
    assert len(received) == 1

    assert queue.stats() == QueueStats(visible=1, in_flight=1, delayed=1, oldest_age_seconds=10.0)
    queue.delete(received[0].receipt)
    clock.now += 100  # the delay is over: everything left is visible; the oldest is "b"
    assert queue.stats() == QueueStats(visible=2, in_flight=0, delayed=0, oldest_age_seconds=110.0)
    queue.close()


def test_sqs_reports_its_three_approximate_counts(moto_endpoint: str, sqs_env: None) -> None:  # noqa: F811
    client: SQSClient = make_sqs_client(moto_endpoint, MOTO_REGION)
    try:
        url = client.create_queue(QueueName="stats-test")["QueueUrl"]
        queue = SqsQueue(client, url)
        queue.send_batch(["a", "b", "c"])
        queue.send_batch(["d"], delay_seconds=900)
        queue.receive(max_messages=1)
        stats = queue.stats()
    finally:
        client.close()  # its pool's sockets would warn when collected, in a later test
    assert (stats.visible, stats.in_flight, stats.delayed) == (2, 1, 1)
    assert stats.oldest_age_seconds is None  # not an SQS attribute: AWS/SQS ApproximateAgeOfOldestMessage


def test_dispatches_are_counted_by_channel_and_status(graph: Graph, tmp_path: Path) -> None:
    make_campaign(graph, "c1")
    add_members(graph, "c1", ["p1"])
    queue = LocalQueue(tmp_path / "q.sqlite3", "dispatch")
    start_dispatch(graph, queue, now=NOW)
    counts = graph.read(count_dispatches)
    assert counts[("notify", "sending")] == 1
    assert counts[("notify", "completed")] == 0  # every status is reported, zeros included

    readings = scrape_gauges(graph, {"dispatch": queue}).readings()
    by_name = {(m.name, tuple(sorted(labels.items()))): v for m, labels, v in readings}
    assert by_name[("campaign_engine_dispatches", (("channel", "notify"), ("status", "sending")))] == 1
    assert by_name[("campaign_engine_queue_messages", (("queue", "dispatch"), ("state", "visible")))] == 1
    queue.close()


def test_the_worker_metrics_server_opens_nothing_per_scrape(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "q.sqlite3", "delivery")
    queue.send_batch(["a"])
    registry = serving_registry(scrape_gauges(None, {"delivery": queue}), multiprocess_dir=None)
    server = start_metrics_server(registry, host="127.0.0.1", port=0, token=None)
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        assert 'campaign_engine_queue_messages{queue="delivery",state="visible"} 1.0' in httpx.get(url).text
        opened = len(os.listdir("/proc/self/fd"))
        for _ in range(30):
            assert httpx.get(url, timeout=10).status_code == 200
        # One serving thread, so one SQLite connection: a thread per scrape would leak one each time.
        assert len(os.listdir("/proc/self/fd")) <= opened + 2
        assert httpx.get(url.replace("/metrics", "/other"), timeout=10).status_code == 404
    finally:
        server.close()
        queue.close()
