"""Unsubscribing end to end, the real app over a real Neo4j: the browser page (applied, confirmed, in the
reader's language) and the anonymous tRPC procedure."""

from __future__ import annotations

import pytest

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.unsubscribe import (
    UID,
    _assert_html_page,
    _no_profile_data,
    _profile,
    _state,
)

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
