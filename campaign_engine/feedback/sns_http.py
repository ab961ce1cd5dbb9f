"""The SNS endpoint's only network access: GET a signing certificate, GET a SubscribeURL.

Both go only to an SNS host (``https://sns.<region>.amazonaws.com``; the verifier has already required
the topic's own region) and through the egress policy of ``egress/policy.py``: the URL rules,
one resolution per request on our own threads and bounded by the timeout, every answer allowed (private
and special ranges refused), and the connection dialled to the validated address while TLS SNI, the
certificate check and ``Host`` use the name. No redirects, no proxies from the environment, answers
capped at 64 KiB. The notify transport is POST-only, so this small GET client applies the same policy.
One ``httpx.Client`` serves every GET (its pool keeps the TLS connection to an SNS address alive).

``verify``, ``resolver``, ``allow_private`` and ``port`` exist for tests (a loopback SNS stand-in with a
test CA); the defaults are the production wiring.
"""

from __future__ import annotations

import re
import ssl
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import httpx

from campaign_engine.egress.policy import (
    AddressPolicy,
    EgressBlocked,
    ResolutionFailed,
    Resolver,
    checked_url,
    system_resolver,
)

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
        self._timeout = timeout
        self._policy = AddressPolicy(resolver=resolver or system_resolver, allow_private=allow_private)
        self._port = port
        # Resolution runs here so a stuck resolver costs one of these threads, never the request.
        self._resolver_pool = ThreadPoolExecutor(2, thread_name_prefix="sns-dns")
        self._client = httpx.Client(verify=verify, trust_env=False, timeout=timeout)

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
        host = parsed.host
        if parsed.scheme != "https" or not _SNS_HOST.fullmatch(host) or parsed.port not in (None, 443):
            raise EgressBlocked("only https on an SNS host is allowed here")
        try:
            addresses = self._resolver_pool.submit(self._policy.validated_addresses, host, self._port).result(
                timeout=self._timeout
            )
        except (FutureTimeout, ResolutionFailed):
            raise SnsFetchFailed("the SNS host did not resolve") from None
        target = parsed.raw_path.decode("ascii")
        last: Exception | None = None
        for address in addresses:
            literal = f"[{address}]" if ":" in address else address
            try:
                return self._get_from(f"https://{literal}:{self._port}{target}", host)
            except httpx.HTTPError as exc:  # try the next validated address
                last = exc
        raise SnsFetchFailed(f"the SNS host did not answer ({type(last).__name__})") from last

    def _get_from(self, pinned_url: str, host: str) -> bytes:
        with self._client.stream(
            "GET",
            pinned_url,
            headers={"Host": host, "Accept-Encoding": "identity", "User-Agent": "campaign-engine"},
            extensions={"sni_hostname": host},  # TLS and its certificate check use the name
        ) as response:
            if response.status_code != 200:
                raise SnsFetchFailed(f"the SNS host answered {response.status_code}")
            body = bytearray()
            for chunk in response.iter_raw():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise SnsFetchFailed("the SNS answer is too large")
            return bytes(body)

    def close(self) -> None:
        self._resolver_pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()
