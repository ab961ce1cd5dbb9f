"""The SQS adapter against a real SQS-compatible server (moto) on loopback, plus the Lambda helpers."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.exceptions import ClientError

from campaign_engine.queue.port import Lane, QueueError
from campaign_engine.queue.sqs import (
    SqsQueue,
    batch_item_failures,
    make_sqs_client,
    parse_sqs_event,
)
from tests.support.moto_server import MOTO_REGION, moto_endpoint, sqs_env  # noqa: F401 - fixtures

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@pytest.fixture
def client(moto_endpoint: str, sqs_env: None) -> Iterator[SQSClient]:  # noqa: F811
    """A client closed after the test: an open pool's sockets warn when collected, in a later test."""
    sqs = make_sqs_client(moto_endpoint, MOTO_REGION)
    yield sqs
    sqs.close()


def _create(client: SQSClient, **attributes: str) -> str:
    name = f"q-{uuid.uuid4().hex[:12]}"
    return client.create_queue(QueueName=name, Attributes=cast(Any, attributes))["QueueUrl"]


@pytest.fixture
def queue_url(client: SQSClient) -> str:
    return _create(client, VisibilityTimeout="30")


def _drain(queue: SqsQueue) -> list[str]:
    bodies: list[str] = []
    while got := queue.receive(max_messages=10):
        bodies.extend(m.body for m in got)
    return bodies


def test_send_batch_of_25_in_chunks_and_receive_all(client: SQSClient, queue_url: str) -> None:
    queue = SqsQueue(client, queue_url)
    sent = [json.dumps({"n": i}) for i in range(25)]

    queue.send_batch(sent)

    received = queue.receive(max_messages=10)
    assert len(received) == 10
    assert {m.receive_count for m in received} == {1}
    rest = _drain(queue)
    assert sorted([m.body for m in received] + rest) == sorted(sent)


def test_delete_removes_the_message(client: SQSClient) -> None:
    queue = SqsQueue(client, _create(client, VisibilityTimeout="0"))
    queue.send_batch(['"once"'])
    [message] = queue.receive()
    queue.delete(message.receipt)
    assert queue.receive() == []


def test_delete_batch_removes_every_message_in_chunks_of_ten(client: SQSClient) -> None:
    url = _create(client, VisibilityTimeout="30")
    queue = SqsQueue(client, url)
    queue.send_batch([f'"{n}"' for n in range(25)])
    received: dict[str, str] = {}
    for _ in range(20):
        received.update({m.message_id: m.receipt for m in queue.receive(max_messages=10)})
        if len(received) == 25:
            break
    queue.delete_batch(list(received.values()))
    attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_undeleted_message_comes_back_and_counts_receives(client: SQSClient) -> None:
    queue = SqsQueue(client, _create(client, VisibilityTimeout="30"))
    queue.send_batch(['"x"'])
    [first] = queue.receive()
    assert queue.receive() == []  # invisible for 30 s

    queue.change_visibility(first.receipt, timeout_seconds=0)
    [second] = queue.receive()

    assert second.message_id == first.message_id
    assert second.receive_count == 2
    queue.delete(second.receipt)
    assert queue.receive() == []


def test_delay_hides_message_and_long_poll_picks_it_up(client: SQSClient, queue_url: str) -> None:
    queue = SqsQueue(client, queue_url)
    queue.send_batch(['"later"'], delay_seconds=1)

    assert queue.receive() == []
    started = time.monotonic()
    got = queue.receive(wait_seconds=5)

    assert [m.body for m in got] == ['"later"']
    assert time.monotonic() - started < 4.5


@pytest.mark.parametrize("delay", [-1, 901])
def test_delay_outside_sqs_range_is_refused_before_io(client: SQSClient, queue_url: str, delay: int) -> None:
    queue = SqsQueue(client, queue_url)
    with pytest.raises(ValueError):
        queue.send_batch(['"x"'], delay_seconds=delay)
    assert queue.receive() == []


def test_redrive_policy_moves_poison_message_to_dead_letter_queue(client: SQSClient) -> None:
    dlq_url = _create(client)
    dlq_arn = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})
    queue = SqsQueue(client, _create(client, VisibilityTimeout="30", RedrivePolicy=redrive))
    queue.send_batch(['"poison"'])

    for _ in range(2):
        [message] = queue.receive()
        queue.change_visibility(message.receipt, timeout_seconds=0)  # the worker failed it
    assert queue.receive() == []

    assert [m.body for m in SqsQueue(client, dlq_url).receive()] == ['"poison"']


