"""The SmtpProvider tests' relays: plain and with STARTTLS and login, each run without PIPELINING and
with it."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from tests.conftest import free_port
from tests.support.smtp_relay import (
    ScriptedHandler,
    SmtpServer,
    _authenticate,
    _close_providers,
    _self_signed,
)


@pytest.fixture(params=[False, True], ids=["lock-step", "pipelining"])
def smtp_server(request: pytest.FixtureRequest) -> Iterator[SmtpServer]:
    """Every scenario runs against a relay without PIPELINING and one that offers it."""
    handler = ScriptedHandler(pipelining=request.param)
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield SmtpServer(handler, controller.port)
    finally:
        _close_providers()
        controller.stop()


@pytest.fixture(params=[False, True], ids=["lock-step", "pipelining"])
def tls_smtp_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SmtpServer]:
    cert_file, key_file = _self_signed(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    handler = ScriptedHandler(pipelining=request.param)
    controller = Controller(
        handler,
        hostname="127.0.0.1",
        port=free_port(),
        tls_context=server_ctx,
        authenticator=_authenticate,
        auth_require_tls=True,
    )
    controller.start()
    try:
        yield SmtpServer(handler, controller.port, ca_file=cert_file)
    finally:
        _close_providers()
        controller.stop()
