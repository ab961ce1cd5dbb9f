"""The faults of a chaos run: drawn from ``random.Random(seed)`` alone (kind, moment, length), so one seed
is one sequence of faults, then injected into the running ``Stack``, each on its own thread at its
moment, and logged with that moment (a restart's line also says how long the process took to be back).
Windows of one front that overlap do not add up: the fault set last holds until its own end."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench._chaos_stack import Stack

__all__ = ["KINDS", "Fault", "Injector", "schedule"]

# Every kind comes at least once per run; the rest are drawn among these with these weights.
KINDS: dict[str, int] = {
    "kill_worker": 3,
    "restart_api": 2,
    "restart_neo4j": 1,
    "inbox_5xx": 2,
    "inbox_hang": 2,
    "smtp_throttle": 2,
    "smtp_fail": 2,
    "duplicate_queue": 2,
    "pause_resume": 1,
}
_WINDOWED = {"inbox_5xx", "inbox_hang", "smtp_throttle", "smtp_fail", "duplicate_queue", "pause_resume"}


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the dispatch started
    kind: str
    seconds: float  # how long a windowed fault lasts (0 for a one-shot)


def schedule(seed: int, window: float) -> list[Fault]:
    """Every kind once plus about one more fault per 20 s of ``window``, spread over its first 85%;
    at most one pause (each one makes the resumed dispatch walk the audience again)."""
    rng = random.Random(seed)
    extra = [k for k in KINDS if k != "pause_resume"]
    kinds = list(KINDS) + rng.choices(extra, weights=[KINDS[k] for k in extra], k=max(1, int(window / 20)))
    faults = []
    for kind in kinds:
        at = rng.uniform(0.05, 0.4) * window if kind == "pause_resume" else rng.uniform(0.03, 0.85) * window
        seconds = round(rng.uniform(3, 12), 1) if kind in _WINDOWED else 0.0
        faults.append(Fault(round(at, 1), kind, seconds))
    return sorted(faults, key=lambda f: f.at)


# Every message any process sends while it is installed is stored twice, the copy visible 0.5 s later:
# SQS's at-least-once delivery, made systematic for the fault's window (as tests/e2e/ does).
_DUPLICATE_EVERY_SEND = """
CREATE TABLE IF NOT EXISTS chaos_duplicated (body TEXT PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS chaos_duplicate_every_send AFTER INSERT ON messages
WHEN NOT EXISTS (SELECT 1 FROM chaos_duplicated WHERE body = NEW.body)
BEGIN
  INSERT INTO chaos_duplicated (body) VALUES (NEW.body);
  INSERT INTO messages (name, body, sent_at, visible_at)
  VALUES (NEW.name, NEW.body, NEW.sent_at, NEW.visible_at + 0.5);
END;
"""
# ... and every message waiting or in flight at that moment gets a twin, visible in 0.5 s.
_DUPLICATE_WAITING = """
INSERT INTO messages (name, body, sent_at, visible_at)
SELECT name, body, sent_at, max(visible_at, ?) + 0.5 FROM messages
"""


class Injector:
    """Injects faults into ``stack``; ``pause`` and ``resume`` are the campaign driver's, through the API.
    ``log`` collects one line per fault (and per end of a window), as printed."""

    def __init__(
        self, stack: Stack, *, t0: float, pause: Callable[[], None], resume: Callable[[], str]
    ) -> None:
        self.stack = stack
        self.t0 = t0
        self.pause = pause
        self.resume = resume
        self.log: list[str] = []
        self.injected: list[Fault] = []
        self.resume_failed = False  # the pause's resume did not get through: the driver resumes at the end
        self.failures: list[str] = []  # faults that could not be injected (the run is then not clean)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._doubling, self._doubling_lock = 0, threading.Lock()  # duplicate_queue windows open now
        self._worker, self._api, self._neo4j = threading.Lock(), threading.Lock(), threading.Lock()

    def say(self, text: str, *, at: float | None = None) -> None:
        """Logs ``text`` at ``at`` (seconds after the dispatch; default now) and prints it."""
        line = f"  {time.monotonic() - self.t0 if at is None else at:7.1f}s  {text}"
        with self._lock:
            self.log.append(line)
        print(line, flush=True)

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
        timer = threading.Timer(seconds, action)
        timer.daemon = True
        timer.start()
        self._threads.append(timer)

    def inject_all(self, faults: list[Fault]) -> None:
        """Each fault at its moment, on its own thread: a Neo4j restart that takes 20 s overlaps the
        faults that fall meanwhile instead of delaying them. One restart of a process at a time."""
        for fault in faults:
            wait = self.t0 + fault.at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            thread = threading.Thread(target=self._inject, args=(fault,), name=fault.kind, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _inject(self, fault: Fault) -> None:
        at = time.monotonic() - self.t0
        try:
            self.inject(fault, at)
        except Exception as exc:  # reported as a broken run, never silently skipped
            self.failures.append(f"{fault.kind} at {at:.1f}s: {exc!r}")
            self.say(f"{fault.kind} FAILED: {exc!r}", at=at)

    def inject(self, fault: Fault, at: float) -> None:
        stack, kind, secs = self.stack, fault.kind, fault.seconds
        self.injected.append(fault)
        if kind == "kill_worker":
            with self._worker:
                dead = stack.kill_worker()
                self.say(f"kill -9 worker (pid {dead}); started worker pid {stack.start_worker()}", at=at)
        elif kind == "restart_api":
            with self._api:
                old = stack.stop_api()
                new = stack.start_api()
                self.say(f"restart API: SIGTERM pid {old}; API pid {new} ready {self._since(at)}", at=at)
        elif kind == "restart_neo4j":
            with self._neo4j:
                stack.restart_neo4j()
                self.say(
                    f"restart Neo4j: stopped, started on the same port and store, ready {self._since(at)}",
                    at=at,
                )
        elif kind in ("inbox_5xx", "inbox_hang"):
            stack.webhook_front.mode.set("fail" if kind == "inbox_5xx" else "hang", secs)
            what = "answers 503" if kind == "inbox_5xx" else "hangs every request"
            self.say(f"inbox receiver {what} for {secs:.1f} s", at=at)
        elif kind == "smtp_throttle":
            stack.smtp_front.mode.set("throttle", secs)
            self.say(f"email stand-in throttles (451 on RCPT) for {secs:.1f} s", at=at)
        elif kind == "smtp_fail":
            stack.smtp_front.fail(secs)
            self.say(f"email stand-in fails: sessions cut, 421 to every command for {secs:.1f} s", at=at)
        elif kind == "duplicate_queue":
            copied = self._duplicate_queue(True)
            self.say(
                f"queue delivers twice: {copied} queued messages copied, every send doubled for {secs:.1f} s",
                at=at,
            )
            self._later(secs, lambda: self._duplicate_queue(False))
        elif kind == "pause_resume":
            self.pause()
            self.say(f"pause the campaign (campaigns.setStatus paused) for {secs:.1f} s", at=at)
            self._later(secs, self._resume)
        else:
            raise ValueError(kind)

    def _since(self, at: float) -> str:
        return f"{time.monotonic() - self.t0 - at:.1f} s later"

    def _resume(self) -> None:
        try:
            self.say(f"resume: campaign live again, new dispatch {self.resume()}")
        except Exception as exc:  # the driver resumes at the end instead
            self.resume_failed = True
            self.say(f"resume failed ({exc}); retried once the faults are over")

    def _duplicate_queue(self, on: bool) -> int:
        """Installs the doubling trigger (and copies what waits), or drops it once the last of the
        overlapping windows ends."""
        with self._doubling_lock:
            self._doubling += 1 if on else -1
            if not on and self._doubling:
                return 0
            conn = sqlite3.connect(self.stack.queue_path, timeout=60)
            try:
                if not on:
                    conn.executescript("DROP TRIGGER IF EXISTS chaos_duplicate_every_send;")
                    return 0
                conn.executescript(_DUPLICATE_EVERY_SEND)
                with conn:
                    return int(conn.execute(_DUPLICATE_WAITING, (time.time(),)).rowcount)
            finally:
                conn.close()

    def finish(self) -> None:
        """Waits for every fault and window to end (the final checks run on a quiet system)."""
        for thread in self._threads:
            thread.join(timeout=900)
        self.stack.webhook_front.mode.set("pass", 0)
        self.stack.smtp_front.mode.set("pass", 0)
