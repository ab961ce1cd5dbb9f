"""Unsubscribing end to end: the real app (RFC 8058 endpoint, browser page, tRPC) over a real Neo4j."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.optout import ensure_unsubscribe_ids
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import at_once

SECRET = "integration-unsubscribe-secret-0123456789abcdef"
UID = "6c1f1c1e-2b7d-4c55-9d0e-7f1d2a3b4c5d"
ONE_CLICK = {"content-type": "application/x-www-form-urlencoded"}
ONE_CLICK_BODY = "List-Unsubscribe=One-Click"


class SteppingClock:
    """Each call is one second after the previous one."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def settings(base_settings: Settings) -> Settings:
    return base_settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(SECRET)})


@pytest.fixture
def api(settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(settings, graph, clock=SteppingClock()) as client:
        yield client


@pytest.fixture
def token() -> str:
    return UnsubscribeTokens(SECRET).issue(UID)


def _profile(graph: Graph, profile_id: str = "p1", unsubscribe_id: str | None = UID, **props: Any) -> None:
    graph.run(
        "CREATE (p:Profile {profileId: $pid, did: $did, announcementEmailOptOut: false,"
        " announcementPushOptOut: false}) SET p += $props"
        " WITH p CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: $email,"
        " isVerified: true, isPrimary: true})",
        pid=profile_id,
        did=f"did:plc:{profile_id}-secret-did",
        email=f"{profile_id}.private@example.org",
        props={**props, **({"campaignUnsubscribeId": unsubscribe_id} if unsubscribe_id else {})},
    )


def _state(graph: Graph, profile_id: str = "p1") -> dict[str, Any]:
    rows = graph.run(
        "MATCH (p:Profile {profileId: $pid}) RETURN p.announcementEmailOptOut AS optOut,"
        " p.announcementEmailOptOutAt AS at, p.announcementPushOptOut AS push,"
        " p.campaignStateLock AS lock, p.campaignUnsubscribeId AS uid",
        pid=profile_id,
    )
    assert len(rows) == 1
    return rows[0]


def _no_profile_data(text: str, graph_profile_id: str = "p1") -> None:
    for secret in (graph_profile_id, UID, "secret-did", "private@example.org", "example.org"):
        assert secret not in text


def _assert_headers(response: Any) -> None:
    h = response.headers
    assert h["cache-control"] == "no-store"
    assert h["referrer-policy"] == "no-referrer"
    assert h["x-content-type-options"] == "nosniff"
    assert "set-cookie" not in h
    assert "location" not in h
    directives = {
        d.split()[0]: d.split()[1:] for d in (p.strip() for p in h["content-security-policy"].split(";"))
    }
    assert directives["default-src"] == ["'none'"]
    assert directives["form-action"] == ["'self'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    assert len(directives["style-src"]) == 1
    assert directives["style-src"][0].startswith("'sha256-")
    assert not {"script-src", "img-src", "connect-src"} & set(directives)


def _assert_html_page(response: Any) -> None:
    """A self-contained page whose only inline style is the one the CSP hash allows."""
    _assert_headers(response)
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    styles = re.findall(r"<style>(.*?)</style>", html, flags=re.DOTALL)
    assert len(styles) == 1
    digest = base64.b64encode(hashlib.sha256(styles[0].encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in response.headers["content-security-policy"]
    lowered = html.lower()
    for forbidden in (
        "<script",
        "<img",
        "<link",
        "<iframe",
        "http://",
        "https://",
        "style=",
        "onclick",
        "src=",
    ):
        assert forbidden not in lowered


def _one_click(api: TrpcClient, token: str, **kwargs: Any) -> Any:
    kwargs.setdefault("content", ONE_CLICK_BODY)
    kwargs.setdefault("headers", ONE_CLICK)
    return api.http.post("/campaigns/unsubscribe", params={"token": token}, **kwargs)


# --- RFC 8058 one-click ---------------------------------------------------------------------------


def test_one_click_post_opts_out_idempotently(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    first = _one_click(api, token)
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/plain")
    assert len(first.content) < 200
    _assert_headers(first)
    state = _state(graph)
    assert state["optOut"] is True
    assert state["at"] is not None
    assert state["lock"] == 1  # taken under the profile lock

    again = _one_click(api, token)
    assert again.status_code == 200
    assert again.text == first.text
    later = _state(graph)
    assert later["optOut"] is True
    assert later["at"] == state["at"]  # the first opt-out time is kept


def test_one_click_accepts_multipart_form_data(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    response = api.http.post(
        "/campaigns/unsubscribe",
        params={"token": token},
        files={"List-Unsubscribe": (None, "One-Click")},
    )
    assert response.status_code == 200, response.text
    assert _state(graph)["optOut"] is True


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("", "application/x-www-form-urlencoded"),
        ("List-Unsubscribe=Yes", "application/x-www-form-urlencoded"),
        ("List-Unsubscribe=One-Click", "text/plain"),
        ('{"List-Unsubscribe": "One-Click"}', "application/json"),
        ("x=" + "a" * 20_000 + "&List-Unsubscribe=One-Click", "application/x-www-form-urlencoded"),
    ],
)
def test_one_click_requires_the_rfc8058_body(
    api: TrpcClient, graph: Graph, token: str, body: str, content_type: str
) -> None:
    _profile(graph)
    response = _one_click(api, token, content=body, headers={"content-type": content_type})
    assert response.status_code in {400, 413}
    _assert_headers(response)
    assert _state(graph)["optOut"] is False


def test_get_never_mutates(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    for path in ("/campaigns/unsubscribe", "/campaigns/unsubscribe/browser"):
        response = api.http.get(path, params={"token": token})
        assert response.status_code == 200
        _assert_html_page(response)
        assert f'action="/campaigns/unsubscribe/browser?token={token}"' in response.text
        assert 'method="post"' in response.text
        _no_profile_data(response.text)
    state = _state(graph)
    assert state["optOut"] is False
    assert state["lock"] is None


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "garbage",
        UnsubscribeTokens(SECRET + "-old").issue(UID),  # rotated secret
        UnsubscribeTokens(SECRET).issue(UID)[:-4],  # truncated
    ],
)
def test_bad_token_is_400_without_profile_data(api: TrpcClient, graph: Graph, bad: str) -> None:
    _profile(graph)
    one_click = _one_click(api, bad)
    assert one_click.status_code == 400
    _assert_headers(one_click)
    _no_profile_data(one_click.text)
    for method, path in (
        ("GET", "/campaigns/unsubscribe"),
        ("GET", "/campaigns/unsubscribe/browser"),
        ("POST", "/campaigns/unsubscribe/browser"),
    ):
        response = api.http.request(method, path, params={"token": bad})
        assert response.status_code == 400
        _assert_html_page(response)
        assert "This link does not work" in response.text
        assert "<form" not in response.text
        _no_profile_data(response.text)
    missing = api.http.get("/campaigns/unsubscribe/browser")
    assert missing.status_code == 400
    trpc = api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": bad or "x"})
    assert error_code(trpc) == "BAD_REQUEST"
    _no_profile_data(trpc.text)
    assert _state(graph)["optOut"] is False


# --- identity: campaigns, renames, deletions -------------------------------------------------------


def _create_campaign(api: TrpcClient, campaign_id: str) -> None:
    ok(
        api.mutate(
            "campaigns.create",
            {
                "id": campaign_id,
                "name": "News",
                "channels": ["notify"],
                "notification": {"title": "T", "body": "B"},
            },
            as_=ADMIN_ID,
            admin=True,
        )
    )


def test_link_keeps_working_after_archive_and_delete(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    _create_campaign(api, "c-archived")
    _create_campaign(api, "c-deleted")
    ok(
        api.mutate(
            "campaigns.setStatus",
            {"campaignId": "c-archived", "status": "archived"},
            as_=ADMIN_ID,
            admin=True,
        )
    )
    ok(api.mutate("campaigns.delete", {"campaignId": "c-deleted"}, as_=ADMIN_ID, admin=True))
    assert graph.run("MATCH (c:Campaign {id: 'c-deleted'}) RETURN c") == []
    assert _one_click(api, token).status_code == 200
    assert _state(graph)["optOut"] is True


def test_link_survives_profile_rename(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    ok(
        api.mutate(
            "profiles.upsert",
            {
                "profiles": [
                    {
                        "profileId": "p1",
                        "did": "did:plc:renamed",
                        "locale": "fr",
                        "emails": [{"address": "new.name@example.net", "verified": True, "primary": True}],
                    }
                ]
            },
            as_=ADMIN_ID,
            admin=True,
        )
    )
    assert _state(graph)["uid"] == UID  # the upsert never touches the unsubscribe id
    response = api.http.post("/campaigns/unsubscribe/browser", params={"token": token})
    assert response.status_code == 200
    assert _state(graph)["optOut"] is True


def test_deleted_profile_link_does_nothing_and_never_transfers(
    api: TrpcClient, graph: Graph, token: str
) -> None:
    _profile(graph)
    _profile(graph, "bystander", unsubscribe_id="other-id")
    alive = _one_click(api, UnsubscribeTokens(SECRET).issue("never-allocated"))

    ok(api.mutate("profiles.delete", {"profileId": "p1"}, as_=ADMIN_ID, admin=True))
    gone = _one_click(api, token)
    assert gone.status_code == 200
    assert gone.text == alive.text  # no answer reveals whether the profile exists
    assert graph.run("MATCH (p:Profile {campaignUnsubscribeId: $uid}) RETURN p", uid=UID) == []

    # The same profileId comes back: it gets a fresh id, and the old link cannot reach it.
    ok(api.mutate("profiles.upsert", {"profiles": [{"profileId": "p1"}]}, as_=ADMIN_ID, admin=True))
    ids = graph.write(ensure_unsubscribe_ids, ["p1"])
    assert ids["p1"] != UID
    for response in (
        _one_click(api, token),
        api.http.post("/campaigns/unsubscribe/browser", params={"token": token}),
        api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": token}),
    ):
        assert response.status_code == 200
    assert _state(graph)["optOut"] is False
    assert _state(graph, "bystander")["optOut"] is False
    # ... while a link issued for the new id works.
    assert _one_click(api, UnsubscribeTokens(SECRET).issue(ids["p1"])).status_code == 200
    assert _state(graph)["optOut"] is True


def test_ensure_unsubscribe_ids_keeps_existing_ids(graph: Graph) -> None:
    _profile(graph, "a", unsubscribe_id="kept-id")
    _profile(graph, "b", unsubscribe_id=None)
    _profile(graph, "c", unsubscribe_id=None)
    first = graph.write(ensure_unsubscribe_ids, ["c", "b", "a", "missing", "b"])
    assert set(first) == {"a", "b", "c"}
    assert first["a"] == "kept-id"
    assert len(set(first.values())) == 3
    assert graph.write(ensure_unsubscribe_ids, ["a", "b", "c"]) == first


def _allocate_concurrently(graph: Graph, ids: list[str]) -> list[dict[str, str]]:
    return at_once(lambda order: graph.write(ensure_unsubscribe_ids, order), [(ids,), (ids[::-1],)])


def test_concurrent_allocations_agree_on_one_id(graph: Graph) -> None:
    """Two claims allocating at once for the same profiles: both must see the one id that was stored."""
    for round_ in range(10):
        ids = [f"r{round_}-a", f"r{round_}-b"]
        for pid in ids:
            _profile(graph, pid, unsubscribe_id=None)
        results = _allocate_concurrently(graph, ids)
        stored = {pid: _state(graph, pid)["uid"] for pid in ids}
        assert results == [stored, stored]


# --- browser page ---------------------------------------------------------------------------------


def test_browser_post_applies_and_confirms(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    response = api.http.post(
        "/campaigns/unsubscribe/browser", params={"token": token}, follow_redirects=False
    )
    assert response.status_code == 200
    _assert_html_page(response)
    assert "You are unsubscribed" in response.text
    assert "<form" not in response.text
    _no_profile_data(response.text)
    assert _state(graph)["optOut"] is True


@pytest.mark.parametrize(
    ("accept_language", "lang", "direction", "button"),
    [
        (None, "en", "ltr", "Unsubscribe"),
        ("de-DE,de;q=0.9", "en", "ltr", "Unsubscribe"),
        ("es-ES,es;q=0.9", "es", "ltr", "Darse de baja"),
        ("en;q=0.4, fr-CA;q=0.8", "fr", "ltr", "Se désabonner"),
        ("ar-EG,ar;q=0.9,en;q=0.5", "ar", "rtl", "إلغاء الاشتراك"),
        ("ar;q=0, es;q=0.2", "es", "ltr", "Darse de baja"),
    ],
)
def test_language_from_accept_language(
    api: TrpcClient,
    graph: Graph,
    token: str,
    accept_language: str | None,
    lang: str,
    direction: str,
    button: str,
) -> None:
    headers = {} if accept_language is None else {"accept-language": accept_language}
    response = api.http.get("/campaigns/unsubscribe/browser", params={"token": token}, headers=headers)
    assert response.status_code == 200
    assert f'<html lang="{lang}" dir="{direction}">' in response.text
    assert button in response.text
    assert response.headers["content-language"] == lang
    assert "accept-language" in response.headers["vary"].lower()


# --- tRPC ------------------------------------------------------------------------------------------


def test_trpc_unsubscribe_is_anonymous_and_idempotent(api: TrpcClient, graph: Graph, token: str) -> None:
    _profile(graph)
    assert ok(api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": token})) == {"ok": True}
    at = _state(graph)["at"]
    assert ok(api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": token})) == {"ok": True}
    assert _state(graph) | {"lock": None} == {
        "optOut": True,
        "at": at,
        "push": False,
        "lock": None,
        "uid": UID,
    }
    assert (
        error_code(api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": token, "x": 1}))
        == "BAD_REQUEST"
    )


def test_without_secret_pages_are_absent_and_trpc_unavailable(base_settings: Settings, graph: Graph) -> None:
    _profile(graph)
    with api_client(base_settings, graph) as api:
        assert api.http.get("/campaigns/unsubscribe/browser", params={"token": "x"}).status_code == 404
        response = api.mutate("campaigns.unsubscribeFromAnnouncements", {"token": "x"})
        assert error_code(response) == "SERVICE_UNAVAILABLE"
