"""The Lambda emulator's SQS event source checked against Lambda's own rules, on a real SQS-compatible
server (moto): a batch is built into the records Lambda would build, and only the messages the function
did not report as failed (``ReportBatchItemFailures``) are deleted; the rest come back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.lambda_emulator import LambdaEmulator
from tests.support.moto_server import MOTO_REGION, moto_endpoint  # noqa: F401 - fixture

pytestmark = pytest.mark.e2e


SQS_RECORD_KEYS = {
    "messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfBody", "eventSource",
    "eventSourceARN", "awsRegion",
}  # fmt: skip


def report_odd_bodies(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The emulator check's handler: odd bodies fail, ``boom`` raises, ``sleep`` outlives the timeout
    (on its first receive only)."""
    records = event["Records"]
    for record in records:
        assert set(record) == SQS_RECORD_KEYS, record
        assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"].startswith("arn:aws:sqs:")
        assert {"ApproximateReceiveCount", "SentTimestamp"} <= set(record["attributes"]), record
    assert 0 < context.get_remaining_time_in_millis() <= 2000
    bodies = {record["body"] for record in records}
    if "boom" in bodies:
        raise RuntimeError("boom")
    if any(r["body"] == "sleep" and r["attributes"]["ApproximateReceiveCount"] == "1" for r in records):
        time.sleep(5)
    odd = [r["messageId"] for r in records if r["body"].isdigit() and int(r["body"]) % 2]
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in odd]}


def test_emulated_event_source_settles_batches_like_lambda(
    moto_endpoint: str,  # noqa: F811 - fixture
    tmp_path: Path,
) -> None:
    queue = {"arn": {"Fn::GetAtt": ["Work", "Arn"]}, "functionResponseType": "ReportBatchItemFailures"}
    config = {
        "service": "emulator-check",
        "provider": {"runtime": "python3.11", "timeout": 2},
        "functions": {
            "worker": {
                "handler": f"{__name__}.report_odd_bodies",
                "events": [{"sqs": {**queue, "batchSize": 10}}],
            }
        },
        "resources": {
            "Resources": {
                "WorkDeadLetters": {"Type": "AWS::SQS::Queue"},
                "Work": {
                    "Type": "AWS::SQS::Queue",
                    "Properties": {
                        "VisibilityTimeout": 1,
                        "RedrivePolicy": {
                            "deadLetterTargetArn": {"Fn::GetAtt": ["WorkDeadLetters", "Arn"]},
                            "maxReceiveCount": 2,
                        },
                    },
                },
            }
        },
    }
    with LambdaEmulator(
        config, sqs_endpoint=moto_endpoint, region=MOTO_REGION, ssm={}, overrides={}, log_dir=tmp_path
    ) as aws:
        aws.send("Work", ["0"])
        assert aws.turn() == 1  # the cold start, before the one-second visibility timeouts below count
        aws.send("Work", [str(n) for n in range(6)])
        assert aws.turn() == 6
        assert aws.errors == []
        # Only the reported messages stay (in flight until their visibility timeout ends).
        assert aws.queue_depths()["Work"] == {"Messages": 0, "MessagesNotVisible": 3, "MessagesDelayed": 0}
        time.sleep(1.2)
        assert aws.turn() == 3  # received a second time, reported again
        time.sleep(1.2)
        assert aws.turn() == 0  # a third receive is over maxReceiveCount: SQS moved them to the DLQ
        assert aws.queue_depths()["WorkDeadLetters"]["Messages"] == 3

        aws.send("Work", ["boom", "2"])
        assert aws.turn() == 2
        assert [e.error.splitlines()[0] for e in aws.errors if e.error] == ["RuntimeError: boom"]
        assert aws.queue_depths()["Work"]["MessagesNotVisible"] == 2  # an error settles nothing
        time.sleep(1.2)
        assert aws.turn() == 2  # the same two again: still an error
        time.sleep(1.2)
        aws.turn()

        aws.send("Work", ["sleep"])
        assert aws.turn() == 1
        assert aws.errors[-1].error == "Task timed out after 2 seconds"
        assert aws.cold_starts["worker"] == 1  # the container is gone; the next call starts a new one
        assert aws.turn() == 1  # visible again after the 1 s visibility timeout, its second receive
        assert aws.cold_starts["worker"] == 2
        assert aws.invocations[-1].result == {"batchItemFailures": []}
        depths = aws.queue_depths()
        assert not any(depths["Work"].values())
        assert depths["WorkDeadLetters"]["Messages"] == 5  # three odd numbers, "boom" and "2"
