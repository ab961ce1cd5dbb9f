"""A Postmark stand-in whose batch endpoint never answers: the worker sending to it hangs mid-send.

It answers the stream check like Postmark (a Broadcasts stream), then holds every ``POST /email/batch``
open without processing it until ``stop``. A test waits for ``post_started`` (the claim has committed,
the send has begun) and kills the worker process there: no message is accepted by anyone.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

__all__ = ["BlockingPostmark"]


class BlockingPostmark:
    def __init__(self) -> None:
        self.post_started = threading.Event()
        self._release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                body = json.dumps({"ID": "broadcast", "MessageStreamType": "Broadcasts", "ArchivedAt": None})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def do_POST(self) -> None:
                owner.post_started.set()
                owner._release.wait(60)  # never answers while the test runs; the client is killed

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> BlockingPostmark:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
