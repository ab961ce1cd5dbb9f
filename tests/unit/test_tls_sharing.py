"""The product's clients and the suite's share one verifying TLS context per process."""

from __future__ import annotations

import time

import httpx

from campaign_engine.egress.fetch import SafeGet
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.egress.tls import shared_tls_context, tls_context


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


def test_egress_takes_the_shared_context_unless_given_its_own() -> None:
    safe = SafeGet(rules=DestinationRules())
    assert _context(safe._client) is shared_tls_context()
    assert tls_context(True) is shared_tls_context()
    private = tls_context(False)
    assert private is not shared_tls_context() and not private.check_hostname
