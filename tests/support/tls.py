"""One TLS context for the suite's own httpx clients.

``httpx.get`` or a new ``httpx.Client`` builds a verifying TLS context unless handed one, even for a
plain-http loopback URL, and building one loads certifi's bundle (about 27 ms of CPU). The suite's
helpers and wait loops call that way thousands of times: in a profile of the campaign tests it was a
quarter of the pytest workers' CPU. Here a client that asks for httpx's default gets the product's
shared context (``campaign_engine.egress.tls``) instead; any other ``verify`` (a private CA, False) is
built as before. ``tests/unit/test_tls_sharing.py`` fails if an httpx release moves the call wrapped here.
"""

from __future__ import annotations

import ssl

import httpx._transports.default as httpx_transports

from campaign_engine.egress.tls import shared_tls_context

__all__ = ["build_as_shipped", "share_default_tls_context"]

build_as_shipped = httpx_transports.create_ssl_context  # type: ignore[attr-defined]


def _shared_or_built(
    verify: ssl.SSLContext | str | bool = True, cert: object = None, trust_env: bool = True
) -> ssl.SSLContext:
    if verify is True and cert is None:
        return shared_tls_context(trust_env=trust_env)
    return build_as_shipped(verify=verify, cert=cert, trust_env=trust_env)  # type: ignore[arg-type]


def share_default_tls_context() -> None:
    """From now on in this process, httpx's default context is built once."""
    httpx_transports.create_ssl_context = _shared_or_built  # type: ignore[attr-defined]
