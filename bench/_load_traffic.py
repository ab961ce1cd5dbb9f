"""``bench.load``'s clients and readings: app traffic at a fixed rate, the admins' calls, latency per
procedure, and each process's resident memory over the run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import httpx

from bench._support import rss_mb
from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings


@dataclass
class Latencies:
    """Seconds per procedure, and its server errors (5xx or no answer) and other refusals."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    refused: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def note(self, name: str, started: float, status: int | None) -> None:
        self.seconds[name].append(time.perf_counter() - started)
        if status is None or status >= 500:
            self.errors[name] += 1
        elif status >= 400:
            self.refused[name] += 1

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
        return "\n".join(lines)


async def timed(
    client: httpx.AsyncClient, stats: Latencies, name: str, method: str, url: str, **kw: object
) -> None:
    started = time.perf_counter()
    try:
        answer = await client.request(method, url, **kw)  # type: ignore[arg-type]
        status: int | None = answer.status_code
    except httpx.HTTPError:
        status = None
    stats.note(name, started, status)


async def app_traffic(
    base: str,
    settings: Settings,
    *,
    rps: float,
    users: list[str],
    campaign: str,
    until: float,
    stats: Latencies,
) -> None:
    """getMyCampaigns and recordEvent in turn at ``rps`` calls a second (an open loop: a slow answer
    does not slow the arrivals), each as one of ``users`` with their own token."""
    tokens: dict[str, str] = {}
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        tasks: set[asyncio.Task[None]] = set()
        start, calls = time.monotonic(), 0
        while time.monotonic() < until:
            user = users[calls % len(users)]
            token = tokens.get(user) or tokens.setdefault(user, mint_token(settings, profile_id=user))
            headers = {"authorization": f"Bearer {token}"}
            if calls % 2 == 0:
                path = "/trpc/campaigns.getMyCampaigns"
                job = timed(client, stats, "campaigns.getMyCampaigns", "GET", path, headers=headers)
            else:
                body = {"campaignId": campaign, "event": "shown"}
                job = timed(client, stats, "campaigns.recordEvent", "POST", "/trpc/campaigns.recordEvent",
                            json=body, headers=headers)  # fmt: skip
            task = asyncio.create_task(job)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            calls += 1
            await asyncio.sleep(max(0.0, start + calls / rps - time.monotonic()))
        await asyncio.gather(*tasks)


async def admin_traffic(
    base: str, token: str, *, every: float, campaigns: tuple[str, str], until: float, stats: Latencies
) -> None:
    """An admin's round every ``every`` seconds: the send's getStats, the app campaign's audience
    preview, and an export of its recipients read to the end."""
    sent, app = campaigns
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, timeout=600, headers=headers) as client:
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
    """The seconds of each slow callback a watched API logged (``tests/support/watched_loop.py``)."""
    return [float(m) for m in re.findall(r"^SLOW-CALLBACK .* took ([0-9.]+) seconds", log, flags=re.M)]


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
