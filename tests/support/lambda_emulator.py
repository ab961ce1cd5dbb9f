"""Runs the functions and queues that ``serverless.yml`` declares the way AWS Lambda would run them.

The deployment file is the input, not a copy of it: queues come from ``resources`` (attributes and
redrive policies included) and are created on a real SQS-compatible server (moto); each function's
environment is ``provider.environment`` merged with its own, with ``${ssm:...}`` and ``!Ref``/``!GetAtt``
resolved to test values; its handler is imported by the dotted path the YAML names; its events decide
how it is invoked:

- ``sqs``: receive up to ``batchSize`` messages, build the records as Lambda does, invoke, then delete
  every message except those reported in ``batchItemFailures`` (``ReportBatchItemFailures``). An error
  or a timeout fails the whole batch: nothing is deleted.
- ``schedule``: an EventBridge scheduled event every ``sweep_every_turns`` loop turns.
- ``httpApi``: API Gateway HTTP API events (payload format 2.0); the proxy answer is parsed back.

Each function runs in its own child process, its "container": the handler module is imported once at
cold start and serves every invocation, with only its own environment (so per-function settings and
per-container caches behave as on Lambda). Like Lambda's runtime it adds a handler to the root logger
and leaves the level alone; the container's output is kept in a log file. An invocation longer than
the function's ``timeout`` kills the container, as Lambda does; the next one starts a fresh container.

Deliberate simplifications: one container per function (Lambda may run several concurrently), no
batching-window wait (a batch is whatever is visible now, up to ``batchSize``), and scheduled events
are paced by loop turns instead of wall-clock time.

Run as ``python -m tests.support.lambda_emulator <module.handler>`` this module is the container side.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, urlencode

import yaml

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "CfnLoader",
    "HttpAnswer",
    "Invocation",
    "LambdaEmulator",
    "function_environment",
    "http_answer",
    "http_event",
    "load_serverless",
    "resolve_value",
    "ssm_parameter_names",
]

ACCOUNT_ID = "123456789012"
REPO_ROOT = Path(__file__).resolve().parents[2]


# --- reading serverless.yml ------------------------------------------------------------------------


class CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short tags (!Ref, !GetAtt, ...) as {"Ref": ...} style mappings."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


CfnLoader.add_multi_constructor("!", _tag)


def load_serverless(path: Path = REPO_ROOT / "serverless.yml") -> dict[str, Any]:
    return dict(yaml.load(path.read_text(encoding="utf-8"), Loader=CfnLoader))


_SSM = re.compile(r"\$\{ssm:([^{}]*(?:\$\{sls:stage\}[^{}]*)*)\}")
_VARIABLE = re.compile(r"\$\{([^{}]+)\}")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def ssm_parameter_names(config: Mapping[str, Any], *, stage: str = "${sls:stage}") -> set[str]:
    """Every SSM parameter the file reads, with ``${sls:stage}`` written as ``stage``."""
    return {
        match.group(1).replace("${sls:stage}", stage)
        for text in _strings(config)
        for match in _SSM.finditer(text)
    }


def function_environment(config: Mapping[str, Any], function: str) -> dict[str, Any]:
    """What Lambda gets for one function: ``provider.environment`` overlaid with the function's own."""
    provider = dict(config["provider"].get("environment") or {})
    own = dict(config["functions"][function].get("environment") or {})
    return {**provider, **own}


