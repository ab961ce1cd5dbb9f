"""The product's clients and the suite's share one verifying TLS context per process."""

from __future__ import annotations

import time

import httpx
import httpx._transports.default as httpx_transports
import pytest

from campaign_engine.delivery.email.postmark import PostmarkProvider
from campaign_engine.egress.fetch import SafeGet
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.tls import shared_tls_context, tls_context
from campaign_engine.egress.transport import AsyncSafeTransport
from tests.support import tls as suite_tls


def _context(client: httpx.Client) -> object:
    return client._transport._pool._ssl_context  # type: ignore[attr-defined]


def test_the_suites_default_clients_share_the_products_context() -> None:
    # tests/conftest.py shared it at import, before any test ran.
    with httpx.Client() as one, httpx.Client(timeout=3) as other:
        assert _context(one) is _context(other) is shared_tls_context(trust_env=True)
    with httpx.Client(verify=False) as unverified:
        assert _context(unverified) is not shared_tls_context(trust_env=True)
    started = time.process_time()
    for _ in range(20):
        httpx.Client().close()
    assert (time.process_time() - started) / 20 < 0.005  # building a context costs ~27 ms


def test_the_products_clients_take_the_shared_context_unless_given_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx as shipped, without the suite's hook: the product must share the context on its own.
    monkeypatch.setattr(httpx_transports, "create_ssl_context", suite_tls.build_as_shipped)
    with httpx.Client() as plain:
        assert _context(plain) is not shared_tls_context(trust_env=True)
    safe = SafeGet(rules=DestinationRules())
    try:
        assert _context(safe._client) is shared_tls_context()
    finally:
        safe.close()
    assert AsyncSafeTransport()._ssl_context is shared_tls_context()
    postmark = PostmarkProvider(api_key="token", stream="broadcast", sender="news@example.com")
    try:
        assert _context(postmark._client) is shared_tls_context(trust_env=True)
    finally:
        postmark.close()
    assert tls_context(True) is shared_tls_context()
    private = tls_context(False)
    assert private is not shared_tls_context() and not private.check_hostname
