"""Real ASGI apps on loopback: uvicorn in a daemon thread, on a free port, stopped on exit."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from tests.conftest import free_port


@contextmanager
def serve_in_thread(
    app: Any, *, start_timeout: float = 30.0, port: int | None = None, **config: Any
) -> Iterator[str]:
    """Yield the base URL of ``app`` served on 127.0.0.1 (on ``port``, one a client was told of, or a
    free one); ``config`` goes to ``uvicorn.Config``."""
    port = port or free_port()
    config.setdefault("log_level", "warning")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **config))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
