"""What crosses the wire between AWS and a function: an invocation's outcome, SQS records, scheduled
events and API Gateway's HTTP API events (payload format 2.0) and answers, in Lambda's shapes."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from tests.support.lambda_emulator.serverless import ACCOUNT_ID

__all__ = ["HttpAnswer", "Invocation", "http_answer", "http_event", "scheduled_event", "sqs_record"]


@dataclass(frozen=True)
class Invocation:
    function: str
    seconds: float
    result: Any = None
    error: str | None = None  # handler exception, timeout or runtime exit, as Lambda would report it


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def sqs_record(message: Mapping[str, Any], arn: str, region: str) -> dict[str, Any]:
    """An SQS record exactly as Lambda's event source mapping hands it to the function."""
    body = str(message["Body"])
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {
            name: _lambda_message_attribute(value)
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": region,
    }


def scheduled_event(rule_name: str, region: str) -> dict[str, Any]:
    """EventBridge's scheduled event for the rule ``rule_name``."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": now,
        "region": region,
        "resources": [f"arn:aws:events:{region}:{ACCOUNT_ID}:rule/{rule_name}"],
        "detail": {},
    }


def _lambda_message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """SQS's ``{"StringValue", "DataType"}`` in Lambda's record shape."""
    binary = value.get("BinaryValue")
    return {
        "stringValue": value.get("StringValue"),
        "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
        "stringListValues": list(value.get("StringListValues") or []),
        "binaryListValues": [base64.b64encode(b).decode() for b in value.get("BinaryListValues") or []],
        "dataType": value.get("DataType", "String"),
    }


def http_event(
    method: str,
    path: str,
    *,
    query: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    region: str = "us-east-1",
) -> dict[str, Any]:
    """The API Gateway HTTP API event (payload format 2.0) of one request: what ``LambdaEmulator.http``
    sends its container, and what a test hands ``aws.api_handler`` in-process."""
    raw_query = urlencode(query or {})
    lowered = {
        "host": f"emulated.execute-api.{region}.amazonaws.com",
        "user-agent": "lambda-emulator",
        "x-forwarded-for": "127.0.0.1",
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
    }
    lowered.update({name.lower(): value for name, value in (headers or {}).items()})
    if body is not None:
        lowered["content-length"] = str(len(body))
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": "emulated",
            "domainName": lowered["host"],
            "domainPrefix": "emulated",
            "http": {
                "method": method.upper(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered["user-agent"],
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if "cookie" in lowered:
        event["cookies"] = [c.strip() for c in lowered.pop("cookie").split(";")]
    if raw_query:
        params: dict[str, list[str]] = {}
        for key, value in parse_qsl(raw_query, keep_blank_values=True):
            params.setdefault(key, []).append(value)
        event["queryStringParameters"] = {key: ",".join(values) for key, values in params.items()}
    if body is not None:
        content_type = lowered.get("content-type", "")
        if content_type.startswith("text/") or "json" in content_type or "xml" in content_type:
            event["body"] = body.decode()
        else:  # API Gateway base64-encodes every other body
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    return event


def http_answer(result: Any) -> HttpAnswer:
    """API Gateway's reading of a payload-2.0 answer: a proxy object, or any JSON as a 200 body."""
    if not (isinstance(result, Mapping) and "statusCode" in result):
        return HttpAnswer(200, {"content-type": "application/json"}, json.dumps(result).encode())
    headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name).lower()] = ",".join(str(v) for v in values)
    if result.get("cookies"):
        headers["set-cookie"] = ", ".join(result["cookies"])
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return HttpAnswer(int(result["statusCode"]), headers, body)
