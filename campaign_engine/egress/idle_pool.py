"""Kept-alive webhook connections: bounded in total across destinations, oldest out first, reaped at expiry.

``transport.AsyncSafeTransport`` keeps answered connections here for reuse. A bound per destination is
not enough when receivers are user-supplied: thousands of distinct hosts would each keep
their idle sockets until reused and exhaust file descriptors. So every destination shares one bound (the
oldest idle connection is closed to make room), and a timer on the event loop closes connections idle
longer than the expiry even when no POST comes. Open sockets therefore stay at most the POSTs in flight
plus ``max_idle``.

Idle connections are aborted, not closed: nothing is pending on them, and a TLS goodbye would keep the
socket open until a hostile peer answers it. Used only from the event loop that runs the transport.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from campaign_engine.egress.http1 import Http1Connection

__all__ = ["Destination", "IdlePool"]

Destination = tuple[str, str, int]  # (scheme, host, port)


class IdlePool:
    """At most ``max_idle`` idle connections in total, each reused only within ``expiry`` seconds."""

    def __init__(self, *, max_idle: int, expiry: float) -> None:
        self._max_idle = max(1, max_idle)
        self._expiry = expiry
        self._stacks: dict[Destination, deque[Http1Connection]] = {}  # per destination, oldest first
        self._order: dict[Http1Connection, Destination] = {}  # every idle connection, oldest first
        self._reaper: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._order)

    def checkout(self, key: Destination) -> Http1Connection | None:
        """The most recently used live connection to ``key``; stale ones met on the way are closed."""
        stack = self._stacks.get(key)
        now = time.monotonic()
        while stack:
            connection = stack.pop()
            del self._order[connection]
            # The loop reports a server-side close or stray bytes as they happen (``reusable`` turns
            # False), so an idle connection needs no readability poll before reuse.
            if connection.reusable and now - connection.idle_since < self._expiry:
                return connection
            connection.abort()
        return None

    def checkin(self, key: Destination, connection: Http1Connection) -> None:
        if not connection.reusable:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        stack = self._stacks.get(key)
        if stack is None:
            stack = self._stacks[key] = deque()
        stack.append(connection)
        self._order[connection] = key
        if len(self._order) > self._max_idle:
            self._drop_oldest()
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().call_later(self._expiry, self._reap)

    def clear(self) -> None:
        """Forget every idle connection (their owner closes them) and stop the timer."""
        self._stacks, self._order = {}, {}
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

    def _drop_oldest(self) -> None:
        connection, key = next(iter(self._order.items()))
        del self._order[connection]
        self._stacks[key].popleft()  # both orders are checkin order: the oldest overall is first here
        connection.abort()

    def _reap(self) -> None:
        """Close what expired (or broke) while idle, forget emptied destinations, rearm while any is left."""
        self._reaper = None
        now = time.monotonic()
        while self._order:
            oldest = next(iter(self._order))
            if oldest.reusable and now - oldest.idle_since < self._expiry:
                break  # checkin order: every other one is younger
            self._drop_oldest()
        self._stacks = {key: stack for key, stack in self._stacks.items() if stack}
        if self._order:
            delay = max(next(iter(self._order)).idle_since + self._expiry - now, 0.0) + 0.01
            self._reaper = asyncio.get_running_loop().call_later(delay, self._reap)
