"""One function's execution environment as the emulator sees it: a child process (``runtime.py``)
that imported the handler once and answers one JSON line per invocation."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any, cast

from tests.support.lambda_emulator.serverless import REPO_ROOT

__all__ = ["Container"]


class Container:
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
