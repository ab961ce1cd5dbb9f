"""The queues ``serverless.yml``'s ``resources`` declares, created on a real SQS-compatible server
(moto) with their attributes and redrive policies; a suffix per emulation keeps emulations apart on one
server. Reads and deletes are what an event source mapping does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = ["Queues"]

_ATTRIBUTES = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
)


class Queues:
    def __init__(self, resources: Mapping[str, Any], *, endpoint: str, region: str) -> None:
        import boto3

        self._resources = resources
        self._sqs: SQSClient = boto3.client(
            "sqs",
            endpoint_url=endpoint,
            region_name=region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self._suffix = uuid.uuid4().hex[:8]
        self.urls: dict[str, str] = {}
        self.arns: dict[str, str] = {}
        for name, resource in resources.items():
            if resource["Type"] == "AWS::SQS::Queue":
                self._create(name)

    def _create(self, name: str) -> str:
        """Creates the queue ``name`` (after any queue its redrive policy names); returns its ARN."""
        if name in self.arns:
            return self.arns[name]
        resource = self._resources[name]
        if resource["Type"] != "AWS::SQS::Queue":
            raise ValueError(f"{name} is a {resource['Type']}, not a queue")
        properties = dict(resource.get("Properties") or {})
        attributes: dict[str, str] = {}
        queue_name = str(properties.pop("QueueName", name))
        for key, value in properties.items():
            if key in _ATTRIBUTES:
                attributes[key] = str(int(value))
            elif key == "RedrivePolicy":
                target = value["deadLetterTargetArn"]["Fn::GetAtt"]
                assert target[1] == "Arn", target
                attributes[key] = json.dumps(
                    {
                        "deadLetterTargetArn": self._create(target[0]),
                        "maxReceiveCount": int(value["maxReceiveCount"]),
                    }
                )
            else:
                raise ValueError(f"the emulation does not know the queue property {name}.{key}")
        url = self._sqs.create_queue(
            QueueName=f"{queue_name}-{self._suffix}", Attributes=cast(Any, attributes)
        )["QueueUrl"]
        arn = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.urls[name], self.arns[name] = url, arn
        return arn

    def depths(self) -> dict[str, dict[str, int]]:
        """Per queue: visible, in flight (received, not deleted) and delayed messages."""
        depths: dict[str, dict[str, int]] = {}
        for name, url in self.urls.items():
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
            depths[name] = {key.removeprefix("ApproximateNumberOf"): int(v) for key, v in attributes.items()}
        return depths

    def send(self, name: str, bodies: list[str]) -> None:
        for start in range(0, len(bodies), 10):
            chunk = bodies[start : start + 10]
            entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(chunk)]
            self._sqs.send_message_batch(QueueUrl=self.urls[name], Entries=cast(Any, entries))

    def empty(self) -> bool:
        return all(not any(depth.values()) for depth in self.depths().values())

    def attributes(self, name: str) -> dict[str, str]:
        answer = self._sqs.get_queue_attributes(QueueUrl=self.urls[name], AttributeNames=["All"])
        return {str(key): value for key, value in answer["Attributes"].items()}

    def receive(self, name: str, batch_size: int) -> list[dict[str, Any]]:
        """Up to ``batch_size`` visible messages now, with every attribute (no long poll)."""
        messages: list[dict[str, Any]] = []
        while len(messages) < batch_size:
            got = self._sqs.receive_message(
                QueueUrl=self.urls[name],
                MaxNumberOfMessages=min(10, batch_size - len(messages)),
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not got:
                break
            messages.extend(cast(list[dict[str, Any]], got))
        return messages

    def delete(self, name: str, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            answer = self._sqs.delete_message_batch(
                QueueUrl=self.urls[name],
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            if answer.get("Failed"):
                raise AssertionError(f"SQS refused deletes: {answer['Failed']}")

    def close(self) -> None:
        self._sqs.close()
