"""``bench.load``'s clients and readings: app traffic at a fixed rate, the admins' calls, latency per
procedure, and each process's resident memory over the run."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import multiprocessing
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from bench._http import Connection
from bench._support import rss_mb
from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from tests.support.watched_loop import on_the_loop

T = TypeVar("T")

# A connection idle this long is not reused: uvicorn closes keep-alive connections idle for 5 s (its
# default), and a request written to one it closed is lost, an error of the client's, not the server's.
_KEEP_ALIVE_SECONDS = 4.0


@dataclass
class Latencies:
    """Seconds per procedure, and its server errors (5xx or no answer) and other refusals."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    refused: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    at: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # monotonic, per call
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # why, for each error

    def note(self, name: str, started: float, status: int | None, failure: str = "") -> None:
        self.seconds[name].append(time.perf_counter() - started)
        self.at[name].append(time.monotonic())
        if status is None or status >= 500:
            self.errors[name] += 1
            self.failures[failure or f"HTTP {status}"] += 1
        elif status >= 400:
            self.refused[name] += 1

    def merge(self, other: Latencies) -> None:
        """Adds the readings of ``other`` (e.g. those of a client in another process)."""
        for name, values in other.seconds.items():
            self.seconds[name].extend(values)
        for name, n in other.errors.items():
            self.errors[name] += n
        for name, n in other.refused.items():
            self.refused[name] += n
        for name, values in other.at.items():
            self.at[name].extend(values)
        for why, n in other.failures.items():
            self.failures[why] += n

    def timeline(self, name: str, start: float, *, step: float) -> str:
        """``name``'s calls, p50 and p99 per ``step`` seconds since ``start``: when the latency moved."""
        windows: dict[int, list[float]] = defaultdict(list)
        for at, seconds in zip(self.at.get(name, []), self.seconds.get(name, []), strict=True):
            windows[int((at - start) // step)].append(seconds * 1000)
        lines = [f"{name} over time ({step:g} s windows): from s, calls, p50 ms, p99 ms"]
        for k in sorted(windows):
            values = sorted(windows[k])
            lines.append(f"  {k * step:>6.0f} {len(values):>6} {values[len(values) // 2]:>8.1f} "
                         f"{values[min(len(values) - 1, len(values) * 99 // 100)]:>8.1f}")  # fmt: skip
        return "\n".join(lines)

    def p(self, name: str, q: int) -> float:
        values = self.seconds.get(name) or [0.0]
        return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else values[0] * 1000

    def table(self) -> str:
        lines = [
            f"{'procedure':34} {'calls':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'5xx':>5} {'4xx':>5}"
        ]
        for name in sorted(self.seconds):
            lines.append(
                f"{name:34} {len(self.seconds[name]):>7} {self.p(name, 50):>8.1f} {self.p(name, 95):>8.1f} "
                f"{self.p(name, 99):>8.1f} {self.errors[name]:>5} {self.refused[name]:>5}"
            )
        lines += [f"  error: {n} x {why}" for why, n in sorted(self.failures.items())]
        return "\n".join(lines)


async def timed(
    client: httpx.AsyncClient, stats: Latencies, name: str, method: str, url: str, **kw: object
) -> None:
    started = time.perf_counter()
    try:
        answer = await client.request(method, url, **kw)  # type: ignore[arg-type]
        status: int | None = answer.status_code
    except httpx.HTTPError as exc:
        stats.note(name, started, None, f"{type(exc).__name__}: {exc}"[:80])
        return
    stats.note(name, started, status)


def app_traffic(
    base: str, jwt_secret: str, *, rps: float, users: list[str], campaign: str, until: float
) -> Latencies:
    """getMyCampaigns and recordEvent in turn at ``rps`` calls a second (an open loop: a slow answer
    does not slow the arrivals), each as one of ``users`` with their own token. Runs in a process of
    its own (``in_own_process``) on the light client (``bench/_http.py``): httpx costs 3-6 ms of CPU a
    request, so 200 requests/s on the bench's own loop starved it (it reached 102/s) and its latencies
    counted the client's backlog as the server's. ``until`` is ``time.monotonic()``, system-wide."""
    return asyncio.run(_app_traffic(base, jwt_secret, rps, users, campaign, until))


async def _app_traffic(
    base: str, jwt_secret: str, rps: float, users: list[str], campaign: str, until: float
) -> Latencies:
    stats = Latencies()
    settings = Settings(auth_jwt_secret=jwt_secret, _env_file=None)
    host, port = urlsplit(base).hostname or "127.0.0.1", urlsplit(base).port or 80
    idle: list[tuple[Connection, float]] = []  # most recently used last, with when it was
    tokens: dict[str, dict[str, str]] = {}

    async def call(n: int) -> None:
        user = users[n % len(users)]
        headers = tokens.get(user) or tokens.setdefault(
            user, {"authorization": f"Bearer {mint_token(settings, profile_id=user)}"}
        )
        name = "campaigns.getMyCampaigns" if n % 2 == 0 else "campaigns.recordEvent"
        started = time.perf_counter()
        connection = None
        while idle and connection is None:
            connection, since = idle.pop()
            if time.monotonic() - since > _KEEP_ALIVE_SECONDS:  # the server may have closed it by now
                with contextlib.suppress(OSError):
                    await connection.close()
                connection = None
        try:
            connection = connection or await Connection.open(host, port)
            if n % 2 == 0:
                reply = await connection.get(f"/trpc/{name}", headers)
            else:
                body = {"campaignId": campaign, "event": "shown"}
                reply = await connection.post_json(f"/trpc/{name}", body, headers)
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            stats.note(name, started, None, f"{type(exc).__name__}: {exc}"[:80])
            if connection is not None:
                with contextlib.suppress(OSError):
                    await connection.close()
            return
        stats.note(name, started, reply.status)
        idle.append((connection, time.monotonic()))

    tasks: set[asyncio.Task[None]] = set()
    start, calls = time.monotonic(), 0
    while time.monotonic() < until:
        task = asyncio.create_task(call(calls))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        calls += 1
        await asyncio.sleep(max(0.0, start + calls / rps - time.monotonic()))
    await asyncio.gather(*tasks)
    for connection, _ in idle:
        with contextlib.suppress(OSError):
            await connection.close()
    return stats


async def in_own_process(function: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``function(*args, **kwargs)`` in a spawned process of its own, awaited without blocking the
    caller's loop: its CPU and its loop are not the bench's."""
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return await loop.run_in_executor(pool, functools.partial(function, *args, **kwargs))


async def admin_traffic(
    base: str, token: str, *, every: float, campaigns: tuple[str, str], until: float, stats: Latencies
) -> None:
    """An admin's round every ``every`` seconds: the send's getStats, the app campaign's audience
    preview, and an export of its recipients read to the end."""
    sent, app = campaigns
    headers = {"authorization": f"Bearer {token}"}
    # A connection idle past uvicorn's keep-alive (a round's pause) is closed by the server: a request
    # sent on it as it closes is lost (a ReadError of the client's), so the client forgets it first.
    limits = httpx.Limits(keepalive_expiry=_KEEP_ALIVE_SECONDS)
    async with httpx.AsyncClient(base_url=base, timeout=600, headers=headers, limits=limits) as client:
        while time.monotonic() < until:
            started = time.monotonic()
            await timed(client, stats, "campaigns.getStats", "GET", "/trpc/campaigns.getStats",
                        params={"input": json.dumps({"campaignId": sent})})  # fmt: skip
            await timed(client, stats, "campaigns.previewDispatch", "GET", "/trpc/campaigns.previewDispatch",
                        params={"input": json.dumps({"campaignId": app})})  # fmt: skip
            begun = time.perf_counter()
            try:
                async with client.stream("GET", f"/exports/campaigns/{app}/recipients.csv") as answer:
                    async for _ in answer.aiter_bytes():
                        pass
                    stats.note("exports.recipients", begun, answer.status_code)
            except httpx.HTTPError:
                stats.note("exports.recipients", begun, None)
            await asyncio.sleep(max(0.0, started + every - time.monotonic()))


async def probe_health(base: str, *, every: float, until: float, stats: Latencies) -> None:
    """``/healthz`` every ``every`` seconds, as a load balancer would: the event loop's own latency."""
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        while time.monotonic() < until:
            await timed(client, stats, "healthz", "GET", "/healthz")
            await asyncio.sleep(every)


def slow_callbacks(log: str) -> list[float]:
    """The seconds of the API's loop's own in each slow callback a watched API logged: asyncio's wall
    time less what a busy machine explains (``tests/support/watched_loop.py:on_the_loop``)."""
    return [on_the_loop(line) for line in log.splitlines() if line.startswith("SLOW-CALLBACK ")]


def import_body(rows: int) -> bytes:
    lines = ["profileId,email,locale,tags"]
    lines += [f"load-imp{i:07d},imp{i}@school.example,es-MX,grade-{i % 12}" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


async def one_import(base: str, token: str, rows: int, *, at: float, stats: Latencies) -> None:
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    headers = {"authorization": f"Bearer {token}", "content-type": "text/csv"}
    async with httpx.AsyncClient(base_url=base, timeout=1800, headers=headers) as client:
        await timed(client, stats, "imports.profiles", "POST", "/imports/profiles", content=import_body(rows))


@dataclass
class Memory:
    """Resident memory (MiB) of each named process, sampled over the run."""

    pids: dict[str, int]
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))

    async def sample(self, *, every: float, until: float) -> None:
        while time.monotonic() < until:
            now = time.monotonic()
            for name, pid in self.pids.items():
                with contextlib.suppress(OSError):  # a process that ended: its last sample stands
                    self.samples[name].append((now, rss_mb(pid)))
            await asyncio.sleep(every)

    def growth_over_last_half(self, name: str, start: float, end: float) -> float:
        """The last sample less the one at the middle of the run: flat after warm-up means about 0."""
        series = self.samples.get(name) or [(0.0, 0.0)]
        middle = min(series, key=lambda s: abs(s[0] - (start + end) / 2))
        return series[-1][1] - middle[1]

    def table(self, start: float, end: float) -> str:
        lines = [f"{'process':10} {'peak MiB':>9} {'final MiB':>10} {'last-half growth':>17}"]
        for name in self.pids:
            series = self.samples.get(name) or [(0.0, 0.0)]
            peak = max(v for _, v in series)
            lines.append(f"{name:10} {peak:>9.0f} {series[-1][1]:>10.0f} "
                         f"{self.growth_over_last_half(name, start, end):>17.0f}")  # fmt: skip
        return "\n".join(lines)