def test_vendor_errors_become_queue_errors(client: SQSClient, moto_endpoint: str) -> None:  # noqa: F811
    missing = SqsQueue(client, f"{moto_endpoint}/123456789012/no-such-queue")

    with pytest.raises(QueueError) as send_error:
        missing.send_batch(['"x"'])
    assert isinstance(send_error.value.__cause__, ClientError)
    with pytest.raises(QueueError):
        missing.receive()
    with pytest.raises(QueueError):
        missing.change_visibility("bogus", timeout_seconds=5)


def test_fifo_queue_rejecting_the_batch_is_a_queue_error(client: SQSClient) -> None:
    fifo_url = client.create_queue(
        QueueName=f"q-{uuid.uuid4().hex[:12]}.fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    with pytest.raises(QueueError):
        SqsQueue(client, fifo_url).send_batch(['"no group id"'])


# --- a partially failed batch -------------------------------------------------------------------
# moto only reports per-entry failures for invalid delays, which the adapter refuses before I/O. This
# stand-in speaks SQS's JSON protocol and fails one entry of every SendMessageBatch, as SQS may do.


class _PartialFailureSqs(BaseHTTPRequestHandler):
    batches: list[list[str]] = []

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.headers["X-Amz-Target"] == "AmazonSQS.SendMessageBatch"
        ids = [entry["Id"] for entry in request["Entries"]]
        self.batches.append(ids)
        answer = {
            "Successful": [{"Id": i, "MessageId": f"m-{i}", "MD5OfMessageBody": "0" * 32} for i in ids[1:]],
            "Failed": [{"Id": ids[0], "SenderFault": False, "Code": "InternalError", "Message": "try again"}],
        }
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def partial_failure_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PartialFailureSqs)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_any_failed_entry_fails_the_send(partial_failure_endpoint: str, sqs_env: None) -> None:  # noqa: F811
    client = make_sqs_client(partial_failure_endpoint, MOTO_REGION)
    queue = SqsQueue(client, f"{partial_failure_endpoint}/123456789012/delivery")

    try:
        with pytest.raises(QueueError, match="InternalError"):
            queue.send_batch([f'"{i}"' for i in range(3)])
    finally:
        client.close()
    assert _PartialFailureSqs.batches[-1] == ["0", "1", "2"]


# --- Lambda helpers ----------------------------------------------------------------------------


def test_parse_sqs_event_reads_lambda_records() -> None:
    event = {
        "Records": [
            {
                "messageId": "id-1",
                "receiptHandle": "rh-1",
                "body": '{"type": "delivery"}',
                "attributes": {"ApproximateReceiveCount": "3", "SentTimestamp": "1"},
                "eventSource": "aws:sqs",
            },
            {"messageId": "id-2", "receiptHandle": "rh-2", "body": "{}", "attributes": {}},
        ]
    }
    first, second = parse_sqs_event(event)
    assert (first.message_id, first.receipt, first.body, first.receive_count) == (
        "id-1",
        "rh-1",
        '{"type": "delivery"}',
        3,
    )
    assert second.receive_count == 1


@pytest.mark.parametrize(
    "event",
    [{}, {"Records": "nope"}, {"Records": [{"messageId": "x"}]}, {"Records": [None]}],
    ids=["no records", "records not a list", "missing fields", "record not an object"],
)
def test_parse_sqs_event_rejects_malformed_events(event: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        parse_sqs_event(event)


def test_batch_item_failures_shape() -> None:
    assert batch_item_failures(["a", "b"]) == {
        "batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]
    }
    assert batch_item_failures([]) == {"batchItemFailures": []}


def test_lanes_are_queues_asked_in_rank_order_and_receipts_find_their_queue(client: SQSClient) -> None:
    normal, critical, bulk = (_create(client, VisibilityTimeout="30") for _ in range(3))
    queue = SqsQueue(client, normal, lane_urls={0: critical, 2: bulk})
    queue.send_batch(['"b"'], lane=Lane(rank=2, group="alpha"))
    queue.send_batch(['"n"'])
    queue.send_batch(['"c"'], lane=Lane(rank=0, group="beta"))
    # The tenant is the message's group: SQS's fair queueing on a standard queue.
    peeked = client.receive_message(QueueUrl=bulk, VisibilityTimeout=0, MessageSystemAttributeNames=["All"])
    assert peeked["Messages"][0]["Attributes"].get("MessageGroupId") == "alpha"

    got = [queue.receive(max_messages=10) for _ in range(3)]

    assert [[m.body for m in batch] for batch in got] == [['"c"'], ['"n"'], ['"b"']]
    queue.change_visibility(got[0][0].receipt, timeout_seconds=0)  # reaches the critical queue
    [again] = queue.receive(max_messages=10)
    assert again.body == '"c"'
    queue.delete_batch([again.receipt, got[1][0].receipt])
    queue.delete(got[2][0].receipt)
    for url in (normal, critical, bulk):
        assert "Messages" not in client.receive_message(QueueUrl=url, VisibilityTimeout=0)
