"""The container side: import the handler (the cold start), then serve invocations read from stdin.
Run as ``python -m tests.support.lambda_emulator <module.handler>``."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

__all__ = ["serve"]


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


def serve(handler_path: str) -> None:
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
