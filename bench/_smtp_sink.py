"""The pipelining SMTP sink (``tests/support/smtp_sink.py``) in its own process on uvloop, as a relay
is: the bench's provider and the sink do not share one interpreter lock. The parent asks it over a
pipe what it stored."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

from tests.support.smtp_sink import SinkState, SmtpSink

__all__ = ["SinkProcess", "sink_process"]


class SinkProcess:
    """What the bench reads of the sink: its port, what it stored, its CPU, and ``reset``."""

    def __init__(self, conn: Connection, port: int) -> None:
        self._conn = conn
        self.port = port

    def _ask(self, command: str) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    def addresses(self) -> list[str]:
        """The recipient of every stored message, in order."""
        return list(self._ask("addresses"))

    def arrivals(self) -> list[tuple[str, float]]:
        """(recipient, ``time.time()`` it arrived) of every stored message, in order."""
        return list(self._ask("arrivals"))

    def cpu_seconds(self) -> float:
        return float(self._ask("cpu"))

    def reset(self) -> None:
        self._ask("reset")


def _serve(conn: Connection, pipelining: bool) -> None:
    import uvloop

    state = SinkState(pipelining=pipelining)
    sink = SmtpSink(state)

    async def main() -> None:
        server = await sink.start()
        conn.send(sink.port)
        loop = asyncio.get_running_loop()
        while True:
            command = await loop.run_in_executor(None, conn.recv)
            if command == "addresses":
                conn.send(state.received)
            elif command == "arrivals":
                conn.send(list(zip(state.received, state.received_at, strict=True)))
            elif command == "cpu":
                conn.send(time.process_time())
            elif command == "reset":
                state.received, state.received_at = [], []
                state.count = 0
                conn.send(None)
            else:  # "stop"
                await sink.stop(server)
                conn.send(None)
                return

    uvloop.run(main())


@contextmanager
def sink_process(*, pipelining: bool = True) -> Iterator[SinkProcess]:
    """Start it before anything else of the bench (``spawn``: no inherited threads or drivers)."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(child, pipelining), daemon=True, name="smtp-sink")
    process.start()
    try:
        yield SinkProcess(parent, parent.recv())
        parent.send("stop")
        parent.recv()
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
