"""``make dev``'s processes for the chaos run, in a temporary folder and on free ports: the local Neo4j
launcher, the reference inbox, the SMTP catcher, the worker and the API, wired with ``dev_stack``'s own
``child_env``, except that the worker reaches the inbox and the catcher through the fault fronts
(``bench/_chaos_fronts.py``). Each restart keeps the port, the data and the queue file; every process
is stopped by its own pid when the run ends, however it ends."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from bench._chaos_fronts import SmtpFront, WebhookFront
from bench._support import REPO, HeldPorts, wait_until_ok
from campaign_engine.dev_stack import child_env, new_env_file
from campaign_engine.graph.local_neo4j import LocalNeo4j

__all__ = ["Stack"]

# Outages here last seconds, not the minutes of production, so the retry budget is compressed with
# them: a delivery is retried after 2, 4, 8 ... s (production 30, 60, ...), a message is dead-lettered
# after 8 receives, a lost lease comes back after 20 s, and the sweeper re-arms a wave idle for 30 s and
# counts an abandoned email claim (a worker killed between claim and outcome) uncertain after 60 s.
_PACE = {
    "CAMPAIGN_DELIVERY_RETRY_SECONDS": "2",
    "CAMPAIGN_QUEUE_MAX_RECEIVES": "8",
    "CAMPAIGN_QUEUE_VISIBILITY_SECONDS": "20",
    "CAMPAIGN_DISPATCH_STUCK_SECONDS": "30",
    "CAMPAIGN_EMAIL_UNCERTAIN_AFTER_SECONDS": "60",
    "CAMPAIGN_EMAIL_THROTTLE_BACKOFF_SECONDS": "5",
    "CAMPAIGN_EMAIL_MAX_DEFERRALS": "200",
    "CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES": "50",
    "CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS": "3",
    "LOG_LEVEL": "WARNING",
}


class Stack:
    """The processes of one chaos run under ``work``. ``env`` is what every child gets.

    ``graph_uri`` names a running Neo4j to use instead of one of the stack's own (the test session's,
    emptied by the caller): a JVM start and a first compile of every statement saved per stack, most of
    what an end-to-end module costs. Such a stack never stops or restarts that graph."""

    def __init__(
        self, work: Path, *, page_size: int, delay_seconds: int, graph_uri: str | None = None
    ) -> None:
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env_file = new_env_file(work / "chaos.env")
        self._ports = HeldPorts()
        self.api_port, self.inbox_port, self.catcher_port = (self._ports.take() for _ in range(3))
        self.metrics_port = self._ports.take()
        self.neo4j: LocalNeo4j | None = None
        if graph_uri is None:
            self.neo4j = LocalNeo4j(
                data_dir=work / "neo4j", port=self._ports.take(), heap="1g", pagecache="256m"
            )
            graph_uri = self.neo4j.uri
        self.graph_uri = graph_uri
        self.inbox_db = work / "inbox.sqlite3"
        self.mailbox = work / "mail"
        self.webhook_front = WebhookFront(("127.0.0.1", self.inbox_port))
        self.smtp_front = SmtpFront(("127.0.0.1", self.catcher_port))
        self.env = {
            **child_env(
                self.env_file,
                local=work,
                port=self.api_port,
                inbox_url=self.webhook_front.url,
                smtp_port=self.smtp_front.port,
                neo4j_uri=self.graph_uri,
                metrics_port=self.metrics_port,
            ),
            **_PACE,
            "CAMPAIGN_DISPATCH_PAGE_SIZE": str(page_size),
            "CAMPAIGN_EMAIL_PAGE_SIZE": str(min(page_size, 1000)),
            "CAMPAIGN_DISPATCH_DELAY_SECONDS": str(delay_seconds),
            "CAMPAIGN_PREVIEW_MAX_RECIPIENTS": "1000000",
        }
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.exits: list[str] = []  # processes that exited by themselves during the run
        self._closing, self._closed = threading.Lock(), False
        self.api_url = f"http://127.0.0.1:{self.api_port}"

    @property
    def queue_path(self) -> Path:
        return Path(self.env["CAMPAIGN_LOCAL_QUEUE_PATH"])

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with self._closing, (self.logs / f"{name}.log").open("ab") as log:
            if self._closed:  # a fault thread restarting a process while the run ends: no orphan
                raise RuntimeError(f"the run is ending; {name} not started")
            proc = subprocess.Popen(
                [sys.executable, "-m", "campaign_engine.cli", *args],
                env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            self.children[name] = proc
        return proc

    def cli(self, *args: str, timeout: float = 600) -> str:
        """A one-shot ``campaign-engine`` command with the children's environment; its stdout."""
        done = subprocess.run(
            [sys.executable, "-m", "campaign_engine.cli", *args],
            env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"campaign-engine {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def start(self) -> None:
        self.smtp_front.start()
        self.webhook_front.start()
        if self.neo4j:
            self._ports.release(self.neo4j.port)
            self.neo4j.start(timeout=600)
        self._ports.release(self.inbox_port)
        self._ports.release(self.catcher_port)
        inbox = self._spawn("inbox", "inbox", "--port", str(self.inbox_port), "--db", str(self.inbox_db))
        self._spawn(
            "smtp-catcher", "smtp-catcher", "--port", str(self.catcher_port), "--mailbox", str(self.mailbox)
        )
        wait_until_ok(f"http://127.0.0.1:{self.inbox_port}/healthz", inbox, timeout=60, log=str(self.logs))
        self.cli("migrate")
        self.start_worker()
        self.start_api()

    def start_worker(self) -> int:
        self._ports.release(self.metrics_port)
        return self._spawn("worker", "worker").pid

    def start_api(self) -> int:
        self._ports.release(self.api_port)
        api = self._spawn("api", "serve", "--host", "127.0.0.1", "--port", str(self.api_port))
        wait_until_ok(f"{self.api_url}/readyz", api, timeout=600, log=str(self.logs / "api.log"))
        return api.pid

    def kill_worker(self) -> int:
        """SIGKILL: a crash, nothing finished cleanly."""
        worker = self.children["worker"]
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        return worker.pid

    def stop_api(self) -> int:
        api = self.children["api"]
        api.terminate()
        try:
            api.wait(timeout=30)
        except subprocess.TimeoutExpired:
            api.kill()
            api.wait(timeout=10)
        return api.pid

    def restart_neo4j(self) -> None:
        """Not started again once the run ends; one that a start in flight brings up anyway exits with
        this process (the launcher watches its stdin, a pipe from us)."""
        if self.neo4j is None:
            raise RuntimeError("this stack uses a graph it did not start; it does not restart it")
        self.neo4j.stop()
        if self._closed:
            raise RuntimeError("the run is ending; Neo4j not started again")
        self.neo4j.start(timeout=600)

    def api_ready(self) -> bool:
        try:
            return httpx.get(f"{self.api_url}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """Everything we started, by pid: SIGTERM, SIGKILL after 15 s; then Neo4j and the fronts."""
        with self._closing:
            self._closed = True
        for proc in self.children.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 15
        for proc in self.children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.neo4j:
            self.neo4j.stop()
        self.webhook_front.stop()
        self.smtp_front.stop()
        self._ports.close()