def resolve_value(
    value: Any,
    *,
    stage: str,
    ssm: Mapping[str, str],
    refs: Mapping[str, str],
    arns: Mapping[str, str],
) -> str:
    """One environment value as deployed: Serverless variables, then CloudFormation intrinsics.

    Anything this cannot resolve raises, so a new ``${...}`` source or ``!Ref`` in serverless.yml
    fails the emulation loudly instead of reaching a handler as literal text.
    """
    if isinstance(value, Mapping):
        if set(value) == {"Ref"}:
            return refs[value["Ref"]]
        if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][1] == "Arn":
            return arns[value["Fn::GetAtt"][0]]
        raise ValueError(f"cannot resolve {value!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)

    def variable(match: re.Match[str]) -> str:
        source = match.group(1).strip()
        if source == "sls:stage":
            return stage
        if source.startswith("ssm:"):
            name = source.removeprefix("ssm:")
            if name not in ssm:
                raise KeyError(f"serverless.yml reads SSM parameter {name}; give the emulation a value")
            return ssm[name]
        raise ValueError(f"unsupported Serverless variable ${{{source}}}")

    while True:  # innermost first: ${ssm:/x/${sls:stage}/y}
        text, count = _VARIABLE.subn(variable, text)
        if not count:
            return text


# --- what crosses the wire between the emulator and a container -------------------------------------


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


class _Container:
    """One function's execution environment: a child process that imported the handler once."""

    def __init__(self, *, function: str, handler: str, env: dict[str, str], log: Path, python: str) -> None:
        self.function = function
        self._log = log.open("ab")
        self._process = subprocess.Popen(
            [python, "-m", "tests.support.lambda_emulator", handler],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._answers: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.init_error: str | None = None

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._answers.put(line)
        self._answers.put(b"")  # EOF: the runtime exited

    def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            return None
        if not line:
            return {"error": f"Runtime exited with code {self._process.wait()}"}
        return cast(dict[str, Any], json.loads(line))

    def start(self, timeout: float) -> None:
        answer = self._next(timeout)
        if answer is None:
            self.init_error = f"Init timed out after {timeout:.0f} seconds"
        elif "ready" not in answer:
            self.init_error = str(answer.get("initError") or answer.get("error"))

    @property
    def alive(self) -> bool:
        return self.init_error is None and self._process.poll() is None

    def invoke(self, event: Any, context: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The answer line, or None when the invocation ran past ``timeout``."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps({"event": event, "context": context}).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            return {"error": f"Runtime exited with code {self._process.wait()}"}
        return self._next(timeout)

    def stop(self) -> None:
        """Close stdin (the runtime leaves its loop); kill it if it does not go, as Lambda reclaims."""
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=5)
        self._release()

    def kill(self) -> None:
        self._process.kill()
        self._process.wait(timeout=5)
        self._release()

    def _release(self) -> None:
        self._reader.join(timeout=5)  # it ends at the pipe's EOF
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._log.close()


@dataclass
class _SqsSource:
    function: str
    queue: str  # logical name in resources
    batch_size: int
    report_failures: bool


@dataclass
class _Function:
    name: str
    handler: str
    timeout: float
    memory: int
    env: dict[str, str]
    sqs: list[_SqsSource] = field(default_factory=list)
    schedules: list[str] = field(default_factory=list)
    http: bool = False


# --- the emulator ---------------------------------------------------------------------------------


class LambdaEmulator:
    """The functions, queues and event sources of one ``serverless.yml``, run locally.

    ``ssm`` maps parameter names (after ``${sls:stage}``) to values; ``overrides`` replaces resolved
    environment variables in every function (the test documents why each one differs from production).
    A turn polls each SQS event source once, or up to ``polls_per_turn[function]`` times while it finds
    messages: Lambda scales an event source's concurrent batches with the backlog.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        sqs_endpoint: str,
        region: str,
        ssm: Mapping[str, str],
        overrides: Mapping[str, str],
        log_dir: Path,
        stage: str = "test",
        sweep_every_turns: int = 20,
        polls_per_turn: Mapping[str, int] | None = None,
        python: str = sys.executable,
    ) -> None:
        import boto3

        self.config = config
        self.stage = stage
        self.region = region
        self.log_dir = log_dir
        self.sweep_every_turns = sweep_every_turns
        self._polls_per_turn = dict(polls_per_turn or {})
        self._python = python
        self._ssm = dict(ssm)
        self._overrides = dict(overrides)
        self._sqs: SQSClient = boto3.client(
            "sqs",
            endpoint_url=sqs_endpoint,
            region_name=region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self._sqs_endpoint = sqs_endpoint
        self.queue_urls: dict[str, str] = {}
        self.queue_arns: dict[str, str] = {}
        self.invocations: list[Invocation] = []
        self.cold_starts: Counter[str] = Counter()
        self.turns = 0
        self._containers: dict[str, _Container] = {}
        self._suffix = uuid.uuid4().hex[:8]
        self._create_queues()
        self.functions = {name: self._function(name) for name in config["functions"]}

    # --- resources ----------------------------------------------------------------------------

    def _resources(self) -> Mapping[str, Any]:
        return cast(Mapping[str, Any], self.config.get("resources", {}).get("Resources", {}))

    def _create_queues(self) -> None:
        for name, resource in self._resources().items():
            if resource["Type"] == "AWS::SQS::Queue":
                self._queue(name)

    def _queue(self, name: str) -> str:
        """Creates the queue ``name`` (after any queue its redrive policy names); returns its ARN."""
        if name in self.queue_arns:
            return self.queue_arns[name]
        resource = self._resources()[name]
        if resource["Type"] != "AWS::SQS::Queue":
            raise ValueError(f"{name} is a {resource['Type']}, not a queue")
        properties = dict(resource.get("Properties") or {})
        attributes: dict[str, str] = {}
        queue_name = str(properties.pop("QueueName", name))
        for key, value in properties.items():
            if key in (
                "VisibilityTimeout",
                "MessageRetentionPeriod",
                "DelaySeconds",
                "MaximumMessageSize",
                "ReceiveMessageWaitTimeSeconds",
            ):
                attributes[key] = str(int(value))
            elif key == "RedrivePolicy":
                target = value["deadLetterTargetArn"]["Fn::GetAtt"]
                assert target[1] == "Arn", target
                attributes[key] = json.dumps(
                    {
                        "deadLetterTargetArn": self._queue(target[0]),
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
        self.queue_urls[name], self.queue_arns[name] = url, arn
        return arn

    def queue_depths(self) -> dict[str, dict[str, int]]:
        """Per queue: visible, in flight (received, not deleted) and delayed messages."""
        depths: dict[str, dict[str, int]] = {}
        for name, url in self.queue_urls.items():
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

    def send(self, queue_name: str, bodies: list[str]) -> None:
        for start in range(0, len(bodies), 10):
            chunk = bodies[start : start + 10]
            entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(chunk)]
            self._sqs.send_message_batch(QueueUrl=self.queue_urls[queue_name], Entries=cast(Any, entries))

    def queues_empty(self) -> bool:
        return all(not any(depth.values()) for depth in self.queue_depths().values())

    def queue_attributes(self, name: str) -> dict[str, str]:
        answer = self._sqs.get_queue_attributes(QueueUrl=self.queue_urls[name], AttributeNames=["All"])
        return {str(key): value for key, value in answer["Attributes"].items()}

    # --- functions ----------------------------------------------------------------------------

    def _function(self, name: str) -> _Function:
        provider = self.config["provider"]
        spec = self.config["functions"][name]
        raw = function_environment(self.config, name)
        env = {
            key: resolve_value(
                value, stage=self.stage, ssm=self._ssm, refs=self.queue_urls, arns=self.queue_arns
            )
            for key, value in raw.items()
        }
        env.update(self._overrides)
        function = _Function(
            name=name,
            handler=str(spec["handler"]),
            timeout=float(spec.get("timeout", provider.get("timeout", 6))),
            memory=int(spec.get("memorySize", provider.get("memorySize", 1024))),
            env=env,
        )
        arn_to_queue = {arn: queue_name for queue_name, arn in self.queue_arns.items()}
        for event in spec.get("events") or []:
            ((kind, source),) = event.items()
            if kind == "sqs":
                arn = source["arn"] if isinstance(source, Mapping) else source
                queue_name = arn["Fn::GetAtt"][0] if isinstance(arn, Mapping) else arn_to_queue[arn]
                settings = source if isinstance(source, Mapping) else {}
                function.sqs.append(
                    _SqsSource(
                        function=name,
                        queue=queue_name,
                        batch_size=int(settings.get("batchSize", 10)),
                        report_failures=settings.get("functionResponseType") == "ReportBatchItemFailures",
                    )
                )
            elif kind == "schedule":
                rate = source["rate"] if isinstance(source, Mapping) else source
                function.schedules.extend(rate if isinstance(rate, list) else [rate])
            elif kind == "httpApi":
                if source not in ("*", {"method": "*", "path": "*"}):
                    raise ValueError(f"the emulation routes only catch-all httpApi events, not {source!r}")
                function.http = True
            else:
                raise ValueError(f"the emulation does not know the {kind!r} event of {name}")
        return function

    def _lambda_env(self, function: _Function) -> dict[str, str]:
        """What Lambda sets itself (reserved: the function's environment cannot change these), then the
        function's resolved environment. Nothing else from the test process leaks in."""
        runtime = str(self.config["provider"]["runtime"])
        full_name = f"{self.config['service']}-{self.stage}-{function.name}"
        reserved = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": str(REPO_ROOT),
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{runtime}",
            "AWS_LAMBDA_FUNCTION_NAME": full_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{full_name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"emulated/{uuid.uuid4().hex}",
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            # The execution role's session credentials; moto accepts any.
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
        }
        return {**function.env, **reserved}

    def _container(self, function: _Function) -> _Container | None:
        container = self._containers.pop(function.name, None)
        if container is not None:
            if container.alive:
                self._containers[function.name] = container
                return container
            container.kill()  # exited on its own: reap it and its pipes before the next cold start
        container = _Container(
            function=function.name,
            handler=function.handler,
            env=self._lambda_env(function),
            log=self.log_path(function.name),
            python=self._python,
        )
        container.start(timeout=max(10.0, function.timeout))
        self.cold_starts[function.name] += 1
        self._containers[function.name] = container
        return container if container.init_error is None else None

    def log_path(self, function: str) -> Path:
        return self.log_dir / f"{function}.log"

    def log_text(self, function: str) -> str:
        path = self.log_path(function)
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def invoke(self, name: str, event: Any) -> Invocation:
        """One synchronous invocation, with Lambda's outcome for errors, timeouts and crashes."""
        function = self.functions[name]
        started = time.monotonic()
        container = self._container(function)
        if container is None:
            error = self._containers[name].init_error
            self._containers.pop(name).kill()
            return self._record(Invocation(name, time.monotonic() - started, error=f"Init error: {error}"))
        full_name = f"{self.config['service']}-{self.stage}-{name}"
        context = {
            "function_name": full_name,
            "function_version": "$LATEST",
            "invoked_function_arn": f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{full_name}",
            "memory_limit_in_mb": str(function.memory),
            "aws_request_id": str(uuid.uuid4()),
            "log_group_name": f"/aws/lambda/{full_name}",
            "log_stream_name": "emulated",
            "deadline_ms": int(time.time() * 1000 + function.timeout * 1000),
        }
        answer = container.invoke(event, context, timeout=function.timeout)
        seconds = time.monotonic() - started
        if answer is None:
            container.kill()
            self._containers.pop(name)
            return self._record(
                Invocation(name, seconds, error=f"Task timed out after {function.timeout:.0f} seconds")
            )
        if "error" in answer:
            if not container.alive:
                self._containers.pop(name).kill()
            return self._record(Invocation(name, seconds, error=str(answer["error"])))
        return self._record(Invocation(name, seconds, result=answer["result"]))

    def _record(self, invocation: Invocation) -> Invocation:
        self.invocations.append(invocation)
        return invocation

    @property
    def errors(self) -> list[Invocation]:
        return [i for i in self.invocations if i.error is not None]

    # --- event sources ------------------------------------------------------------------------

    def poll(self, source: _SqsSource) -> int:
        """One poll of an SQS event source mapping; returns how many messages it handed over."""
        url, arn = self.queue_urls[source.queue], self.queue_arns[source.queue]
        messages: list[dict[str, Any]] = []
        while len(messages) < source.batch_size:
            got = self._sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(10, source.batch_size - len(messages)),
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not got:
                break
            messages.extend(cast(list[dict[str, Any]], got))
        if not messages:
            return 0
        event = {"Records": [self._record_of(m, arn) for m in messages]}
        invocation = self.invoke(source.function, event)
        failed = self._failed_ids(invocation, source, {m["MessageId"] for m in messages})
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            chunk = done[start : start + 10]
            answer = self._sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            if answer.get("Failed"):
                raise AssertionError(f"SQS refused deletes: {answer['Failed']}")
        return len(messages)

    def _record_of(self, message: Mapping[str, Any], arn: str) -> dict[str, Any]:
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
            "awsRegion": self.region,
        }

    def _failed_ids(self, invocation: Invocation, source: _SqsSource, batch: set[str]) -> set[str]:
        """Lambda's reading of the answer: an error fails the batch; a partial-batch answer naming an
        unknown or empty itemIdentifier fails the whole batch as well."""
        if invocation.error is not None:
            return batch
        if not source.report_failures:
            return set()
        result = invocation.result
        if result is None or (isinstance(result, Mapping) and not result.get("batchItemFailures")):
            return set()
        items = result.get("batchItemFailures") if isinstance(result, Mapping) else None
        if not isinstance(items, list):
            self._record(Invocation(source.function, 0.0, error=f"invalid partial-batch answer {result!r}"))
            return batch
        ids = {item.get("itemIdentifier") if isinstance(item, Mapping) else None for item in items}
        if not ids <= batch:
            self._record(
                Invocation(source.function, 0.0, error=f"batchItemFailures outside the batch: {items!r}")
            )
            return batch
        return cast(set[str], ids)

    def tick_schedules(self) -> None:
        for function in self.functions.values():
            for _ in function.schedules:
                self.invoke(function.name, self._scheduled_event(function.name))

    def _scheduled_event(self, function: str) -> dict[str, Any]:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rule = (
            f"arn:aws:events:{self.region}:{ACCOUNT_ID}:rule/{self.config['service']}-{self.stage}-{function}"
        )
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT_ID,
            "time": now,
            "region": self.region,
            "resources": [rule],
            "detail": {},
        }

    def turn(self) -> int:
        """One pass over every SQS event source (and the schedules every ``sweep_every_turns``)."""
        self.turns += 1
        handled = 0
        for function in self.functions.values():
            for source in function.sqs:
                for _ in range(self._polls_per_turn.get(function.name, 1)):
                    got = self.poll(source)
                    handled += got
                    if not got:
                        break
        if self.turns % self.sweep_every_turns == 0:
            self.tick_schedules()
        return handled

    def run_until(self, done: Callable[[], bool], *, timeout: float, idle_sleep: float = 0.1) -> None:
        """Turns until ``done()`` holds; ``done`` is asked only after a turn found no message."""
        deadline = time.monotonic() + timeout
        while True:
            idle = not self.turn()
            if idle and done():
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not done after {timeout:.0f} s ({self.turns} turns): queues {self.queue_depths()}, "
                    f"errors {self.errors[-3:]}"
                )
            if idle:
                time.sleep(idle_sleep)

    # --- HTTP API ---------------------------------------------------------------------------------

    def http(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
    ) -> HttpAnswer:
        """One request through API Gateway (HTTP API, payload format 2.0) to the function serving it."""
        (function,) = [f for f in self.functions.values() if f.http]
        raw_body = body.encode() if isinstance(body, str) else body
        invocation = self.invoke(function.name, self._http_event(method, path, query, headers, raw_body))
        if invocation.error is not None:
            status = 503 if invocation.error.startswith("Task timed out") else 500
            message = "Service Unavailable" if status == 503 else "Internal Server Error"
            return HttpAnswer(
                status, {"content-type": "application/json"}, json.dumps({"message": message}).encode()
            )
        return http_answer(invocation.result)

    def _http_event(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        body: bytes | None,
    ) -> dict[str, Any]:
        return http_event(method, path, query=query, headers=headers, body=body, region=self.region)

    def close(self) -> None:
        for container in self._containers.values():
            container.stop()
        self._containers.clear()
        self._sqs.close()

    def __enter__(self) -> LambdaEmulator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


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


