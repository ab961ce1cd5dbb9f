"""``bench.dispatch --events``'s endpoint: a loopback receiver that answers every event 204 and counts them.

A stdlib HTTP/1.1 server on a thread of the bench process (keep-alive, one thread per connection), so
the worker's relay pays a real POST per event and the bench sees how many arrived, without a second
process to start and stop.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["EventSink"]


class EventSink:
    def __init__(self) -> None:
        self.received = 0
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with sink._lock:
                    sink.received += 1
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # socketserver's default backlog of 5 drops the relay's 64 connects

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/events"
        self._thread = threading.Thread(target=self._server.serve_forever, name="event-sink", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
