"""The loopback Postmark stand-in in its own process, as a real provider is: the bench's worker and the
provider no longer share one interpreter lock, so the figures measure the pipeline, not the stand-in
parsing JSON on the worker's GIL. The parent asks it over a pipe what it accepted."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

from tests.support.postmark_standin import PostmarkStandin

__all__ = ["StandinProcess", "standin_process"]


class StandinProcess:
    """What the bench reads of the stand-in: its address, what it accepted, and ``reset``."""

    def __init__(self, conn: Connection, url: str, token: str) -> None:
        self._conn = conn
        self.url = url
        self.token = token

    def _ask(self, command: str, *args: Any) -> Any:
        self._conn.send((command, *args))
        return self._conn.recv()

    def addresses(self) -> list[str]:
        """The ``To`` of every accepted message, in order."""
        return list(self._ask("addresses"))

    def arrivals(self) -> list[tuple[str, float]]:
        """(``To``, ``time.time()`` it was accepted) of every accepted message, in order."""
        return list(self._ask("arrivals"))

    def sample(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` accepted messages, whole."""
        return list(self._ask("sample", count))

    def reset(self) -> None:
        self._ask("reset")


def _serve(conn: Connection) -> None:
    with PostmarkStandin() as standin:
        conn.send((standin.url, standin.token))
        while True:
            command, *args = conn.recv()
            if command == "addresses":
                conn.send([str(m["To"]) for m in standin.accepted])
            elif command == "arrivals":
                # strict=False: the server's thread may have appended one list and not yet the other
                both = zip(standin.accepted, standin.accepted_at, strict=False)
                conn.send([(str(m["To"]), t) for m, t in both])
            elif command == "sample":
                conn.send(standin.accepted[: args[0]])
            elif command == "reset":
                standin.reset()
                conn.send(None)
            else:  # "stop"
                conn.send(None)
                return


@contextmanager
def standin_process() -> Iterator[StandinProcess]:
    """Start it before anything else of the bench: ``spawn`` keeps the child free of the parent's
    threads and drivers."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(child,), daemon=True, name="postmark-standin")
    process.start()
    try:
        url, token = parent.recv()
        yield StandinProcess(parent, url, token)
        parent.send(("stop",))
        parent.recv()
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
