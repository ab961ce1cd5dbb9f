"""Web-view tokens: bound like unsubscribe tokens, but neither kind reads as the other,
and the view page's policy admits exactly the email's own inline styles and image origins."""

from __future__ import annotations

import base64
import hashlib

import pytest

from campaign_engine.delivery.email.render import Branding, render_email
from campaign_engine.delivery.email.web_view import policy_for
from campaign_engine.unsubscribe.footer import FOOTERS, footer_for
from campaign_engine.unsubscribe.i18n import STRINGS
from campaign_engine.unsubscribe.tokens import (
    InvalidUnsubscribeToken,
    UnsubscribeTokens,
    unsubscribe_url,
    web_view_url,
)

SECRET = "unit-secret-0123456789abcdef0123456789"


def test_a_view_token_names_the_recipient_and_the_campaign_and_is_no_unsubscribe_token() -> None:
    tokens = UnsubscribeTokens(SECRET)
    view = tokens.web_view.issue("3f1e-uid", "acme~spring")
    assert tokens.web_view.read(view) == ("3f1e-uid", "acme~spring")
    with pytest.raises(InvalidUnsubscribeToken):
        tokens.read(view)
    assert tokens.web_view.read(tokens.issue("3f1e-uid")) is None
    assert UnsubscribeTokens(SECRET + "x").web_view.read(view) is None  # another secret
    assert tokens.web_view.read(view[:-9] + ("A" if view[-9] != "A" else "B") + view[-8:]) is None
    for bad in ("", "a.b", None, 42, "x" * 600):
        assert tokens.web_view.read(bad) is None
    with pytest.raises(ValueError):
        tokens.web_view.issue("", "spring")


def test_a_click_token_pins_its_url_and_no_kind_reads_as_another() -> None:
    """The third kind names the recipient, the campaign incarnation and the URL."""
    tokens = UnsubscribeTokens(SECRET)
    url = "https://app.example/m/spring?utm_source=email&utm_campaign=spring"
    click = tokens.clicks.issue(
        "3f1e-uid", campaign_id="acme~spring", campaign_created_at="2026-03-01", url=url
    )
    found = tokens.clicks.read(click)
    assert found is not None and (found.unsubscribe_id, found.campaign_id, found.url) == (
        "3f1e-uid",
        "acme~spring",
        url,
    )
    assert found.campaign_created_at == "2026-03-01" and not found.test
    test = tokens.clicks.read(
        tokens.clicks.issue("u", campaign_id="c", campaign_created_at="t", url=url, test=True)
    )
    assert test is not None and test.test
    view, unsubscribe = tokens.web_view.issue("3f1e-uid", "acme~spring"), tokens.issue("3f1e-uid")
    assert tokens.clicks.read(view) is None and tokens.clicks.read(unsubscribe) is None
    assert tokens.web_view.read(click) is None
    with pytest.raises(InvalidUnsubscribeToken):
        tokens.read(click)
    assert UnsubscribeTokens(SECRET + "x").clicks.read(click) is None
    for bad_url in ("javascript:alert(1)", "https://a.example/\r\nX: y", "//a.example/", "x" * 3000):
        with pytest.raises(ValueError):
            tokens.clicks.issue("u", campaign_id="c", campaign_created_at="t", url=bad_url)


@pytest.mark.parametrize(
    ("served", "footer"),
    [("es", "es"), ("es-MX", "es"), ("ar-EG", "ar"), ("fr", "fr"), ("de", "en"), (None, "en")],
)
def test_the_footer_speaks_the_served_language_when_the_unsubscribe_page_does(
    served: str | None, footer: str
) -> None:
    assert set(FOOTERS) == set(STRINGS)
    assert footer_for(served) is FOOTERS[footer]


class Copy:
    subject, title, body, ctaLabel = "S", "T", "B", "Go"
    heroImageUrl = "https://img.example:8443/hero.png"


def test_the_web_view_policy_admits_exactly_its_inline_styles_and_image_origins() -> None:
    brand = Branding(name="School", logo_url="https://cdn.example/logo.png")
    shown = render_email(copy=Copy(), branding=brand, cta_url="https://app.example/m/c", unsubscribe_url=None,
                         lang="es")  # fmt: skip
    assert FOOTERS["es"].web_view_note in shown.html and FOOTERS["es"].unsubscribe not in shown.html
    policy = policy_for(shown.html)
    assert "img-src https://cdn.example https://img.example:8443;" in policy
    assert "'unsafe-hashes'" in policy and "script" not in policy
    styled = 'style="margin:0 0 16px;font-size:22px;line-height:1.3;color:#1f2328;"'
    assert styled in shown.html
    digest = base64.b64encode(hashlib.sha256(styled[7:-1].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy
    assert policy_for("<p>plain</p>").startswith("default-src 'none'; style-src 'sha256-")
    assert "unsafe-hashes" not in policy_for("<p>plain</p>")


def test_links_are_https_except_to_a_loopback_domain_name_as_make_dev_serves_it() -> None:
    assert unsubscribe_url("campaigns.example.org", "t").startswith("https://campaigns.example.org/")
    assert web_view_url("campaigns.example.org:8443", "t").startswith("https://campaigns.example.org:8443/")
    for loopback in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        assert unsubscribe_url(loopback, "t") == f"http://{loopback}/campaigns/unsubscribe?token=t"
        assert web_view_url(loopback, "t") == f"http://{loopback}/campaigns/view?token=t"
    assert unsubscribe_url("127.0.0.1.evil.example", "t").startswith("https://")
