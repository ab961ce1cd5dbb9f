"""did:web over real loopback HTTP through the safe egress GET: the document is fetched once per TTL,
failures are remembered, private addresses need the development flag, and redirects are not followed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from campaign_engine.did import DidError, DidResolver, multibase_of, sign_jwt, verify_jwt
from campaign_engine.did.keys import raw_bytes
from campaign_engine.egress.fetch import SafeGet
from campaign_engine.egress.policy import DestinationRules
from tests.support.servers import serve_in_thread

KEY = Ed25519PrivateKey.generate()


class Host:
    """A loopback web host serving DID documents; counts requests per path."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.documents: dict[str, dict[str, Any]] = {}
        self.app = Starlette(routes=[Route("/{path:path}", self.serve)])

    async def serve(self, request: Request) -> Response:
        path = request.url.path
        self.hits[path] = self.hits.get(path, 0) + 1
        if path == "/moved/did.json":
            return RedirectResponse("/users/alice/did.json")
        if path == "/big/did.json":
            return Response(b"{" + b" " * 70_000 + b"}", media_type="application/json")
        document = self.documents.get(path)
        return JSONResponse(document) if document else Response(status_code=404)


@pytest.fixture(scope="module")
def host() -> Iterator[tuple[Host, str]]:
    served = Host()
    with serve_in_thread(served.app) as url:
        yield served, url.removeprefix("http://").replace(":", "%3A")


def _document(did: str) -> dict[str, Any]:
    method = {"id": f"{did}#key-1", "type": "Multikey", "controller": did}
    method["publicKeyMultibase"] = multibase_of(KEY.public_key())
    return {"id": did, "verificationMethod": [method], "authentication": [f"{did}#key-1"]}


OPEN: list[DidResolver] = []


@pytest.fixture(autouse=True)
def _close_resolvers() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def _resolver(*, local: bool = True, allow_private: bool = True, **kwargs: Any) -> DidResolver:
    fetch = SafeGet(rules=DestinationRules.of(local_development=local), allow_private=allow_private)
    OPEN.append(DidResolver(fetch.get, local_development=local, on_close=fetch.close, **kwargs))
    return OPEN[-1]


def test_a_did_web_document_verifies_tokens_and_is_fetched_once_per_ttl(host: tuple[Host, str]) -> None:
    served, domain = host
    did = f"did:web:{domain}:users:alice"
    served.documents["/users/alice/did.json"] = _document(did)
    now = [0.0]
    resolver = _resolver(ttl_seconds=60, monotonic=lambda: now[0])
    token = sign_jwt({"iss": did, "nonce": "c1"}, KEY, f"{did}#key-1")
    for _ in range(3):
        assert verify_jwt(token, resolver).issuer == did
    assert served.hits["/users/alice/did.json"] == 1
    now[0] = 61.0
    assert [raw_bytes(k) for k in resolver.resolve_key(did)] == [raw_bytes(KEY.public_key())]
    assert served.hits["/users/alice/did.json"] == 2

    root = f"did:web:{domain}"
    served.documents["/.well-known/did.json"] = _document(root)
    assert len(resolver.resolve_key(root)) == 1


def test_failures_are_remembered_and_bounded(host: tuple[Host, str]) -> None:
    served, domain = host
    now = [0.0]
    resolver = _resolver(failure_seconds=30, max_entries=2, monotonic=lambda: now[0])
    for name in ("missing", "moved", "big"):
        did = f"did:web:{domain}:{name}"
        for _ in range(2):
            with pytest.raises(DidError):
                resolver.resolve_key(did)
        assert served.hits[f"/{name}/did.json"] == 1, name  # the second ask was answered from memory
    assert served.hits.get("/users/alice/did.json", 0) <= 2  # the redirect was never followed
    now[0] = 31.0
    with pytest.raises(DidError):
        resolver.resolve_key(f"did:web:{domain}:missing")
    assert served.hits["/missing/did.json"] == 2
    assert resolver.fetches == 4


def test_loopback_needs_both_development_flags(host: tuple[Host, str]) -> None:
    served, domain = host
    did = f"did:web:{domain}:users:bob"
    served.documents["/users/bob/did.json"] = _document(did)
    for resolver in (_resolver(local=False), _resolver(allow_private=False)):
        with pytest.raises(DidError):
            resolver.resolve_key(did)
    assert "/users/bob/did.json" not in served.hits  # refused before any connection
    assert len(_resolver().resolve_key(did)) == 1


def test_a_document_for_another_did_is_refused(host: tuple[Host, str]) -> None:
    served, domain = host
    served.documents["/users/carol/did.json"] = _document("did:web:elsewhere.example:users:carol")
    with pytest.raises(DidError):
        _resolver().resolve_key(f"did:web:{domain}:users:carol")
    assert json.dumps(served.documents["/users/carol/did.json"])  # it was served, and still refused
