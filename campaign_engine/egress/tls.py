"""The verifying TLS context a process's outbound HTTPS clients share.

httpx builds a new context for every client it is not handed one, and building one loads certifi's
bundle: about 27 ms of CPU on this class of machine. The API built four at start-up (the DID resolver,
the SNS endpoint, the webhook transport, Postmark), so every Lambda cold start paid about a tenth of a
second for the same certificates. A client-side context is safe to share between clients and threads
once configured; the one change httpcore makes on each connect, its ALPN list, is ``http/1.1`` for all
of ours (none speaks HTTP/2).
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["shared_tls_context", "tls_context"]


@functools.cache
def shared_tls_context(*, trust_env: bool = False) -> ssl.SSLContext:
    """httpx's default verifying context, built once per process: certifi's bundle, or with
    ``trust_env`` the ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` of the environment when one is set."""
    return httpx.create_ssl_context(verify=True, trust_env=trust_env)


def tls_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    """``verify`` as a context, the environment ignored (egress never trusts it): True is the shared
    context; a test's own context (a private CA) is used as it is; False verifies nothing."""
    if verify is True:
        return shared_tls_context()
    return httpx.create_ssl_context(verify=verify, trust_env=False)
