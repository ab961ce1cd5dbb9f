"""The API as its own uvicorn process, on an event loop that reports every slow callback.

asyncio's debug mode times each callback and task step the loop runs and logs ``Executing ... took``
for any at or past ``slow_callback_duration`` (100 ms here): a route that does graph or network I/O
on the loop shows up as soon as that I/O waits. The loop keeps that detection without the rest of the
mode (``_WatchedLoop``): no deployment captures a stack for every future and handle, and a capture
stats each file of the stack, every stat handing the interpreter lock to another thread and waiting
for it back, which on a loaded process added its own slow callbacks to the product's.

The API runs in a child process (``python -m tests.support.watched_loop PORT``, its settings from the
environment, as ``campaign-engine serve`` reads them) so the test's own clients, worker and receivers
never share its interpreter lock; each report is a line ``SLOW-CALLBACK ...`` in the child's log,
which ``WatchedApi.slow`` reads back.

asyncio times a callback in wall time, and on a loaded machine the loop thread may wait for a CPU in
the middle of one, or for the interpreter lock while the thread holding it waits for a CPU. Each report
therefore also says how the handle's time splits (``tests/support/cpu_waits.py``, read before and after
every handle): ``took X seconds (cpu Y, runqueue Z, others' runqueue W)``; ``on_the_loop`` is the part
no busy machine explains.
"""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from campaign_engine.config import Settings
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, TEST_SECRETS_KEY, free_port
from tests.support.cpu_waits import Split, Threads, split
from tests.support.delivery_processes import clean_env
from tests.support.processes import REPO_ROOT

SLOW_CALLBACK_SECONDS = 0.1
_MARK = "SLOW-CALLBACK "
_SPLIT = re.compile(
    r"took ([0-9.]+) seconds \(cpu ([0-9.]+), runqueue ([0-9.]+), others' runqueue ([0-9.]+),"
    r" others' cpu ([0-9.]+)\)( in | waiting on a lock in )?"
)


def on_the_loop(report: str) -> float:
    """A report's seconds less what a busy machine explains: the time the loop computed or blocked."""
    found = _SPLIT.search(report)
    assert found is not None, report
    took, cpu, runqueue, others, others_cpu = (float(found.group(i)) for i in (1, 2, 3, 4, 5))
    where = found.group(6)
    split = Split(took, cpu, runqueue, others, others_cpu, found=where is not None, in_call=where == " in ")
    return split.own


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

    def blocking(self, seconds: float = SLOW_CALLBACK_SECONDS) -> list[str]:
        """The reports of ``seconds`` or more on the loop: it computed or waited on something itself."""
        return [report for report in self.slow() if on_the_loop(report) >= seconds]


def api_env(settings: Settings, **named: str) -> dict[str, str]:
    """The API process's settings: the test's graph, queue file and secrets, its ``named`` settings,
    nothing inherited."""
    secret = settings.notifications_webhook_secret
    return {
        **clean_env(),
        "CAMPAIGN_ENV_FILE": "/dev/null",
        "NEO4J_URI": settings.neo4j_uri,
        "NEO4J_USER": settings.neo4j_user,
        "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "AUTH_JWT_SECRET": TEST_JWT_SECRET,
        "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN_ID,
        "CAMPAIGN_SECRETS_KEY": TEST_SECRETS_KEY,
        "DOMAIN_NAME": settings.domain_name,
        "METRICS_PUBLIC": "true",
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(settings.campaign_local_queue_path),
        "NOTIFICATIONS_WEBHOOK_SECRET": secret.get_secret_value() if secret else "",
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        **named,
    }


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


@dataclass
class _Handles:
    """What the loop thread runs: the split of the handle it ran last (its took is asyncio's), the start
    of the one it runs now, and where a sampler found it during the last slow one."""

    last: Split = field(default_factory=lambda: Split(took=0.0, cpu=0.0, runqueue=0.0, others=0.0))
    started: float | None = None
    count: int = 0
    sampled: tuple[int, str] = (0, "")  # the handle's count, " in <frames>" or " waiting on a lock in ..."


