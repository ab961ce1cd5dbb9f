"""The SQS adapter of the queue port, plus the pure helpers the Lambda SQS handlers need.

Every botocore failure becomes ``QueueError`` (chained with ``from``), so workers handle one error type
whatever the backend. ``send_batch`` treats a partial batch failure as a failure: the caller (the page
job) must not commit its cursor past recipients whose delivery was never enqueued ("duplicate over drop").
Redelivery and dead-lettering are SQS's own (visibility timeout, queue RedrivePolicy).

Lanes (``port.Lane``, docs/lanes.md): SQS has no priorities within a queue, so a lane rank may have a
queue of its own (``lane_urls``; a rank without one uses the main queue). A receive asks the queues in
rank order and returns the first that has messages, long-polling only the last; its receipts name the
queue they came from, so delete and visibility changes reach it. Within a queue the tenant is the
message's ``MessageGroupId``: on a standard queue that is SQS's fair queueing, which gives each tenant
with a backlog its share of the consumers (equal shares: a tenant's ``weight`` is the local queue's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from campaign_engine.queue.port import (
    DEFAULT_LANE,
    Lane,
    QueueError,
    QueueStats,
    ReceivedMessage,
    check_delay,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

__all__ = ["SqsQueue", "batch_item_failures", "make_sqs_client", "parse_sqs_event"]

_BATCH = 10  # SendMessageBatch and ReceiveMessage ceiling
_MAX_WAIT_SECONDS = 20  # long-poll ceiling
_MAX_VISIBILITY_SECONDS = 43_200
_VENDOR_ERRORS = (BotoCoreError, ClientError)


class SqsQueue:
    def __init__(
        self, client: SQSClient, queue_url: str, *, lane_urls: Mapping[int, str] | None = None
    ) -> None:
        self._client = client
        self._url = queue_url
        self._lanes = {rank: url for rank, url in (lane_urls or {}).items() if url and url != queue_url}
        # The queues in the order a receive asks them; the main queue stands for every other rank.
        self._order = [url for _, url in sorted({**self._lanes, DEFAULT_LANE.rank: queue_url}.items())]

    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        check_delay(delay_seconds)
        url = self._url if lane is None else self._lanes.get(lane.rank, self._url)
        group = {} if lane is None or not lane.group else {"MessageGroupId": lane.group}
        for start in range(0, len(bodies), _BATCH):
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": str(index), "MessageBody": body, "DelaySeconds": delay_seconds, **group}  # type: ignore[typeddict-item]
                for index, body in enumerate(bodies[start : start + _BATCH])
            ]
            try:
                response = self._client.send_message_batch(QueueUrl=url, Entries=entries)
            except _VENDOR_ERRORS as exc:
                raise QueueError("SQS SendMessageBatch failed") from exc
            failed = response.get("Failed", [])
            if failed:
                codes = sorted({entry.get("Code", "?") for entry in failed})
                raise QueueError(f"SQS refused {len(failed)} of {len(entries)} messages: {', '.join(codes)}")

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]:
        if not 1 <= max_messages <= _BATCH:
            raise ValueError("max_messages must be 1..10")
        wait = min(_MAX_WAIT_SECONDS, max(0, round(wait_seconds)))
        for index, url in enumerate(self._order):
            last = index == len(self._order) - 1
            got = self._receive(url, max_messages, wait if last else 0)
            if got or last:
                return got if len(self._order) == 1 else [_tagged(m, index) for m in got]
        raise AssertionError("unreachable")

    def _receive(self, url: str, max_messages: int, wait: int) -> list[ReceivedMessage]:
        try:
            response = self._client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=max_messages,
                WaitTimeSeconds=wait,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
        except _VENDOR_ERRORS as exc:
            raise QueueError("SQS ReceiveMessage failed") from exc
        return [
            ReceivedMessage(
                message_id=message["MessageId"],
                receipt=message["ReceiptHandle"],
                body=message["Body"],
                receive_count=int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
            )
            for message in response.get("Messages", [])
        ]

    def _where(self, receipt: str) -> tuple[str, str]:
        """The queue a receipt came from and the handle SQS knows (module docstring)."""
        index, sep, handle = receipt.partition(_TAG)
        if sep and index.isdigit() and int(index) < len(self._order):
            return self._order[int(index)], handle
        return self._url, receipt

    def delete(self, receipt: str) -> None:
        url, handle = self._where(receipt)
        try:
            self._client.delete_message(QueueUrl=url, ReceiptHandle=handle)
        except _VENDOR_ERRORS as exc:
            raise QueueError("SQS DeleteMessage failed") from exc

    def delete_batch(self, receipts: Sequence[str]) -> None:
        """DeleteMessageBatch in chunks of 10; any failed entry raises (the message comes back: harmless)."""
        by_queue: dict[str, list[str]] = {}
        for receipt in receipts:
            url, handle = self._where(receipt)
            by_queue.setdefault(url, []).append(handle)
        for url, handles in by_queue.items():
            self._delete_chunks(url, handles)

    def _delete_chunks(self, url: str, receipts: Sequence[str]) -> None:
        for start in range(0, len(receipts), _BATCH):
            chunk = receipts[start : start + _BATCH]
            try:
                response = self._client.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(i), "ReceiptHandle": r} for i, r in enumerate(chunk)],
                )
            except _VENDOR_ERRORS as exc:
                raise QueueError("SQS DeleteMessageBatch failed") from exc
            failed = response.get("Failed", [])
            if failed:
                raise QueueError(f"SQS did not delete {len(failed)} of {len(chunk)} messages")

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None:
        if not 0 <= timeout_seconds <= _MAX_VISIBILITY_SECONDS:
            raise ValueError(f"timeout_seconds must be 0..{_MAX_VISIBILITY_SECONDS}")
        url, handle = self._where(receipt)
        try:
            self._client.change_message_visibility(
                QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=timeout_seconds
            )
        except _VENDOR_ERRORS as exc:
            raise QueueError("SQS ChangeMessageVisibility failed") from exc

    def stats(self) -> QueueStats:
        """The three approximate counts SQS offers (GetQueueAttributes). The oldest message's age is
        not among them: it is CloudWatch's AWS/SQS ApproximateAgeOfOldestMessage, and peeking with a
        receive would count against the redrive limit, so it is left to that metric."""
        try:
            attributes = self._client.get_queue_attributes(
                QueueUrl=self._url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            ).get("Attributes", {})
        except _VENDOR_ERRORS as exc:
            raise QueueError("SQS GetQueueAttributes failed") from exc
        return QueueStats(
            visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
            delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
            oldest_age_seconds=None,
        )


_TAG = "\x1f"  # between a lane queue's index and the SQS receipt handle (handles are base64)


def _tagged(message: ReceivedMessage, index: int) -> ReceivedMessage:
    receipt = f"{index}{_TAG}{message.receipt}"
    return ReceivedMessage(message.message_id, receipt, message.body, message.receive_count)


def make_sqs_client(endpoint_url: str | None, region: str) -> SQSClient:
    """A client with bounded timeouts and botocore's standard retry mode (throttling, 5xx).

    ``endpoint_url`` points at a local SQS-compatible server (moto, ElasticMQ); ``None`` means AWS.
    The read timeout exceeds the 20 s long-poll so a long poll is never cut short.
    """
    config = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 3})
    session = boto3.session.Session()
    return session.client("sqs", region_name=region, endpoint_url=endpoint_url, config=config)


def parse_sqs_event(event: Mapping[str, Any]) -> list[ReceivedMessage]:
    """The records of a Lambda SQS event as ``ReceivedMessage``; a malformed event raises ``ValueError``."""
    records = event.get("Records")
    if not isinstance(records, list):
        raise ValueError("not an SQS event: no Records list")
    messages: list[ReceivedMessage] = []
    for record in records:
        try:
            attributes = record.get("attributes") or {}
            messages.append(
                ReceivedMessage(
                    message_id=str(record["messageId"]),
                    receipt=str(record["receiptHandle"]),
                    body=str(record["body"]),
                    receive_count=int(attributes.get("ApproximateReceiveCount", "1")),
                )
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError("malformed SQS record") from exc
    return messages


def batch_item_failures(message_ids: Iterable[str]) -> dict[str, Any]:
    """The partial-batch answer (``ReportBatchItemFailures``): only these messages return to the queue."""
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in message_ids]}
