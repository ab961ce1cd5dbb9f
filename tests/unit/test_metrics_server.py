"""The worker's metrics server on loopback: a silent or trickling client holds neither the server nor
another scrape, and its request head is cut off at the deadline however slowly it trickles."""

from __future__ import annotations

import socket
import time

import httpx
from prometheus_client import CollectorRegistry

from campaign_engine.observability.metrics_server import start_metrics_server


def test_a_silent_client_does_not_delay_another_scrape() -> None:
    server = start_metrics_server(CollectorRegistry(), host="127.0.0.1", port=0, token=None)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as silent:
            silent.sendall(b"GET /metr")  # and then nothing
            time.sleep(0.2)  # accepted and being read
            started = time.perf_counter()
            answer = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=10)
            took = time.perf_counter() - started
        assert answer.status_code == 200
        assert took < 1.0, f"the scrape waited {took:.2f}s behind a silent client"
    finally:
        server.close()


def test_a_trickled_request_head_is_cut_at_the_deadline() -> None:
    server = start_metrics_server(CollectorRegistry(), host="127.0.0.1", port=0, token=None, head_timeout=1.0)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            started = time.monotonic()
            closed_after = None
            for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
                try:
                    slow.sendall(bytes([byte]))
                except OSError:  # reset by the server
                    closed_after = time.monotonic() - started
                    break
                time.sleep(0.1)  # every byte well inside any per-read timeout
            if closed_after is None:
                slow.settimeout(5)
                assert slow.recv(1024) == b""  # closed without an answer
                closed_after = time.monotonic() - started
        assert closed_after < 2.5, f"the trickling head was held {closed_after:.2f}s"
    finally:
        server.close()
