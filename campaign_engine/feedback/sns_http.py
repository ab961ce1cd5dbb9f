"""The SNS endpoint's only network access: GET a signing certificate, GET a SubscribeURL.

Both go only to an SNS host (``https://sns.<region>.amazonaws.com``; the verifier has already required
the topic's own region) and through the egress policy of ``egress/policy.py``: the URL rules,
one resolution per request on our own threads and bounded by the timeout, every answer allowed (private
and special ranges refused), and the connection dialled to the validated address while TLS SNI, the
certificate check and ``Host`` use the name. No redirects, no proxies from the environment, answers
capped at 64 KiB: ``egress/fetch.py``'s ``SafeGet``, with the SNS host rule in front of it.

``verify``, ``resolver``, ``allow_private`` and ``port`` exist for tests (a loopback SNS stand-in with a
test CA); the defaults are the production wiring.
"""

from __future__ import annotations

import re
import ssl

from campaign_engine.egress.fetch import FetchFailed, SafeGet
from campaign_engine.egress.policy import DestinationRules, EgressBlocked, Resolver, checked_url

__all__ = ["MAX_ANSWER_BYTES", "SnsFetchFailed", "SnsHttp"]

MAX_ANSWER_BYTES = 64 * 1024
_SNS_HOST = re.compile(r"sns\.[a-z]{2}(?:-[a-z]+)+-\d\.amazonaws\.com")


class SnsFetchFailed(Exception):
    """The SNS host could not be reached or did not answer 200 now: retryable (HTTP 503 to SNS, which
    retries). The message names no URL."""


class SnsHttp:
    def __init__(
        self,
        *,
        timeout: float = 5.0,
        verify: ssl.SSLContext | bool = True,
        resolver: Resolver | None = None,
        allow_private: bool = False,
        port: int = 443,
    ) -> None:
        # One client keeps the TLS connection to an SNS address alive; resolution runs on its own
        # threads, so a stuck resolver costs one of those, never the request.
        self._get = SafeGet(
            rules=DestinationRules(allow_http=False, ports=frozenset({443})), allow_private=allow_private,
            timeout=timeout, max_bytes=MAX_ANSWER_BYTES, resolver=resolver, verify=verify, port=port,
        )  # fmt: skip

    def fetch_certificate(self, url: str) -> bytes:
        """The PEM text at ``url`` (the verifier's ``CertificateFetcher``)."""
        return self.get(url)

    def confirm_subscription(self, url: str) -> None:
        """GET the SubscribeURL of a SubscriptionConfirmation; SNS answers 200 once it is confirmed."""
        self.get(url)

    def get(self, url: str) -> bytes:
        """The body of a 200 answer to GET ``url`` on an SNS host. Raises ``EgressBlocked`` (final) or
        ``SnsFetchFailed`` (retryable)."""
        parsed = checked_url(url)
        if parsed.scheme != "https" or not _SNS_HOST.fullmatch(parsed.host) or parsed.port not in (None, 443):
            raise EgressBlocked("only https on an SNS host is allowed here")
        try:
            return self._get.get(url, accept="*/*")
        except FetchFailed as exc:
            raise SnsFetchFailed(f"SNS: {exc}") from exc

    def close(self) -> None:
        self._get.close()
