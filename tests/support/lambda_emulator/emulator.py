"""The emulation's driver: each function of ``serverless.yml`` with its resolved environment and events,
its container, and the turns that poll its SQS event sources, fire its schedules and route HTTP."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from tests.support.lambda_emulator.container import Container
from tests.support.lambda_emulator.functions import Function, SqsSource, read_function
from tests.support.lambda_emulator.queues import Queues
from tests.support.lambda_emulator.serverless import (
    ACCOUNT_ID,
    REPO_ROOT,
)
from tests.support.lambda_emulator.wire import (
    HttpAnswer,
    Invocation,
    http_answer,
    http_event,
    scheduled_event,
    sqs_record,
)

__all__ = ["LambdaEmulator"]


class LambdaEmulator:
    """The functions, queues and event sources of one ``serverless.yml``, run locally.

    ``ssm`` maps parameter names (after ``${sls:stage}``) to values; ``overrides`` replaces resolved
    environment variables in every function (the test documents why each one differs from production).
    A turn polls each SQS event source once, or up to ``polls_per_turn[function]`` times while it finds
    messages: Lambda scales an event source's concurrent batches with the backlog. A function's sources
    are polled in rounds, one poll of each per round, as Lambda runs each mapping on pollers of its own
    (a queue per lane: a critical job never waits for a bulk backlog to drain); a source declaring
    ``maximumConcurrency`` is polled at most that many times a turn.
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
        self.config = config
        self.stage = stage
        self.region = region
        self.log_dir = log_dir
        self.sweep_every_turns = sweep_every_turns
        self._polls_per_turn = dict(polls_per_turn or {})
        self._python = python
        self._ssm = dict(ssm)
        self._overrides = dict(overrides)
        self.queues = Queues(
            config.get("resources", {}).get("Resources", {}), endpoint=sqs_endpoint, region=region
        )
        self.invocations: list[Invocation] = []
        self.cold_starts: Counter[str] = Counter()
        self.turns = 0
        self.first_handed: dict[str, datetime] = {}
        """Per queue, when its event source first handed a message to its function (a page's start)."""
        self._containers: dict[str, Container] = {}
        self.functions = {name: self._function(name) for name in config["functions"]}

    # --- the queues, as the tests read them ------------------------------------------------------

    @property
    def queue_urls(self) -> dict[str, str]:
        return self.queues.urls

    @property
    def queue_arns(self) -> dict[str, str]:
        return self.queues.arns

    def queue_depths(self) -> dict[str, dict[str, int]]:
        return self.queues.depths()

    def send(self, queue_name: str, bodies: list[str]) -> None:
        self.queues.send(queue_name, bodies)

    def queues_empty(self) -> bool:
        return self.queues.empty()

    def queue_attributes(self, name: str) -> dict[str, str]:
        return self.queues.attributes(name)

    # --- functions ----------------------------------------------------------------------------

    def _function(self, name: str) -> Function:
        return read_function(
            self.config,
            name,
            stage=self.stage,
            ssm=self._ssm,
            overrides=self._overrides,
            queue_urls=self.queue_urls,
            queue_arns=self.queue_arns,
        )

    def _lambda_env(self, function: Function) -> dict[str, str]:
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

    def _container(self, function: Function) -> Container | None:
        container = self._containers.pop(function.name, None)
        if container is not None:
            if container.alive:
                self._containers[function.name] = container
                return container
            container.kill()  # exited on its own: reap it and its pipes before the next cold start
        container = Container(
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

    def poll(self, source: SqsSource) -> int:
        """One poll of an SQS event source mapping; returns how many messages it handed over."""
        messages = self.queues.receive(source.queue, source.batch_size)
        if not messages:
            return 0
        self.first_handed.setdefault(source.queue, datetime.now(UTC))
        arn = self.queues.arns[source.queue]
        event = {"Records": [sqs_record(m, arn, self.region) for m in messages]}
        invocation = self.invoke(source.function, event)
        failed = self._failed_ids(invocation, source, {m["MessageId"] for m in messages})
        self.queues.delete(source.queue, [m for m in messages if m["MessageId"] not in failed])
        return len(messages)

    def _failed_ids(self, invocation: Invocation, source: SqsSource, batch: set[str]) -> set[str]:
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
                rule = f"{self.config['service']}-{self.stage}-{function.name}"
                self.invoke(function.name, scheduled_event(rule, self.region))

    def turn(self) -> int:
        """One pass over every SQS event source (and the schedules every ``sweep_every_turns``)."""
        self.turns += 1
        handled = 0
        for function in self.functions.values():
            budget = self._polls_per_turn.get(function.name, 1)
            caps = [min(budget, source.max_concurrency or budget) for source in function.sqs]
            polls = [0] * len(function.sqs)
            for _ in range(budget):
                found = False
                for i, source in enumerate(function.sqs):
                    if polls[i] >= caps[i]:
                        continue
                    got = self.poll(source)
                    handled += got
                    polls[i] = polls[i] + 1 if got else caps[i]  # an empty source waits for the next turn
                    found = found or bool(got)
                if not found:
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
        self.queues.close()

    def __enter__(self) -> LambdaEmulator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
