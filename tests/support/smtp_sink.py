"""A small SMTP server on loopback that offers PIPELINING, records each recipient, and cuts on cue.

aiosmtpd is the realistic server (the catcher, the provider tests); this one exists for what aiosmtpd
cannot script: cutting the connection at an exact step of a pipelined transaction, counting how many
commands arrived in one read (proof the client pipelines), and being fast enough to sink 10,000+
messages a second for ``bench.smtp_provider``. One ``asyncio.Protocol`` per connection; replies to
everything that arrived in one read go out in one write, as RFC 2920 asks of a server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, cast

__all__ = ["Cut", "SinkState", "SmtpSink", "running_sink"]

Cut = Literal["rcpt", "data", "body", "dot"]
"""Where to drop the connection of the transaction to a given recipient: before answering its RCPT,
before answering its DATA, halfway through its text, or after storing its text before the 250."""


@dataclass
class SinkState:
    pipelining: bool = True
    smtputf8: bool = True
    cuts: dict[str, Cut] = field(default_factory=dict)
    """recipient -> where its transaction's connection is cut (once; the next attempt goes through)."""
    rcpt_replies: dict[str, bytes] = field(default_factory=dict)
    hang_up_reused: bool = False
    """Drop, once, a session that already stored a message when its next MAIL arrives (unanswered):
    a relay that timed the idle session out without the client noticing."""
    record: bool = True
    """Keep every message's recipient (tests); the bench only counts."""
    received: list[str] = field(default_factory=list)
    """The recipient of every message whose text arrived complete, in order."""
    received_at: list[float] = field(default_factory=list)
    """When each of ``received`` arrived (``time.time()``), in the same order."""
    count: int = 0
    connections: int = 0
    max_commands_per_read: int = 0
    queue_ids: int = 0


class _Session(asyncio.Protocol):
    def __init__(self, state: SinkState) -> None:
        self._state = state
        self._buffer = bytearray()
        self._in_data = False
        self._rcpts: list[str] = []
        self._stored = 0
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass
        self._state.connections += 1
        self._transport.write(b"220 sink.test ESMTP\r\n")

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        out: list[bytes] = []
        commands = 0
        state = self._state
        while self._transport is not None:
            if self._in_data:
                if not self._take_text(out):
                    break
                continue
            end = self._buffer.find(b"\r\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 2]
            commands += 1
            self._command(line, out)
        state.max_commands_per_read = max(state.max_commands_per_read, commands)
        if out and self._transport is not None:
            self._transport.write(b"".join(out))

    def _command(self, line: bytes, out: list[bytes]) -> None:
        verb = line[:4].upper()
        state = self._state
        if verb in (b"EHLO", b"HELO"):
            features = [b"250-sink.test", b"250-8BITMIME"]
            features += [b"250-PIPELINING"] if state.pipelining else []
            features += [b"250-SMTPUTF8"] if state.smtputf8 else []
            out.append(b"\r\n".join([*features, b"250 SIZE 10240000"]) + b"\r\n")
        elif verb == b"MAIL":
            if state.hang_up_reused and self._stored:
                state.hang_up_reused = False
                out.clear()
                self._close()
                return
            self._rcpts = []
            out.append(b"250 2.1.0 Ok\r\n")
        elif verb == b"RCPT":
            address = line[line.index(b"<") + 1 : line.rindex(b">")].decode()
            if self._cut(address, "rcpt", out):
                return
            reply = state.rcpt_replies.get(address)
            if reply is None:
                self._rcpts.append(address)
            out.append(reply or b"250 2.1.5 Ok\r\n")
        elif verb == b"DATA":
            if not self._rcpts:
                out.append(b"554 5.5.1 Error: no valid recipients\r\n")
            elif not any(self._cut(a, "data", out) for a in self._rcpts):
                self._in_data = True
                out.append(b"354 End data with <CR><LF>.<CR><LF>\r\n")
        elif verb == b"RSET":
            self._rcpts = []
            out.append(b"250 2.0.0 Ok\r\n")
        elif verb == b"QUIT":
            out.append(b"221 2.0.0 Bye\r\n")
            assert self._transport is not None
            self._transport.write(b"".join(out))
            out.clear()
            self._close()
        else:
            out.append(b"502 5.5.2 Error: command not recognized\r\n")

    def _take_text(self, out: list[bytes]) -> bool:
        """Consume one message's text if it is all here; False to wait for more."""
        if self._buffer and any(self._cut(a, "body", out, keep=len(self._buffer) // 2) for a in self._rcpts):
            return False
        end = 0 if self._buffer.startswith(b".\r\n") else self._buffer.find(b"\r\n.\r\n")
        if end < 0:
            return False
        del self._buffer[: end + (3 if end == 0 else 5)]
        self._in_data = False
        state = self._state
        state.count += len(self._rcpts)
        self._stored += 1
        if state.record:
            state.received.extend(self._rcpts)
            state.received_at.extend([time.time()] * len(self._rcpts))
        if any(self._cut(a, "dot", out) for a in self._rcpts):
            return False
        state.queue_ids += 1
        out.append(b"250 2.0.0 Ok: queued as Q%d\r\n" % state.queue_ids)
        return True

    def _cut(self, address: str, step: Cut, out: list[bytes], *, keep: int = 0) -> bool:
        if self._state.cuts.get(address) != step:
            return False
        del self._state.cuts[address]
        assert self._transport is not None
        self._transport.write(b"".join(out))  # what was answered before the cut still goes out
        out.clear()
        del self._buffer[keep:]
        self._close()
        return True

    def close(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None


class SmtpSink:
    """The sink's listening socket and its open sessions, on whichever loop ``start`` runs."""

    def __init__(self, state: SinkState | None = None) -> None:
        self.state = state or SinkState()
        self.port = 0
        self._sessions: list[_Session] = []

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(self._session, host, port)
        self.port = server.sockets[0].getsockname()[1]
        return server

    def _session(self) -> _Session:
        session = _Session(self.state)
        self._sessions.append(session)
        return session

    async def stop(self, server: asyncio.Server) -> None:
        server.close()
        for session in self._sessions:
            session.close()
        await asyncio.sleep(0)  # let the transports finish closing


@contextmanager
def running_sink(state: SinkState | None = None) -> Iterator[SmtpSink]:
    sink = SmtpSink(state)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="smtp-sink", daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(sink.start(), loop).result()
    try:
        yield sink
    finally:
        asyncio.run_coroutine_threadsafe(sink.stop(server), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
