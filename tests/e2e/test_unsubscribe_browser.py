"""The unsubscribe page in a real browser: Debian's Chromium, driven by Playwright, against real uvicorn.

Chromium is required: if ``/usr/bin/chromium`` is missing (``apt-get install chromium``) the launch fails
and so does this test. The CSP is checked the way it matters, by the browser: the hashed inline style
must apply, and no request may leave the page's origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.support.browser import ARTIFACTS
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e

SECRET = "browser-test-unsubscribe-secret-0123456789abcdef"

LANGUAGES = [
    # (language, Accept-Language, direction, button label, confirmation heading)
    ("en", "en-GB,en;q=0.9", "ltr", "Unsubscribe", "You are unsubscribed"),
    ("es", "es-ES,es;q=0.9,en;q=0.5", "ltr", "Darse de baja", "Te has dado de baja"),
    ("fr", "de;q=0.9,fr-FR;q=0.8,en;q=0.1", "ltr", "Se désabonner", "Votre désabonnement est enregistré"),
    ("ar", "ar-EG,ar;q=0.9,en;q=0.5", "rtl", "إلغاء الاشتراك", "تم إلغاء اشتراكك"),
]


@pytest.fixture
def server(base_settings: Settings, graph: Graph) -> Iterator[str]:
    """The real app on a loopback port. (Its logs, tokens kept out, are test_structured_logs.py's: that
    test runs the processes with the product's own logging and walks this page too.)"""
    settings = base_settings.model_copy(update={"campaign_unsubscribe_secret": SecretStr(SECRET)})
    with serve_in_thread(
        create_app(settings, graph=graph),
        log_config=None,
        access_log=True,
        ws="none",
        http="h11",
        timeout_graceful_shutdown=2,
        log_level="info",
    ) as url:
        yield url


def _assert_page_headers(headers: dict[str, str]) -> None:
    assert headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"
    csp = headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ):
        assert directive in csp
    assert "style-src 'sha256-" in csp
    assert "set-cookie" not in headers


def _opted_out(graph: Graph, profile_id: str) -> bool:
    rows = graph.run(
        "MATCH (p:Profile {profileId: $pid}) RETURN p.announcementEmailOptOut AS v", pid=profile_id
    )
    return bool(rows[0]["v"])


def _watch(page: Page, origin: str) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {"foreign": [], "csp": []}
    page.on("request", lambda r: None if r.url.startswith(origin) else seen["foreign"].append(r.url))
    page.on("console", lambda m: seen["csp"].append(m.text) if "Content Security Policy" in m.text else None)
    return seen


@pytest.mark.parametrize(("lang", "accept_language", "direction", "button", "done"), LANGUAGES)
def test_unsubscribe_page_in_chromium(
    server: str,
    browser: Browser,
    graph: Graph,
    lang: str,
    accept_language: str,
    direction: str,
    button: str,
    done: str,
) -> None:
    profile_id, unsubscribe_id = f"p-{lang}", f"uid-{lang}-7f3a9c"
    graph.run(
        "CREATE (:Profile {profileId: $pid, announcementEmailOptOut: false, campaignUnsubscribeId: $uid})",
        pid=profile_id,
        uid=unsubscribe_id,
    )
    token = UnsubscribeTokens(SECRET).issue(unsubscribe_id)
    # Only the header: Playwright's ``locale`` option would replace it with a single language.
    context = browser.new_context(extra_http_headers={"Accept-Language": accept_language})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        seen = _watch(page, server)

        loaded = page.goto(f"{server}/campaigns/unsubscribe/browser?token={token}")
        assert loaded is not None
        assert loaded.status == 200
        _assert_page_headers(loaded.headers)
        assert loaded.headers["content-language"] == lang
        assert page.evaluate("document.documentElement.lang") == lang
        assert page.evaluate("document.dir") == direction
        assert page.evaluate("getComputedStyle(document.querySelector('main')).direction") == direction
        # The inline style is allowed by its hash: if the CSP blocked it the button would be unstyled.
        assert page.evaluate("getComputedStyle(document.querySelector('button')).backgroundColor") in {
            "rgb(29, 78, 216)"
        }
        assert page.inner_text("button").strip() == button
        assert not _opted_out(graph, profile_id)  # loading the page changes nothing
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"unsubscribe-{lang}.png"), full_page=True)

        with page.expect_response(lambda r: r.request.method == "POST") as submitted:
            page.click("button[type=submit]")
        answer: Any = submitted.value
        assert answer.status == 200
        assert answer.url == f"{server}/campaigns/unsubscribe/browser?token={token}"
        _assert_page_headers(answer.headers)
        page.wait_for_load_state()
        assert page.inner_text("h1").strip() == done
        assert page.evaluate("document.dir") == direction
        assert page.query_selector("form") is None
        page.screenshot(path=str(ARTIFACTS / f"unsubscribe-{lang}-done.png"), full_page=True)
        assert _opted_out(graph, profile_id)

        assert seen["foreign"] == []
        assert seen["csp"] == []
    finally:
        context.close()


def test_bad_link_page_in_chromium(server: str, browser: Browser) -> None:
    context = browser.new_context(extra_http_headers={"Accept-Language": "ar"})
    try:
        page = context.new_page()
        loaded = page.goto(f"{server}/campaigns/unsubscribe/browser?token=not-a-token")
        assert loaded is not None
        assert loaded.status == 400
        _assert_page_headers(loaded.headers)
        assert page.evaluate("document.dir") == "rtl"
        assert page.inner_text("h1").strip() == "هذا الرابط لا يعمل"
        assert page.query_selector("form") is None
        page.screenshot(path=str(ARTIFACTS / "unsubscribe-invalid-ar.png"), full_page=True)
    finally:
        context.close()
