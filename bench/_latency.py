"""Latency rounds over keep-alive connections (``bench/_http.py``): calls spread over the connections,
their percentiles, and a warm-up that runs until the figures settle."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bench._http import Connection

__all__ = ["WARM_UP_ROUND", "percentile", "run_concurrently", "warm_up"]

WARM_UP_ROUND = 5_000  # calls per warm-up round

Call = Callable[[Connection, int], Awaitable[float]]


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


async def run_concurrently(n: int, connections: list[Connection], one: Call) -> list[float]:
    """``n`` calls of ``one(connection, i)``, one task per connection; returns each call's latency (s)."""
    queue = iter(range(n))
    latencies: list[float] = []

    async def worker(connection: Connection) -> None:
        for i in queue:  # a shared iterator: each index is taken by exactly one task
            latencies.append(await one(connection, i))

    await asyncio.gather(*(worker(connection) for connection in connections))
    return latencies


async def warm_up(connections: list[Connection], call: Call, max_rounds: int, label: str = "") -> float:
    """Rounds of ``WARM_UP_ROUND`` calls until one's p99 is within 10 % of the round before (at most
    ``max_rounds``, at least one); returns the first round's p99 (ms), the ``cold`` figure. A database
    serves for days: the minute its JIT spends compiling a read after a start is not the steady state
    a latency target is about, so it is measured apart."""
    cold = previous = None
    for k in range(1, max(1, max_rounds) + 1):
        latencies = sorted(await run_concurrently(WARM_UP_ROUND, connections, call))
        p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
        print(f"{label}warm-up {k}{' (cold)' if k == 1 else ''}: p50 {p50:.1f}, p99 {p99:.1f} ms", flush=True)
        cold = p99 if cold is None else cold
        if previous is not None and abs(p99 - previous) <= 0.1 * previous:
            return cold
        previous = p99
    print(f"{label}warm-up: p99 still moving after {max_rounds} rounds", flush=True)
    assert cold is not None
    return cold
