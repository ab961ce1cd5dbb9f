"""The reference inbox taking LearnCard's format, as a real uvicorn server on loopback: an LCNNotification
the engine built (``lcn_body``) with the bearer the engine signs (``BearerTokens``) is stored once and
answered ``true``, also when retried; a forged, expired, untrusted or misdirected token, or a bad body,
is refused with ``{"sent": false}`` and nothing stored; a reused token is verified once and refused once
it expires; the engine's did:web document is fetched once; no token or key reaches a log line. The
Standard Webhooks format is served unchanged beside it (``test_posts.py`` covers it in full)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from campaign_engine.delivery.notify.lcn import REUSE_SECONDS, BearerTokens, lcn_body, learncard_did
from campaign_engine.did.engine import EngineDid, new_seed
from campaign_engine.did.jwt import sign_jwt
from campaign_engine.did.keys import did_key_of
from campaign_engine.did.resolver import DidResolver
from campaign_engine.domain.notification import AnnouncementMetadata
from campaign_engine.egress.fetch import SafeGet
from campaign_engine.egress.policy import DestinationRules
from campaign_engine.inbox.app import create_inbox_app
from campaign_engine.inbox.learncard import SenderCheck
from tests.support.inbox_posts import CREATED_AT, SECRET, ack, announcement, inbox_of, post, stored_count
from tests.support.servers import serve_in_thread

DOMAIN = "campaigns.example"


def _engine() -> EngineDid:
    seed = new_seed()
    engine = EngineDid.of("did:key:x", seed)  # the key first, then its did:key
    return EngineDid.of(did_key_of(engine.key.public_key()), seed)


def _body(engine_did: str, *, profile: str = "p-1", test_id: str | None = None, **overrides: Any) -> bytes:
    metadata = AnnouncementMetadata(
        campaign_id="c-1",
        campaign_created_at=CREATED_AT,
        dispatch_id="disp-1",
        delivery_id=f"del-{profile}-{test_id}",
        campaign_has_in_app=False,
        campaign_test_id=test_id,
    )
    raw = lcn_body(
        profile_id=profile,
        did=learncard_did(profile, DOMAIN),
        sender_did=overrides.pop("sender_did", engine_did),
        title="Hello",
        body="World",
        metadata=metadata,
        sent="2026-01-02T03:04:06.000000Z",
    )
    document = json.loads(raw)
    document.update(overrides)
    return json.dumps(document).encode()


def _post(inbox: str, body: bytes, token: str | None, *, scheme: str = "Bearer") -> httpx.Response:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"{scheme} {token}".strip()
    return httpx.post(f"{inbox}/api/notifications/send", content=body, headers=headers, timeout=10)


class _Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def engine() -> EngineDid:
    return _engine()


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def check(engine: EngineDid, clock: _Clock) -> SenderCheck:
    return SenderCheck(DidResolver(None), [engine.did], wall_clock=clock)


@pytest.fixture
def inbox(db_path: Path, check: SenderCheck) -> Iterator[str]:
    with serve_in_thread(create_inbox_app(db_path=db_path, secret=SECRET, learncard=check)) as url:
        yield url


def test_the_engines_notification_is_stored_once_and_answered_true(
    inbox: str, db_path: Path, engine: EngineDid, check: SenderCheck
) -> None:
    token = BearerTokens(engine).for_url(inbox)
    first = _post(inbox, _body(engine.did), token)
    assert (first.status_code, first.content) == (200, b"true")
    assert ack(first) == "positive"
    # The same notification again (its answer was lost): acknowledged, not stored a second time.
    again = _post(inbox, _body(engine.did), token)
    assert (again.status_code, again.content, ack(again)) == (200, b"true", "positive")
    # A test send of it is its own record, as in LearnCard's key.
    assert _post(inbox, _body(engine.did, test_id="t-1"), token).content == b"true"
    items = inbox_of(inbox, "p-1")
    assert [(i["data"]["metadata"].get("campaignTestId"), i["receiveCount"]) for i in items] == [
        ("t-1", 1),
        (None, 2),
    ]
    assert items[1]["to"] == {"profileId": "p-1", "did": learncard_did("p-1", DOMAIN)}
    assert items[1]["from"] == {"did": engine.did}
    assert stored_count(db_path) == 2
    assert check.verified == 1  # one signature check for the three POSTs of one token


def test_the_standard_format_is_served_beside_it(inbox: str, engine: EngineDid) -> None:
    assert post(inbox, announcement()).json() == {"sent": True}
    # A signed standard POST that also carries an Authorization header (a proxy's) stays standard.
    with httpx.Client(headers={"authorization": "Basic cHJveHk6cHJveHk="}) as proxied:
        answer = post(inbox, announcement(metadata={"campaignId": "c-2"}), client=proxied)
    assert answer.json() == {"sent": True}
    assert _post(inbox, _body(engine.did), BearerTokens(engine).for_url(inbox)).content == b"true"
    assert sorted("to" in item for item in inbox_of(inbox, "p-1")) == [False, False, True]


def _claims(did: str, now: float, **overrides: Any) -> dict[str, Any]:
    vp = {"@context": ["https://www.w3.org/2018/credentials/v1"], "type": ["VerifiablePresentation"]}
    claims = {"iss": did, "iat": int(now), "exp": int(now) + 120, "vp": {**vp, "holder": did}}
    claims.update(overrides)
    return claims


@pytest.mark.parametrize(
    "case",
    [
        "forged",
        "expired",
        "other-did",
        "wrong-holder",
        "no-exp",
        "other-sender",
        "not-bearer",
        "garbage",
        "none",
    ],
)
def test_a_bad_token_is_refused_and_nothing_stored(
    inbox: str, db_path: Path, engine: EngineDid, case: str
) -> None:
    now = time.time()
    body = _body(engine.did)
    scheme = "Bearer"
    if case == "forged":  # claims the engine's DID and key, signed by another key
        token = sign_jwt(_claims(engine.did, now), Ed25519PrivateKey.generate(), engine.kid)
    elif case == "expired":
        token = sign_jwt(_claims(engine.did, now, exp=int(now) - 60), engine.key, engine.kid)
    elif case == "other-did":  # validly signed by a DID the inbox does not trust
        other = _engine()
        token, body = BearerTokens(other).for_url(inbox), _body(other.did)
    elif case == "wrong-holder":
        token = sign_jwt(_claims(engine.did, now, vp={"holder": "did:key:z6Mkother"}), engine.key, engine.kid)
    elif case == "no-exp":  # an authorized sender's token must expire: it is reused without a nonce
        claims = _claims(engine.did, now)
        del claims["exp"]
        token = sign_jwt(claims, engine.key, engine.kid)
    elif case == "other-sender":  # a good token, but the body writes another sender's key
        token, body = (
            BearerTokens(engine).for_url(inbox),
            _body(engine.did, sender_did="did:web:other.example"),
        )
    elif case == "not-bearer":
        token, scheme = BearerTokens(engine).for_url(inbox), "Basic"
    elif case == "garbage":
        token = "not.a.jwt"
    else:
        token = ""
    response = _post(inbox, body, token, scheme=scheme)
    assert response.status_code == 401
    assert response.json() == {"sent": False, "error": "unauthorized"}
    assert ack(response) == "negative"
    assert stored_count(db_path) == 0


def test_a_bad_body_is_refused_without_echoing_it(inbox: str, db_path: Path, engine: EngineDid) -> None:
    token = BearerTokens(engine).for_url(inbox)
    broken_at = _body(engine.did, data={"metadata": {"campaignId": "c-1", "campaignCreatedAt": "yesterday"}})
    response = _post(inbox, broken_at, token)
    assert response.status_code == 400
    assert response.json()["issues"][0]["path"] == ["data", "metadata", "campaignCreatedAt"]
    assert "yesterday" not in response.text
    assert ack(response) == "negative"
    for broken in (
        b"not json",
        _body(engine.did, type="OTHER"),
        # An empty test id would collide with the real send's key.
        _body(
            engine.did,
            data={"metadata": {"campaignId": "c-1", "campaignCreatedAt": CREATED_AT, "campaignTestId": ""}},
        ),
        _body(engine.did, to={"profileId": "p-1"}),
    ):
        assert _post(inbox, broken, token).status_code == 400
    assert stored_count(db_path) == 0


def test_a_reused_token_is_refused_once_it_expires(
    inbox: str, db_path: Path, engine: EngineDid, check: SenderCheck, clock: _Clock
) -> None:
    """Reuse is safe because the token expires: held or not, one past ``exp`` (and the leeway) is
    refused, by the inbox's clock."""
    tokens = BearerTokens(engine, wall_clock=clock)
    token = tokens.for_url(inbox)
    assert _post(inbox, _body(engine.did), token).content == b"true"
    clock.now += 2 * REUSE_SECONDS + 31  # its exp, plus the 30 s leeway
    assert _post(inbox, _body(engine.did, profile="p-2"), token).status_code == 401
    assert check.verified == 1
    assert _post(inbox, _body(engine.did, profile="p-2"), tokens.for_url(inbox)).content == b"true"
    assert stored_count(db_path) == 2


