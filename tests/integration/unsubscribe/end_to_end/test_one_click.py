"""Unsubscribing end to end, the real app over a real Neo4j: RFC 8058 one-click, idempotent, its body
required, GET never mutating, a bad token a 400 without profile data."""

from __future__ import annotations

import pytest

from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.support.api import TrpcClient, error_code
from tests.support.unsubscribe import (
    SECRET,
    UID,
    _assert_headers,
    _assert_html_page,
    _no_profile_data,
    _one_click,
    _profile,
    _state,
)

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
