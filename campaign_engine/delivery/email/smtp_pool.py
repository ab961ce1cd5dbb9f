"""A bounded pool of set-up SMTP sessions, reused across batches.

Opening a session costs several round trips (greeting, EHLO, STARTTLS, EHLO, AUTH), more than a
pipelined message, so sessions outlive a page. The bound (``SMTP_MAX_CONNECTIONS``) counts every open
session, idle or busy, because it is what the relay sees and limits. A session is closed (QUIT) after
``max_messages`` messages, after ``idle_seconds`` unused (before the relay's own idle timeout drops it
mid-use), and when the server hung up or spoke unasked while it was idle. Loop-confined: every method
runs on the provider's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from campaign_engine.delivery.email.smtp_session import SmtpSession

__all__ = ["SessionPool"]


class SessionPool:
    def __init__(
        self,
        opener: Callable[[], Awaitable[SmtpSession]],
        *,
        max_connections: int,
        max_messages: int,
        idle_seconds: float,
    ) -> None:
        self._open = opener
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[SmtpSession] = []  # most recently used last
        self._max_messages = max_messages
        self._idle_seconds = idle_seconds
        self._reaper: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def room(self, session: SmtpSession) -> int:
        """How many more messages ``session`` may carry."""
        return max(self._max_messages - session.messages, 0)

    async def acquire(self) -> SmtpSession:
        """An idle session that is still good, else a new one; raises what ``SmtpSession.open`` raises."""
        await self._slots.acquire()
        try:
            deadline = time.monotonic() - self._idle_seconds
            while self._idle:
                session = self._idle.pop()
                if session.usable and session.last_used > deadline and self.room(session):
                    return session
                self._quit(session)
            return await self._open()
        except BaseException:
            self._slots.release()
            raise

    def release(self, session: SmtpSession, *, reusable: bool) -> None:
        if reusable and session.usable and self.room(session):
            self._idle.append(session)
            if self._reaper is None:
                self._reaper = asyncio.get_running_loop().call_later(self._idle_seconds, self._reap)
        elif reusable:
            self._quit(session)
        else:
            session.abort()
        self._slots.release()

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        idle, self._idle = self._idle, []
        await asyncio.gather(*(session.quit() for session in idle), *self._closing)

    def _reap(self) -> None:
        self._reaper = None
        deadline = time.monotonic() - self._idle_seconds
        keep = [s for s in self._idle if s.last_used > deadline and s.usable]
        for session in self._idle:
            if session not in keep:
                self._quit(session)
        self._idle = keep
        if keep:
            wait = min(s.last_used for s in keep) - deadline
            self._reaper = asyncio.get_running_loop().call_later(max(wait, 0.05), self._reap)

    def _quit(self, session: SmtpSession) -> None:
        task = asyncio.get_running_loop().create_task(session.quit())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
