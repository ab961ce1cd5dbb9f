"""DID → Ed25519 authentication keys: did:key locally, did:web through the safe egress GET, cached.

A did:web document is someone else's server, so every fetch is a cost a caller may choose. Hence:

- an answer is kept per DID for ``ttl_seconds`` (a key rotated at the host is seen within that long);
- a failure (unreachable, not 200, not a usable document, blocked by egress) is kept for
  ``failure_seconds``, so a bad DID asked for again costs nothing;
- one fetch per DID is in flight at a time; other callers of that DID wait for its result;
- at most ``max_entries`` DIDs are remembered (least recently used dropped first).

The API verifies bearer tokens on request threads, so this is synchronous; callers bound who may make
it fetch at all (DID-auth resolves only DIDs that belong to a profile, ``api/did_auth.py``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from campaign_engine.config import Settings
from campaign_engine.did.document import VerificationKey, authentication_keys, did_web_url
from campaign_engine.did.keys import DidError, did_key_method
from campaign_engine.egress.fetch import FetchFailed, SafeGet
from campaign_engine.egress.policy import DestinationRules, EgressBlocked

__all__ = ["DidResolver", "Fetch", "resolver_for"]

Fetch = Callable[[str], bytes]
"""GET a URL's body (``egress.fetch.SafeGet.get``): raises ``FetchFailed`` or ``EgressBlocked``."""

_Entry = tuple[float, list[VerificationKey] | DidError]  # (until, keys or the remembered failure)


class DidResolver:
    def __init__(
        self,
        fetch: Fetch | None,
        *,
        local_development: bool = False,
        ttl_seconds: float = 300.0,
        failure_seconds: float = 30.0,
        max_entries: int = 1024,
        monotonic: Callable[[], float] = time.monotonic,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._on_close = on_close  # releases the fetcher's sockets and threads
        self._fetch = fetch  # None: did:web is not resolved at all (did:key only)
        self._local_development = local_development
        self._ttl = ttl_seconds
        self._failure_seconds = failure_seconds
        self._max_entries = max_entries
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._in_flight: dict[str, threading.Event] = {}
        self.fetches = 0  # documents fetched (success or not): what the cache saves is visible

    def resolve_key(self, did: str) -> list[Ed25519PublicKey]:
        """The Ed25519 keys ``did`` authenticates with; ``DidError`` when there are none to use."""
        return [method.key for method in self.verification_keys(did)]

    def verification_keys(self, did: str) -> list[VerificationKey]:
        """The same, with each key's verification method id (what a JWT header's ``kid`` names)."""
        if did.startswith("did:key:"):
            method_id, key = did_key_method(did)
            return [VerificationKey(method_id, key)]
        if not did.startswith("did:web:"):
            raise DidError("only did:key and did:web are resolved")
        if self._fetch is None:
            raise DidError("did:web is not resolved here")
        url = did_web_url(did, local_development=self._local_development)  # a malformed DID is not cached
        while True:
            with self._lock:
                held = self._held(did)
                if held is not None:
                    return _answer(held)
                waiting = self._in_flight.get(did)
                if waiting is None:
                    done = self._in_flight[did] = threading.Event()
                    break
            waiting.wait(timeout=30)
        try:
            result = self._load(did, url)
        finally:
            with self._lock:
                self._in_flight.pop(did, None)
            done.set()
        return _answer(result)

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    def _held(self, did: str) -> list[VerificationKey] | DidError | None:
        entry = self._entries.get(did)
        if entry is None:
            return None
        until, value = entry
        if self._monotonic() >= until:
            del self._entries[did]
            return None
        self._entries.move_to_end(did)
        return value

    def _load(self, did: str, url: str) -> list[VerificationKey] | DidError:
        assert self._fetch is not None
        self.fetches += 1
        result: list[VerificationKey] | DidError
        try:
            result = authentication_keys(did, self._fetch(url))
            until = self._monotonic() + self._ttl
        except (FetchFailed, EgressBlocked) as exc:
            result = DidError(f"the DID document could not be fetched ({type(exc).__name__})")
            until = self._monotonic() + self._failure_seconds
        except DidError as exc:
            result = exc
            until = self._monotonic() + self._failure_seconds
        with self._lock:
            self._entries[did] = (until, result)
            self._entries.move_to_end(did)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return result


def _answer(value: list[VerificationKey] | DidError) -> list[VerificationKey]:
    if isinstance(value, DidError):
        raise DidError(str(value))
    return value


def resolver_for(settings: Settings) -> DidResolver:
    """The resolver of a process: did:web through a ``SafeGet`` under the deployment's egress rules
    (``CAMPAIGN_LOCAL_DEVELOPMENT``, ``CAMPAIGN_EGRESS_PORTS``, ``CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS``)."""
    rules = DestinationRules.of(
        local_development=settings.campaign_local_development, extra_ports=settings.campaign_egress_ports
    )
    fetch = SafeGet(rules=rules, allow_private=settings.campaign_allow_private_webhooks)
    return DidResolver(fetch.get, local_development=settings.campaign_local_development, on_close=fetch.close)
