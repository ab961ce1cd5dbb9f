"""Email rendering: escaping, line breaks, safe images and links, CTA URL rules, branding fallback."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from campaign_engine.delivery.email.render import (
    DEFAULT_BRANDING,
    Branding,
    EmailConfigError,
    branding_for,
    cta_url_for,
    render_email,
)
from campaign_engine.domain.errors import BadRequest

UNSUB = "https://campaigns.test/unsubscribe?t=tok123"
CTA = "https://app.test/m/c1?utm_source=email&utm_campaign=c1"


@dataclass(frozen=True)
class Copy:
    subject: str = "Big news"
    title: str = "Hello there"
    body: str = "Line one\nLine two"
    ctaLabel: str = "Open"
    heroImageUrl: str | None = None


def render(copy: Copy | None = None, branding: Branding = DEFAULT_BRANDING) -> tuple[str, str, str]:
    out = render_email(copy=copy or Copy(), branding=branding, cta_url=CTA, unsubscribe_url=UNSUB)
    return out.subject, out.html, out.text


def test_body_html_is_escaped_and_keeps_line_breaks() -> None:
    _, html, text = render(Copy(body="<script>alert(1)</script>\r\nsecond & third\nfourth"))
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>\nsecond &amp; third<br>\nfourth" in html
    assert "<script>alert(1)</script>\nsecond & third\nfourth" in text  # plain text stays plain


def test_title_cta_label_and_brand_name_are_escaped() -> None:
    _, html, _ = render(Copy(title="<b>x</b>", ctaLabel='"><img src=x>'), Branding(name="<Acme>"))
    assert "<b>x</b>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert '"><img src=x>' not in html
    assert "&lt;Acme&gt;" in html


def test_unsubscribe_link_is_visible_in_both_parts() -> None:
    _, html, text = render()
    assert f'href="{UNSUB}"' in html
    assert "Unsubscribe" in html
    assert f"Unsubscribe from announcement emails: {UNSUB}" in text


def test_cta_link_in_both_parts_with_query_escaped_in_html() -> None:
    _, html, text = render()
    assert 'href="https://app.test/m/c1?utm_source=email&amp;utm_campaign=c1"' in html
    assert f"Open: {CTA}" in text


def test_hero_image_only_when_https() -> None:
    _, html, _ = render(Copy(heroImageUrl="https://cdn.test/hero.png"))
    assert 'src="https://cdn.test/hero.png"' in html
    for bad in ("http://cdn.test/hero.png", "javascript:alert(1)", "data:image/png;base64,AAAA"):
        _, html, _ = render(Copy(heroImageUrl=bad))
        assert bad not in html


def test_subject_cannot_carry_header_breaks() -> None:
    subject, _, _ = render(Copy(subject="Hi\r\nBcc: x@example.com"))
    assert "\n" not in subject
    assert "\r" not in subject


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://x.test/", "/relative"])
def test_links_must_be_web_urls(url: str) -> None:
    with pytest.raises(EmailConfigError):
        render_email(copy=Copy(), branding=DEFAULT_BRANDING, cta_url=url, unsubscribe_url=UNSUB)
    with pytest.raises(EmailConfigError):
        render_email(copy=Copy(), branding=DEFAULT_BRANDING, cta_url=CTA, unsubscribe_url=url)


def test_branding_colours_and_logo_are_used() -> None:
    brand = Branding(
        name="Acme", primary_colour="#ff0000", text_colour="#000", logo_url="https://cdn.test/l.png"
    )
    _, html, _ = render(branding=brand)
    assert "#ff0000" in html
    assert 'src="https://cdn.test/l.png"' in html


@pytest.mark.parametrize(
    "kwargs",
    [
        {"primary_colour": "red"},
        {"primary_colour": "#12345"},
        {"text_colour": "#fff;background:url(x)"},
        {"logo_url": "http://cdn.test/l.png"},
        {"name": "  "},
    ],
)
def test_branding_is_validated(kwargs: dict[str, str]) -> None:
    with pytest.raises(EmailConfigError):
        Branding(**{"name": "Acme", **kwargs})


# --- CTA URL --------------------------------------------------------------------------------------


def test_cta_url_uses_tenant_origin_and_encodes_campaign_id() -> None:
    url = cta_url_for(
        origins={"t1": "https://one.test", "default": "https://default.test"},
        tenant_id="t1",
        default_tenant="default",
        campaign_id="a b/c?d",
    )
    assert url == "https://one.test/m/a%20b%2Fc%3Fd?utm_source=email&utm_campaign=a%20b%2Fc%3Fd"


def test_legacy_campaign_without_tenant_uses_default_origin() -> None:
    url = cta_url_for(
        origins={"default": "https://d.test:8443"}, tenant_id=None, default_tenant="default", campaign_id="c"
    )
    assert url == "https://d.test:8443/m/c?utm_source=email&utm_campaign=c"


def test_missing_origin_is_a_config_error() -> None:
    with pytest.raises(EmailConfigError) as info:
        cta_url_for(
            origins={"default": "https://d.test"},
            tenant_id="other",
            default_tenant="default",
            campaign_id="c",
        )
    assert isinstance(info.value, BadRequest)
    assert "other" in info.value.message


@pytest.mark.parametrize(
    "origin",
    [
        "https://app.test/",
        "https://app.test/path",
        "https://app.test?x=1",
        "https://app.test#frag",
        "https://user:pw@app.test",
        "https://user@app.test",
        "http://app.test",
        "http://10.0.0.1",
        "ftp://app.test",
        "app.test",
        "https://",
        "https://app.test:99999",
        "https://app.test:abc",
        " https://app.test",
        "https://app .test",
    ],
)
def test_malformed_origins_are_refused(origin: str) -> None:
    with pytest.raises(EmailConfigError):
        cta_url_for(origins={"t": origin}, tenant_id="t", default_tenant="t", campaign_id="c")


@pytest.mark.parametrize("origin", ["http://127.0.0.1:3000", "http://localhost:5173", "http://[::1]:8080"])
def test_plain_http_is_allowed_for_loopback_only(origin: str) -> None:
    url = cta_url_for(origins={"t": origin}, tenant_id="t", default_tenant="t", campaign_id="c")
    assert url.startswith(origin + "/m/c?")


# --- branding lookup ------------------------------------------------------------------------------

TENANTS = {
    "default": {"name": "Default Co", "primaryColor": "#000000"},
    "t1": {
        "name": "Tenant One",
        "primaryColor": "#112233",
        "textColor": "#445566",
        "logoUrl": "https://t1.test/l.png",
    },
}


def test_branding_for_known_tenant() -> None:
    brand = branding_for(TENANTS, "t1", "default")
    assert brand == Branding(
        name="Tenant One", primary_colour="#112233", text_colour="#445566", logo_url="https://t1.test/l.png"
    )


def test_branding_for_legacy_and_unknown_tenants_falls_back() -> None:
    assert branding_for(TENANTS, None, "default").name == "Default Co"
    assert branding_for(TENANTS, "nobody", "default").name == "Default Co"
    assert branding_for({}, "nobody", "default") == DEFAULT_BRANDING


def test_malformed_tenant_branding_is_a_config_error() -> None:
    with pytest.raises(EmailConfigError):
        branding_for({"t1": {"name": "X", "primaryColor": "blue"}}, "t1", "default")
    with pytest.raises(EmailConfigError):
        branding_for({"t1": "not an object"}, "t1", "default")
