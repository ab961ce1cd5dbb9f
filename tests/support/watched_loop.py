"""The API as its own uvicorn process, on an event loop that reports every slow callback.

asyncio's debug mode times each callback and task step the loop runs and logs ``Executing ... took``
for any at or past ``slow_callback_duration`` (100 ms here): a route that does graph or network I/O
on the loop shows up as soon as that I/O waits. The API runs in a child process (``python -m
tests.support.watched_loop PORT``, its settings from the environment, as ``campaign-engine serve``
reads them) so the test's own clients, worker and receivers never share its interpreter lock; each
report is a line ``SLOW-CALLBACK ...`` in the child's log, which ``WatchedApi.slow`` reads back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import free_port
from tests.support.processes import REPO_ROOT

SLOW_CALLBACK_SECONDS = 0.1
_MARK = "SLOW-CALLBACK "


class WatchedApi:
    def __init__(self, base: str, log: Path, pid: int) -> None:
        self.base, self.log, self.pid = base, log, pid

    def peak_rss_mb(self) -> float:
        """The process's peak resident memory so far (``VmHWM``, Linux /proc), in MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")

    def slow(self) -> list[str]:
        """The slow callbacks the API's loop reported so far."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return [line.removeprefix(_MARK) for line in lines if line.startswith(_MARK)]


@contextmanager
def watched_api(env: Mapping[str, str], log: Path, *, start_timeout: float = 90.0) -> Iterator[WatchedApi]:
    """The API on 127.0.0.1 in a child process with ``env``; stopped by its own pid on exit."""
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.watched_loop", str(port)],
            env=dict(env), cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_timeout
            while True:  # a condition, polled: the API answers /readyz once started
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the watched API did not start: {log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            yield WatchedApi(base, log, proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


class _Reports(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing"):
            sys.stdout.write(_MARK + message.replace("\n", " ") + "\n")
            sys.stdout.flush()


def _main(port: int) -> None:
    import uvicorn

    from campaign_engine.api.app import create_app
    from campaign_engine.config import Settings

    logger = logging.getLogger("asyncio")
    logger.setLevel(logging.WARNING)
    logger.addHandler(_Reports())
    app = create_app(Settings())
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", loop="asyncio")
    )
    loop = asyncio.new_event_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW_CALLBACK_SECONDS
    try:
        loop.run_until_complete(server.serve())
    finally:
        loop.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONASYNCIODEBUG", "1")
    _main(int(sys.argv[1]))
