"""A loopback TCP proxy in front of Neo4j that cuts one connection at a COMMIT, the way a killed server
or a dead network path does: the driver sent COMMIT and never hears back (``IncompleteCommit``).

Bytes pass through untouched. Armed with ``cut_commit(nth, landed)``, the proxy counts COMMIT messages
(Bolt's chunk ``00 02 B0 12 00 00``: one chunk holding the empty COMMIT struct) and at the ``nth``:

- ``landed=True``: forwards it, lets Neo4j answer (the transaction is committed) and drops the answer;
- ``landed=False``: closes both sides before Neo4j sees it (Neo4j rolls the transaction back).

Either way the client's socket is shut, so the driver cannot tell the two apart, which is the point.

``go_down()`` is an outage: every open connection is cut and every new one is closed as it is
accepted, until ``come_back()``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

_COMMIT = b"\x00\x02\xb0\x12\x00\x00"


@dataclass(eq=False)  # kept in a set: identity, not value
class _Link:
    client: socket.socket
    server: socket.socket
    swallow: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        for sock in (self.client, self.server):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class BoltCutter:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._commits = 0
        self._cut_at: int | None = None
        self._landed = True
        self.cuts = 0
        """How many connections were cut so far."""
        self._links: set[_Link] = set()
        self._down = threading.Event()
        threading.Thread(target=self._accept, name="bolt-cutter", daemon=True).start()

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def cut_commit(self, nth: int = 1, *, landed: bool = True) -> None:
        """Cut the connection carrying the ``nth`` COMMIT from now on."""
        with self._lock:
            self._commits, self._cut_at, self._landed = 0, nth, landed

    def go_down(self) -> None:
        self._down.set()
        with self._lock:
            links, self._links = list(self._links), set()
        for link in links:
            link.close()

    def come_back(self) -> None:
        self._down.clear()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._down.is_set():
                client.close()
                continue
            link = _Link(client, socket.create_connection(self._target))
            with self._lock:
                self._links.add(link)
            threading.Thread(target=self._upstream, args=(link,), daemon=True).start()
            threading.Thread(target=self._downstream, args=(link,), daemon=True).start()

    def _upstream(self, link: _Link) -> None:
        try:
            while data := link.client.recv(65536):
                with self._lock:
                    cut = False
                    if self._cut_at is not None and _COMMIT in data:
                        self._commits += 1
                        cut = self._commits == self._cut_at
                        if cut:
                            self._cut_at = None
                            self.cuts += 1
                if cut and not self._landed:
                    link.close()
                    return
                if cut:
                    link.swallow.set()  # before the send: the answer must not reach the client
                link.server.sendall(data)
        except OSError:
            pass
        link.close()

    def _downstream(self, link: _Link) -> None:
        try:
            while data := link.server.recv(65536):
                if link.swallow.is_set():  # Neo4j answered the COMMIT: it is durable; the client never knows
                    break
                link.client.sendall(data)
        except OSError:
            pass
        link.close()


@contextmanager
def bolt_cutter(neo4j_uri: str) -> Iterator[BoltCutter]:
    """A cutter in front of the Neo4j at ``neo4j_uri`` (``bolt://host:port``)."""
    host, port = neo4j_uri.split("://", 1)[1].rsplit(":", 1)
    cutter = BoltCutter(host, int(port))
    try:
        yield cutter
    finally:
        cutter.close()
