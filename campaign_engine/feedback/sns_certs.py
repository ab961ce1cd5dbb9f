"""The SES endpoint's signing certificates: fetched off the request path, remembered, bounded.

``POST /webhooks/ses`` is anonymous and every envelope names its own certificate URL on the SNS host, so
each fetch is a cost a stranger chooses. Hence:

- a certificate is kept by URL until its ``notAfter`` (an expired one is dropped and fetched again);
- a failed fetch (unreachable, not 200, not a PEM certificate) is remembered for ``failure_seconds``,
  so asking again for a bad URL costs nothing;
- one fetch per URL is in flight at a time, shared by every caller of that URL;
- at most ``max_fetches`` are in flight in all, on this cache's own threads, never the request thread
  pool; a caller past that is refused at once with ``SnsFetchFailed`` (a 503, which SNS retries).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from cryptography import x509

from campaign_engine.domain.types import Clock
from campaign_engine.feedback.sns import CertificateFetcher, SignatureInvalid
from campaign_engine.feedback.sns_http import SnsFetchFailed

__all__ = ["CertificateCache"]

V = TypeVar("V")


class CertificateCache:
    def __init__(
        self,
        fetch: CertificateFetcher,
        *,
        clock: Clock,
        max_fetches: int = 4,
        failure_seconds: float = 30.0,
        max_entries: int = 256,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._max_fetches = max_fetches
        self._failure_seconds = failure_seconds
        self._max_entries = max_entries
        self._monotonic = monotonic
        self._pool = ThreadPoolExecutor(max_fetches, thread_name_prefix="sns-cert")
        self._lock = threading.Lock()
        self._certificates: OrderedDict[str, x509.Certificate] = OrderedDict()
        self._failures: OrderedDict[str, tuple[float, Exception]] = OrderedDict()  # url -> (until, error)
        self._in_flight: dict[str, Future[x509.Certificate]] = {}

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def certificate(self, url: str) -> x509.Certificate:
        """The certificate at ``url``; raises what its fetch raised (``SnsFetchFailed``, ``EgressBlocked``,
        ``SignatureInvalid``), remembered or new, or ``SnsFetchFailed`` when too many fetches run."""
        found = self._held_or_started(url)
        if isinstance(found, x509.Certificate):
            return found
        # Shielded: a caller that goes away must not cancel the fetch other callers share.
        return await asyncio.shield(asyncio.wrap_future(found))

    def _held_or_started(self, url: str) -> x509.Certificate | Future[x509.Certificate]:
        with self._lock:
            held = self._certificates.get(url)
            if held is not None:
                if self._clock() <= held.not_valid_after_utc:
                    self._certificates.move_to_end(url)
                    return held
                del self._certificates[url]
            failure = self._failures.get(url)
            if failure is not None:
                until, error = failure
                if self._monotonic() < until:
                    raise error.with_traceback(None)
                del self._failures[url]
            running = self._in_flight.get(url)
            if running is not None:
                return running
            if len(self._in_flight) >= self._max_fetches:
                raise SnsFetchFailed("too many signing certificate fetches in flight")
            future = self._pool.submit(self._load, url)
            self._in_flight[url] = future
        future.add_done_callback(lambda done: self._settle(url, done))
        return future

    def _load(self, url: str) -> x509.Certificate:
        try:
            return x509.load_pem_x509_certificate(self._fetch(url))
        except ValueError:
            raise SignatureInvalid("the signing certificate is not a PEM certificate") from None

    def _settle(self, url: str, done: Future[x509.Certificate]) -> None:
        with self._lock:
            self._in_flight.pop(url, None)
            if done.cancelled():
                return
            error = done.exception()
            if error is None:
                _remember(self._certificates, url, done.result(), self._max_entries)
            elif isinstance(error, Exception):
                until = self._monotonic() + self._failure_seconds
                _remember(self._failures, url, (until, error), self._max_entries)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _remember(entries: OrderedDict[str, V], url: str, value: V, limit: int) -> None:
    entries[url] = value
    entries.move_to_end(url)
    while len(entries) > limit:
        entries.popitem(last=False)
