"""A real SQS-compatible HTTP server (moto) on loopback, and clients that talk to it with dummy keys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import moto.sqs.models
import pytest
from moto.core.utils import unix_time as _moto_unix_time
from moto.server import ThreadedMotoServer

__all__ = ["MOTO_REGION", "moto_endpoint", "sqs_env"]

MOTO_REGION = "us-east-1"


def _unix_time(dt: datetime | None = None) -> float:
    return time.time() if dt is None else _moto_unix_time(dt)


def _unix_time_millis(dt: datetime | None = None) -> float:
    return _unix_time(dt) * 1000.0


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """One moto server per session on an OS-chosen free port; tests create uniquely named queues.

    Its SQS reads the clock once per message per scan, and scans the whole queue several times per
    message sent or received (each computes every queue attribute, three of them counts over the
    messages): quadratic in the queue's depth. Its clock builds two datetimes and runs an import per
    reading; here it is ``time.time()``, the same instant: the same server and answers for less CPU."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(moto.sqs.models, "unix_time", _unix_time)
        patch.setattr(moto.sqs.models, "unix_time_millis", _unix_time_millis)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture
def sqs_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials through the default chain, and nothing that could reach a real AWS account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", MOTO_REGION)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