# --- the container side ---------------------------------------------------------------------------


class _Context:
    """The attributes of Lambda's Python context object that handlers read."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.function_name: str = data["function_name"]
        self.function_version: str = data["function_version"]
        self.invoked_function_arn: str = data["invoked_function_arn"]
        self.memory_limit_in_mb: str = data["memory_limit_in_mb"]
        self.aws_request_id: str = data["aws_request_id"]
        self.log_group_name: str = data["log_group_name"]
        self.log_stream_name: str = data["log_stream_name"]
        self.identity: Any = None
        self.client_context: Any = None
        self._deadline_ms: int = data["deadline_ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc))


def _serve(handler_path: str) -> None:
    """Import the handler (cold start), then answer one JSON line per invocation on the original stdout."""
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # what the handler prints goes to the log, as on Lambda
    root = logging.getLogger()  # Lambda's runtime adds its handler and leaves the level at WARNING
    handler_for_logs = logging.StreamHandler(sys.stderr)
    handler_for_logs.setFormatter(logging.Formatter("[%(levelname)s]\t%(name)s\t%(message)s"))
    root.addHandler(handler_for_logs)

    def answer(data: Mapping[str, Any]) -> None:
        try:
            line = json.dumps(data)
        except (TypeError, ValueError) as exc:  # Lambda's Runtime.MarshalError
            line = json.dumps({"error": f"Runtime.MarshalError: {exc}"})
        pending = memoryview((line + "\n").encode())
        while pending:  # unbuffered: straight to the pipe, however large
            pending = pending[answers.write(pending) or 0 :]

    module_name, _, attribute = handler_path.rpartition(".")
    try:
        handler = getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:
        answer({"initError": _error(exc)})
        return
    answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = handler(request["event"], _Context(request["context"]))
        except Exception as exc:
            sys.stderr.write(_error(exc))
            answer({"error": _error(exc)})
        else:
            answer({"result": result})
    sys.stderr.flush()
    os._exit(0)  # the sandbox is reclaimed, not shut down: no atexit hooks, no thread joins


if __name__ == "__main__":
    _serve(sys.argv[1])
