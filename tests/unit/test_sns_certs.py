"""CertificateCache: what it remembers and for how long, and how few fetches it lets run.

The fetcher is its port (a plain function of the URL), so these tests hand it functions that count,
fail or wait; the real HTTPS fetch is tested against the loopback SNS host in test_feedback_ses.py.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509

from campaign_engine.feedback.sns import SignatureInvalid
from campaign_engine.feedback.sns_certs import CertificateCache
from campaign_engine.feedback.sns_http import SnsFetchFailed
from tests.support.sns import authority

URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem"


class Clocks:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)
        self.seconds = 0.0

    def wall(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.seconds


def test_a_certificate_is_kept_until_it_expires() -> None:
    clocks, fetched = Clocks(), []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return authority().signing_pem()

    cache = CertificateCache(fetch, clock=clocks.wall, monotonic=clocks.monotonic)
    first = asyncio.run(cache.certificate(URL))
    assert isinstance(first, x509.Certificate)
    clocks.seconds += 10 * 86_400  # days later: still the held certificate
    assert asyncio.run(cache.certificate(URL)) is first and len(fetched) == 1
    clocks.now = first.not_valid_after_utc + timedelta(seconds=1)  # expired: dropped, fetched again
    asyncio.run(cache.certificate(URL))
    assert len(fetched) == 2


def test_a_failure_is_remembered_for_a_short_while() -> None:
    clocks, fetched = Clocks(), []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return b"not a certificate"

    cache = CertificateCache(fetch, clock=clocks.wall, monotonic=clocks.monotonic, failure_seconds=30)
    for _ in range(3):
        with pytest.raises(SignatureInvalid):
            asyncio.run(cache.certificate(URL))
    assert len(fetched) == 1
    clocks.seconds += 31  # remembered no longer: asked again
    with pytest.raises(SignatureInvalid):
        asyncio.run(cache.certificate(URL.replace("-1", "-bad")))
    assert len(fetched) == 2


def test_one_fetch_per_url_and_a_few_in_all_the_rest_refused_at_once() -> None:
    release, started = threading.Event(), []

    def fetch(url: str) -> bytes:
        started.append(url)
        release.wait(10)
        return authority().signing_pem()

    cache = CertificateCache(fetch, clock=Clocks().wall, max_fetches=2)

    async def burst() -> list[object]:
        same = [asyncio.ensure_future(cache.certificate(URL)) for _ in range(5)]
        other = asyncio.ensure_future(cache.certificate(URL.replace("-1", "-2")))
        await asyncio.sleep(0.05)
        refused = []
        for n in range(3, 6):  # two fetches are running: a third URL is a retry-later at once
            with pytest.raises(SnsFetchFailed):
                await cache.certificate(URL.replace("-1", f"-{n}"))
            refused.append(n)
        assert cache.in_flight == 2
        release.set()
        return [*(await asyncio.gather(*same, other)), refused]

    *certificates, refused = asyncio.run(burst())
    assert sorted(started) == sorted([URL, URL.replace("-1", "-2")])
    assert len({id(c) for c in certificates[:5]}) == 1  # the five callers of one URL shared its fetch
    assert refused == [3, 4, 5]
    cache.close()
