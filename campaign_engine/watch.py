"""``campaign-engine dispatch watch <dispatchId>``: a dispatch's live progress in the terminal.

A client of the public tRPC API, like the admin console: it reads ``campaigns.getDispatch`` and, to show
every channel of the same confirmation (one Dispatch record per channel), ``campaigns.listDispatches``,
once a second. It never touches the graph or the queue, so it works against any deployment the
operator can reach with an admin token. On a terminal it redraws a bar per channel in place (rich); piped
or logged, it prints a plain line whenever a channel's counts change. It waits while a confirmed send
still has notifications in flight (pages walked, receivers not yet answered), then exits 0 when every
channel completed, 1 when one ended otherwise (failed, stopped, missed, cancelled, needs_review) or
waits for an admin (paused by the health guard), and 3 when it cannot watch (401/403, unknown id, the
API unreachable past its retries).

The bearer token travels in the Authorization header only; it is never printed.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

import httpx
from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from campaign_engine.egress.tls import shared_tls_context

__all__ = ["ApiClient", "CannotWatch", "Unavailable", "watch_dispatch"]

ENDED = frozenset({"completed", "stopped", "failed", "missed", "cancelled", "needs_review", "paused"})
# Each counter belongs to one channel, so one sum of outcomes serves both (as in the console).
_SETTLED = ("acknowledged", "rejected", "suppressed", "emailed", "uncertain")
_KNOWN = ("pages", "enqueued", *_SETTLED, "throttled")
# Numbers on DispatchPublic that are settings, not progress; every other number is shown as a counter,
# so counters added on the server (deferred, capped, ...) appear here without a change.
_NOT_COUNTERS = frozenset({"maxLateSeconds"})
EXIT_COMPLETED, EXIT_ENDED_OTHERWISE, EXIT_CANNOT_WATCH = 0, 1, 3


class CannotWatch(Exception):
    """A final answer: the token is refused, the dispatch does not exist, or the API stayed away."""


class Unavailable(Exception):
    """The API did not answer (connection refused, timeout, 5xx): worth asking again."""


class ApiClient:
    """Queries of the public tRPC API over httpx (``transport`` is injectable, as everywhere else)."""

    def __init__(
        self, base_url: str, token: str, *, transport: httpx.BaseTransport | None = None, timeout: float = 5.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=f"{self.base_url}/trpc/",
            headers={"authorization": f"Bearer {token}"},
            transport=transport,
            timeout=timeout,
            verify=shared_tls_context(trust_env=True),
        )

    def close(self) -> None:
        self._http.close()

    def query(self, path: str, data: dict[str, Any]) -> Any:
        try:
            answer = self._http.get(path, params={"input": json.dumps(data)})
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach the API at {self.base_url}: {exc or type(exc).__name__}"
            ) from exc
        if answer.status_code >= 500 or answer.status_code == 429:
            raise Unavailable(f"the API at {self.base_url} answered {answer.status_code}")
        try:
            envelope = answer.json()
        except ValueError as exc:
            raise CannotWatch(
                f"{self.base_url} answered {answer.status_code} without a tRPC envelope"
            ) from exc
        if answer.status_code == 200:
            return envelope["result"]["data"]
        error = envelope.get("error", {}) if isinstance(envelope, dict) else {}
        code = error.get("data", {}).get("code", answer.status_code)
        message = error.get("message", "")
        if answer.status_code == 401:
            hint = "pass an admin bearer token with --token or CAMPAIGN_API_TOKEN"
            raise CannotWatch(f"the API refused the token ({code}: {message}); {hint}")
        raise CannotWatch(f"{code}: {message}")


@dataclass
class _Channel:
    """One Dispatch record as the screen shows it, with the samples its rate is computed from."""

    dispatch: dict[str, Any]
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    @property
    def settled(self) -> int:
        return sum(int(self.dispatch.get(k) or 0) for k in _SETTLED)

    @property
    def total(self) -> int:
        return max(int(self.dispatch.get("enqueued") or 0), self.settled)

    @property
    def ended(self) -> bool:
        return self.dispatch["status"] in ENDED

    @property
    def in_flight(self) -> int:
        """Paged recipients whose outcome is not known yet (notify: the receiver has not answered)."""
        return max(0, int(self.dispatch.get("enqueued") or 0) - self.settled)

    def sample(self, at: float, window: float) -> None:
        self.samples.append((at, self.settled))
        while len(self.samples) > 2 and at - self.samples[0][0] > window:
            self.samples.popleft()

    def rate(self) -> float:
        """Settled recipients per second over the sliding window."""
        if len(self.samples) < 2 or self.samples[-1][0] <= self.samples[0][0]:
            return 0.0
        (t0, n0), (t1, n1) = self.samples[0], self.samples[-1]
        return (n1 - n0) / (t1 - t0)

    def counters(self) -> list[tuple[str, int]]:
        extra = [k for k, v in self.dispatch.items() if k not in _KNOWN and k not in _NOT_COUNTERS]
        numbers = [(k, self.dispatch.get(k)) for k in (*_KNOWN, *extra)]
        return [(k, v) for k, v in numbers if isinstance(v, int) and not isinstance(v, bool)]

    def facts(self) -> str:
        d = self.dispatch
        parts = [f"{k}={v}" for k, v in self.counters() if v or k in ("pages", "enqueued")]
        if d["status"] == "scheduled" and d.get("sendAt"):
            parts.append(f"sendAt={d['sendAt']}")
        if d["status"] == "sending" and d.get("nextPageAt"):
            parts.append(f"nextPageAt={d['nextPageAt']}")
        return " ".join(parts)

    def line(self) -> str:
        """The plain line printed when not on a terminal."""
        d = self.dispatch
        text = f"{d['dispatchId']} {d['channel']} {d['status']} {self.settled}/{self.total} settled"
        text += f" {self.facts()} rate={self.rate():.1f}/s"
        if d.get("lastError"):
            text += f" lastError={d['lastError']!r}"
        return text


def _same_confirmation(named: dict[str, Any], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The named Dispatch and its sibling channels: one confirmation creates them in one transaction,
    so they share the campaign incarnation and their start (or schedule) stamp."""

    def key(d: dict[str, Any]) -> tuple[Any, ...]:
        return (d.get("campaignCreatedAt"), d.get("scheduledAt") or d.get("startedAt"))

    siblings = [d for d in others if d["dispatchId"] != named["dispatchId"] and key(d) == key(named)]
    return sorted([named, *siblings], key=lambda d: str(d["channel"]) != "notify")


