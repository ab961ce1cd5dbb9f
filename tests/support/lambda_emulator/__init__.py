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

Its rooms: ``serverless.py`` reads the file, ``functions.py`` each function and its events,
``queues.py`` creates and reads the queues, ``container.py`` runs a function's child process and
``runtime.py`` is that process (``python -m tests.support.lambda_emulator <module.handler>``),
``wire.py`` holds the events and answers in AWS's shapes, and ``emulator.py`` drives them.
"""

from tests.support.lambda_emulator.emulator import LambdaEmulator
from tests.support.lambda_emulator.serverless import (
    REPO_ROOT,
    CfnLoader,
    function_environment,
    load_serverless,
    resolve_value,
    ssm_parameter_names,
)
from tests.support.lambda_emulator.wire import HttpAnswer, Invocation, http_answer, http_event

__all__ = [
    "REPO_ROOT",
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
