"""A function as ``serverless.yml`` declares it: handler, timeout, memory, resolved environment and
the events that invoke it (SQS event source mappings, schedules, the catch-all HTTP API route)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.lambda_emulator.serverless import function_environment, resolve_value

__all__ = ["Function", "SqsSource", "read_function"]


@dataclass
class SqsSource:
    function: str
    queue: str  # logical name in resources
    batch_size: int
    report_failures: bool
    max_concurrency: int | None = None
    """``maximumConcurrency``: at most this many batches of this mapping at once (polls per turn)."""


@dataclass
class Function:
    name: str
    handler: str
    timeout: float
    memory: int
    env: dict[str, str]
    sqs: list[SqsSource] = field(default_factory=list)
    schedules: list[str] = field(default_factory=list)
    http: bool = False


def read_function(
    config: Mapping[str, Any],
    name: str,
    *,
    stage: str,
    ssm: Mapping[str, str],
    overrides: Mapping[str, str],
    queue_urls: Mapping[str, str],
    queue_arns: Mapping[str, str],
) -> Function:
    """One function of ``serverless.yml``: its handler, limits, resolved environment (with the test's
    ``overrides``) and events; an event or value the emulation does not know raises."""
    provider = config["provider"]
    spec = config["functions"][name]
    raw = function_environment(config, name)
    env = {
        key: resolve_value(value, stage=stage, ssm=ssm, refs=queue_urls, arns=queue_arns)
        for key, value in raw.items()
    }
    env.update(overrides)
    function = Function(
        name=name,
        handler=str(spec["handler"]),
        timeout=float(spec.get("timeout", provider.get("timeout", 6))),
        memory=int(spec.get("memorySize", provider.get("memorySize", 1024))),
        env=env,
    )
    arn_to_queue = {arn: queue_name for queue_name, arn in queue_arns.items()}
    for event in spec.get("events") or []:
        ((kind, source),) = event.items()
        if kind == "sqs":
            arn = source["arn"] if isinstance(source, Mapping) else source
            queue_name = arn["Fn::GetAtt"][0] if isinstance(arn, Mapping) else arn_to_queue[arn]
            settings = source if isinstance(source, Mapping) else {}
            function.sqs.append(
                SqsSource(
                    function=name,
                    queue=queue_name,
                    batch_size=int(settings.get("batchSize", 10)),
                    report_failures=settings.get("functionResponseType") == "ReportBatchItemFailures",
                    max_concurrency=(
                        int(settings["maximumConcurrency"]) if "maximumConcurrency" in settings else None
                    ),
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