class _Screen:
    """Where progress goes: a live, redrawn panel on a terminal; plain lines otherwise."""

    def __init__(self, out: TextIO, *, force_terminal: bool | None = None) -> None:
        self.console = Console(file=out, force_terminal=force_terminal, highlight=False, soft_wrap=True)
        self.live: Live | None = None
        self._last: dict[str, str] = {}

    @contextmanager
    def session(self) -> Iterator[None]:
        if not self.console.is_terminal:
            yield
            return
        with Live(console=self.console, auto_refresh=False, transient=False) as live:
            self.live = live
            yield

    def show(self, channels: list[_Channel]) -> None:
        if self.live is None:
            for ch in channels:
                # A line per change of counts or status, not per poll: logs stay readable.
                key, line = ch.dispatch["dispatchId"], ch.line()
                changed = line.split(" rate=", 1)[0]
                if self._last.get(key) != changed:
                    self._last[key] = changed
                    self.console.print(f"{_now()} {line}", markup=False)
            return
        self.live.update(self._panel(channels), refresh=True)

    @staticmethod
    def _panel(channels: list[_Channel]) -> Group:
        rows: list[Any] = []
        for ch in channels:
            d = ch.dispatch
            grid = Table.grid(padding=(0, 1))
            grid.add_row(
                Text(f"{d['channel']:<6}", style="bold"),
                ProgressBar(
                    total=max(ch.total, 1),
                    completed=ch.settled,
                    width=30,
                    complete_style="cyan",
                    finished_style="green",
                ),
                Text(f"{ch.settled}/{ch.total}"),
                Text(f"{ch.rate():.1f}/s"),
                Text(d["status"], style="green" if d["status"] == "completed" else "yellow"),
            )
            rows.append(grid)
            rows.append(Text(f"       {ch.facts()}", style="dim"))
            if d.get("lastError"):
                rows.append(Text(f"       last error: {d['lastError']}", style="red"))
        return Group(*rows)

    def say(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False)


def _now() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S")


def watch_dispatch(
    client: ApiClient,
    dispatch_id: str,
    *,
    out: TextIO,
    err: TextIO,
    interval: float = 1.0,
    retries: int = 10,
    window: float = 10.0,
    settle_seconds: float = 30.0,
    force_terminal: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Poll until every channel of the dispatch ended; return the exit status (module docstring).

    ``retries``: consecutive unanswered polls tolerated before giving up. ``settle_seconds``: how long
    to wait, after the pages are walked, for deliveries still in flight."""
    screen = _Screen(out, force_terminal=force_terminal)
    channels: dict[str, _Channel] = {}
    failures = 0
    settled_deadline: float | None = None
    with screen.session():
        while True:
            try:
                named = client.query("campaigns.getDispatch", {"dispatchId": dispatch_id})
                listed = client.query("campaigns.listDispatches", {"campaignId": named["campaignId"]})
                failures = 0
            except Unavailable as exc:
                failures += 1
                if failures > retries:
                    print(f"{exc}; gave up after {failures} attempts", file=err)
                    return EXIT_CANNOT_WATCH
                print(f"{exc}; retrying ({failures}/{retries})", file=err)
                sleep(interval)
                continue
            except CannotWatch as exc:
                print(f"cannot watch dispatch {dispatch_id!r}: {exc}", file=err)
                return EXIT_CANNOT_WATCH
            now = clock()
            for d in _same_confirmation(named, listed):
                ch = channels.setdefault(d["dispatchId"], _Channel(d))
                ch.dispatch = d
                ch.sample(now, window)
            shown = list(channels.values())
            screen.show(shown)
            if all(ch.ended for ch in shown):
                waiting = sum(ch.in_flight for ch in shown if ch.dispatch["status"] == "completed")
                settled_deadline = settled_deadline if settled_deadline is not None else now + settle_seconds
                if not waiting or now >= settled_deadline:
                    return _finish(screen, shown, waiting)
            sleep(interval)


def _finish(screen: _Screen, channels: list[_Channel], waiting: int) -> int:
    bad = [ch for ch in channels if ch.dispatch["status"] != "completed"]
    for ch in bad:
        reason = f": {ch.dispatch['lastError']}" if ch.dispatch.get("lastError") else ""
        screen.say(
            f"{ch.dispatch['channel']} dispatch {ch.dispatch['dispatchId']} {ch.dispatch['status']}{reason}"
        )
    if bad:
        return EXIT_ENDED_OTHERWISE
    note = f" ({waiting} deliveries still awaiting their receiver)" if waiting else ""
    counts = ", ".join(f"{ch.dispatch['channel']} {ch.settled}" for ch in channels)
    screen.say(f"completed: {counts} settled{note}")
    return EXIT_COMPLETED