def test_the_engines_did_web_document_is_fetched_once(db_path: Path) -> None:
    """did:web as ``make dev`` runs it: the engine's document on loopback, fetched at the first POST
    and then held by the resolver (as long as ``DidResolver``'s TTL), every POST verified by its key."""
    seed = new_seed()
    holder: dict[str, Any] = {}

    async def document(_: Any) -> JSONResponse:
        return JSONResponse(holder["engine"].document())

    with serve_in_thread(Starlette(routes=[Route("/.well-known/did.json", document)])) as origin:
        did = "did:web:" + quote(origin.removeprefix("http://"), safe="")
        engine = holder["engine"] = EngineDid.of(did, seed)
        get = SafeGet(rules=DestinationRules.of(local_development=True), allow_private=True)
        resolver = DidResolver(get.get, local_development=True, on_close=get.close)
        check = SenderCheck(resolver, [did], on_close=resolver.close)
        with serve_in_thread(create_inbox_app(db_path=db_path, secret=SECRET, learncard=check)) as inbox:
            bearer = BearerTokens(engine)
            for profile in ("p-1", "p-2", "p-3"):
                assert _post(inbox, _body(did, profile=profile), bearer.for_url(inbox)).content == b"true"
            fresh = sign_jwt(_claims(did, time.time()), engine.key, engine.kid)  # a second token, same key
            assert _post(inbox, _body(did, profile="p-4"), fresh).content == b"true"
            assert resolver.fetches == 1
            assert check.verified == 2
    assert stored_count(db_path) == 4


def test_no_token_or_key_reaches_a_log_line(
    inbox: str, engine: EngineDid, caplog: pytest.LogCaptureFixture
) -> None:
    token = BearerTokens(engine).for_url(inbox)
    expired = sign_jwt(_claims(engine.did, time.time(), exp=1), engine.key, engine.kid)
    with caplog.at_level(logging.DEBUG):
        _post(inbox, _body(engine.did), token)
        _post(inbox, _body(engine.did), expired)
        _post(inbox, _body(engine.did, sender_did="did:web:other.example"), token)
        _post(inbox, b"not json", token)
    assert any(r.getMessage().startswith("inbox.rejected") for r in caplog.records)
    seed = engine.key.private_bytes_raw()
    for record in caplog.records:
        text = record.getMessage() + repr(record.__dict__)
        for secret in (token, expired, *token.split("."), *expired.split(".")[1:]):
            assert secret not in text
        assert seed.hex() not in text
