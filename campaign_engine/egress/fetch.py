"""Safe GET: a small synchronous client for documents at a URL someone else chose (a did:web document, an
SNS signing certificate).

The POST transport (``transport.py``) serves the notification worker on its event loop; a DID document is
read from a request thread and the SNS endpoint fetches certificates (``feedback/sns_http.py``), so this
GET applies the same policy synchronously: the URL and destination rules of ``policy.py`` (https only,
ports 443/80 plus ``CAMPAIGN_EGRESS_PORTS``, outside local development), one resolution per request on
this client's own threads and bounded by the timeout, every answer allowed (private and special ranges
refused unless ``allow_private``), and the socket dialled to the validated address while ``Host``, TLS
SNI and the certificate check use the name. No redirects, no proxies from the environment, the answer
capped while it arrives. Errors name no URL: a URL may carry a secret and these messages reach the logs.
"""

from __future__ import annotations

import ssl
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import httpx

from campaign_engine.egress.policy import (
    AddressPolicy,
    DestinationRules,
    ResolutionFailed,
    Resolver,
    system_resolver,
)
from campaign_engine.egress.tls import tls_context

__all__ = ["FetchFailed", "SafeGet"]


class FetchFailed(Exception):
    """The destination could not be reached or did not answer 200 with a small enough body now."""


class SafeGet:
    def __init__(
        self,
        *,
        rules: DestinationRules,
        allow_private: bool = False,
        timeout: float = 5.0,
        max_bytes: int = 64 * 1024,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        port: int | None = None,
    ) -> None:
        """``port`` dials that port whatever the URL names (tests' loopback stand-ins of a real host)."""
        self._rules = rules
        self._port = port
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._policy = AddressPolicy(resolver=resolver or system_resolver, allow_private=allow_private)
        self._resolver_pool = ThreadPoolExecutor(2, thread_name_prefix="safe-get-dns")
        self._client = httpx.Client(
            verify=tls_context(verify), trust_env=False, timeout=timeout, follow_redirects=False
        )

    def get(self, url: str, *, accept: str = "application/json") -> bytes:
        """The body of a 200 answer to GET ``url``. Raises ``EgressBlocked`` (a final verdict) or
        ``FetchFailed`` (unreachable, not 200, too large: may succeed later)."""
        parsed = self._rules.check(url)
        host = parsed.host
        port = self._port or parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            addresses = self._resolver_pool.submit(self._policy.validated_addresses, host, port).result(
                timeout=self._timeout
            )
        except (FutureTimeout, ResolutionFailed):
            raise FetchFailed("the host did not resolve") from None
        target = parsed.raw_path.decode("ascii")
        last: Exception | None = None
        for address in addresses:
            literal = f"[{address}]" if ":" in address else address
            try:
                return self._get_from(f"{parsed.scheme}://{literal}:{port}{target}", parsed, accept)
            except httpx.HTTPError as exc:  # try the next validated address
                last = exc
        raise FetchFailed(f"the host did not answer ({type(last).__name__})") from last

    def _get_from(self, pinned_url: str, parsed: httpx.URL, accept: str) -> bytes:
        extensions = {"sni_hostname": parsed.host} if parsed.scheme == "https" else {}
        headers = {
            "Host": parsed.netloc.decode("ascii"),
            "Accept": accept,
            "Accept-Encoding": "identity",
            "User-Agent": "campaign-engine",
        }
        with self._client.stream("GET", pinned_url, headers=headers, extensions=extensions) as response:
            if response.status_code != 200:
                raise FetchFailed(f"the host answered {response.status_code}")
            body = bytearray()
            for chunk in response.iter_raw():
                body += chunk
                if len(body) > self._max_bytes:
                    raise FetchFailed("the answer is too large")
            return bytes(body)

    def close(self) -> None:
        self._resolver_pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()