class _Reports(logging.Handler):
    """asyncio logs ``Executing <handle> took X seconds`` right after the handle ran, on the loop thread:
    the split of that handle's time is written with it, and where the loop was found during it."""

    def __init__(self, handles: _Handles) -> None:
        super().__init__()
        self.handles = handles

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing"):
            h, s = self.handles, self.handles.last
            line = f"{message.replace(chr(10), ' ')} (cpu {s.cpu:.3f}, runqueue {s.runqueue:.3f}, "
            where = h.sampled[1] if h.sampled[0] == h.count else ""
            line += f"others' runqueue {s.others:.3f}, others' cpu {s.others_cpu:.3f}){where}"
            sys.stdout.write(f"{_MARK}{line}\n")
            sys.stdout.flush()


def _watch_handles() -> _Handles:
    """``Handle._run`` wrapped (this process only) to split each handle's time, and a sampler thread
    that notes where the loop thread is once a handle has run 50 ms (it waits in a system call, or for
    the interpreter lock, with the lock released: the sampler gets it). Only a system call other than a
    lock's wait counts as the loop's own; runnable (a CPU wait) or in a futex it is "waiting on a lock"."""
    native, ident = threading.get_native_id(), threading.get_ident()
    threads, handles, run = Threads(), _Handles(), asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        if threading.get_ident() != ident:
            return run(handle)
        before = threads.read(start=True)
        handles.count += 1
        handles.started = time.monotonic()
        try:
            return run(handle)
        finally:
            handles.started = None
            handles.last = split(before, threads.read(start=False), thread=native, took=0.0)

    def sample(every: threading.Event) -> None:
        while not every.wait(0.02):
            started, count = handles.started, handles.count
            if started is not None and time.monotonic() - started >= 0.05 and handles.sampled[0] != count:
                frame, where = sys._current_frames().get(ident), []
                while frame is not None:  # the innermost two frames, then the product's own
                    name = frame.f_code.co_filename
                    if len(where) < 2 or ("campaign_engine" in name and len(where) < 8):
                        where.append(f"{Path(name).name}:{frame.f_lineno} {frame.f_code.co_name}")
                    frame = frame.f_back
                with open(f"/proc/self/task/{native}/syscall") as call:  # "running" when runnable
                    number = call.read().split(" ", 1)[0]
                lock = not number.isdigit() or number == "202"  # 202: futex, a lock's wait
                handles.sampled = (count, f"{' waiting on a lock' if lock else ''} in {' < '.join(where)}")

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    threading.Thread(target=sample, args=(threading.Event(),), daemon=True, name="loop-sampler").start()
    return handles


class _WatchedLoop(asyncio.SelectorEventLoop):
    """Debug mode's slow-callback timing (``_run_once`` reads ``_debug``) with ``get_debug()`` false:
    futures, tasks and handles read that and capture no stack."""

    def get_debug(self) -> bool:
        return False


def watched_loop() -> asyncio.AbstractEventLoop:
    """A new loop that writes a ``SLOW-CALLBACK`` line on stdout for each callback of 100 ms or more,
    with its split; call it once a process, on the thread that runs the loop."""
    logger = logging.getLogger("asyncio")
    logger.setLevel(logging.WARNING)
    logger.addHandler(_Reports(_watch_handles()))
    loop = _WatchedLoop()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW_CALLBACK_SECONDS
    return loop


def _main(port: int) -> None:
    import uvicorn

    from campaign_engine.api.app import create_app, freeze_startup_heap

    loop = watched_loop()
    app = create_app(Settings())
    freeze_startup_heap()  # as ``campaign-engine serve`` does: no full collection re-scans the app
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", loop="asyncio")
    )
    try:
        loop.run_until_complete(server.serve())
    finally:
        loop.close()


if __name__ == "__main__":
    _main(int(sys.argv[1]))
