"""The web view of every announcement email, on the real graph, worker and Postmark
stand-in: each captured email links to ``/campaigns/view``; following it shows that recipient's variant
(RTL for Arabic) with the unsubscribe pages' strict headers and no unsubscribe action; the footer is in
the recipient's language when the unsubscribe page speaks it; anything but a valid view token of an
existing campaign is the same "invalid link" page."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.locale import direction
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.footer import FOOTERS
from campaign_engine.unsubscribe.pages import page_headers
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from campaign_engine.wiring import build_email_self_tester, build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import NOW, StepClock, delivery_settings, drain, local_queues
from tests.support.email import UNSUBSCRIBE_SECRET, add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

COPY = {
    "en": ("Spring is here", "New features for everyone", "Spring news", "Open the app"),
    "es": ("Llegó la primavera", "Novedades para todos", "Noticias de primavera", "Abrir la app"),
    "ar": ("وصل الربيع", "ميزات جديدة للجميع", "أخبار الربيع", "افتح التطبيق"),
}
READERS = {"v-en-gb": "en-GB", "v-es-mx": "es-MX", "v-ar": "ar", "v-fr": "fr", "v-none": None}
EXPECTED = {"v-en-gb": "en", "v-es-mx": "es", "v-ar": "ar", "v-fr": "en", "v-none": "en"}
_VIEW_LINK = re.compile(r"https://[^/\s]+(/campaigns/view\?token=[A-Za-z0-9%._-]+)")
_UNSUBSCRIBE_LINK = re.compile(r"https://[^/\s]+/campaigns/unsubscribe\?token=([A-Za-z0-9%._-]+)")


def _email(lang: str) -> dict[str, str]:
    title, body, subject, cta = COPY[lang]
    return {"subject": subject, "title": title, "body": body, "ctaLabel": cta}


CAMPAIGN = {
    "id": "bloom",
    "name": "Bloom",
    "channels": ["email"],
    "locale": "en",
    "email": _email("en"),
    "translations": {"es": {"email": _email("es")}, "ar": {"email": _email("ar")}},
}


def _view_path(message: dict[str, Any]) -> str:
    """The web-view link of a captured message: the same in its text and html parts."""
    [text_link] = _VIEW_LINK.findall(message["TextBody"])
    assert [text_link.replace("&", "&amp;")] == _VIEW_LINK.findall(message["HtmlBody"])
    return str(text_link)


def _assert_strict_headers(headers: Any, language: str) -> None:
    expected = page_headers(language)
    policy = headers["content-security-policy"]
    for name, value in expected.items():
        if name != "Content-Security-Policy":
            assert headers[name] == value, name
    assert policy.startswith("default-src 'none'; style-src ")
    assert policy.endswith("; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    assert "script" not in policy and "*" not in policy


def _invalid(api: TrpcClient, path: str) -> str:
    answer = api.http.get(path, headers={"Accept-Language": "fr"})
    assert answer.status_code == 404, path
    assert answer.headers["content-security-policy"] == page_headers("fr")["Content-Security-Policy"]
    _assert_strict_headers(answer.headers, "fr")
    return str(answer.text)


def test_each_email_links_to_its_readers_web_view_and_nothing_else_opens_one(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    standin.reset()
    settings = email_settings(delivery_settings(base_settings), standin.url, standin.token)
    queues = local_queues(tmp_path / "q.sqlite3")
    with api_client(settings, graph) as api:
        ok(api.mutate("campaigns.create", CAMPAIGN, as_=ADMIN_ID, admin=True))
        for pid, locale in READERS.items():
            add_email_members(graph, "bloom", [pid], **({"locale": locale} if locale else {}))
        ok(
            api.mutate(
                "campaigns.setStatus", {"campaignId": "bloom", "status": "live"}, as_=ADMIN_ID, admin=True
            )
        )
        preview = preview_dispatch(graph, campaign_id="bloom", now=NOW, settings=DISPATCH_SETTINGS)
        dispatch(graph, queues.dispatch, campaign_id="bloom", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS, accept_fallback=True)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        emails = {m["To"].split("@")[0]: m for m in standin.accepted}
        assert set(emails) == set(READERS)

        for pid, lang in EXPECTED.items():
            message, footer = emails[pid], FOOTERS[lang]
            title, body, subject, cta = COPY[lang]
            # Item 3: the footer speaks the served language when the unsubscribe page does (fr reads
            # the base content, so its footer is English too).
            for part in (message["TextBody"], message["HtmlBody"]):
                assert footer.unsubscribe in part and footer.web_view in part, pid
            assert footer.received.split("{name}")[0] in message["TextBody"], pid
            answer = api.http.get(_view_path(message), headers={"Accept-Language": "en"})
            assert answer.status_code == 200, pid
            _assert_strict_headers(answer.headers, lang)
            assert answer.headers["x-robots-tag"] == "noindex, nofollow"
            page = answer.text
            assert f'<html lang="{lang}" dir="{direction(lang)}">' in page, pid
            assert title in page and body in page and subject in page and cta in page, pid
            # No unsubscribe action and no token of any kind in the page: a shared view link must not
            # unsubscribe anyone, and no Referer can carry a token (no-referrer besides).
            assert "/campaigns/unsubscribe" not in page and "token=" not in page, pid
            assert footer.web_view_note in page, pid
            policy = answer.headers["content-security-policy"]
            for value in re.findall(r'style="([^"]*)"', page):  # every inline style, and only those
                assert f"'{_sha256(value)}'" in policy, value
            assert policy.count("'sha256-") == 1 + len(set(re.findall(r'style="([^"]*)"', page)))

        arabic = api.http.get(_view_path(emails["v-ar"])).text
        assert 'dir="rtl"' in arabic and "text-align:right" in arabic and 'align="right"' in arabic
        assert 'align="right"' in emails["v-ar"]["HtmlBody"]  # the CTA at the start side, for Outlook too
        shown = ok(api.query("campaigns.previewEmail", {"campaignId": "bloom", "locale": "es"},
                             as_=ADMIN_ID, admin=True))  # fmt: skip
        assert "/campaigns/view?token=preview" in shown["text"] and FOOTERS["es"].web_view in shown["html"]
        assert FOOTERS["ar"].web_view_note in arabic

        # The view follows the profile's current locale (the served_locale rule over it).
        graph.run("MATCH (p:Profile {profileId: 'v-fr'}) SET p.locale = 'es-419'")
        assert '<html lang="es" dir="ltr">' in api.http.get(_view_path(emails["v-fr"])).text

        path = _view_path(emails["v-es-mx"])
        token = parse_qs(urlsplit(path).query)["token"][0]
        [unsubscribe_token] = _UNSUBSCRIBE_LINK.findall(emails["v-es-mx"]["TextBody"])
        invalid = _invalid(api, "/campaigns/view")
        tampered = token[:-5] + ("A" if token[-5] != "A" else "B") + token[-4:]
        forged_payload = "x" + token[1:]
        other_campaign = UnsubscribeTokens(UNSUBSCRIBE_SECRET).web_view.issue(
            _recipient_id(graph, "v-es-mx"), "no-such-campaign"
        )
        other_secret = UnsubscribeTokens(UNSUBSCRIBE_SECRET + "-x").web_view.issue(
            _recipient_id(graph, "v-es-mx"), "bloom"
        )
        for bad in (tampered, forged_payload, unsubscribe_token, other_campaign, other_secret, "", "a" * 600):
            assert _invalid(api, f"/campaigns/view?token={bad}") == invalid, bad
        assert "Ce lien" in invalid and "Bloom" not in invalid and COPY["es"][0] not in invalid
        # Nor does a view token unsubscribe: the unsubscribe page refuses it.
        refused = api.http.post(
            f"/campaigns/unsubscribe?token={token}", data={"List-Unsubscribe": "One-Click"}
        )
        assert refused.status_code == 400
        assert graph.run("MATCH (p:Profile {profileId: 'v-es-mx'}) RETURN p.announcementEmailOptOut AS o")[0][
            "o"
        ] in (None, False)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _recipient_id(graph: Graph, profile_id: str) -> str:
    rows = graph.run("MATCH (p:Profile {profileId: $id}) RETURN p.campaignUnsubscribeId AS u", id=profile_id)
    return str(rows[0]["u"])


def test_a_self_test_email_carries_a_working_web_view_link(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin
) -> None:
    standin.reset()
    settings = email_settings(base_settings, standin.url, standin.token)
    tester = build_email_self_tester(settings, graph, clock=StepClock())
    assert tester is not None
    with api_client(settings, graph) as api:
        ok(api.mutate("campaigns.create", CAMPAIGN, as_=ADMIN_ID, admin=True))  # a draft can be tested
        add_email_members(graph, "bloom", [ADMIN_ID], member=False, locale="ar-EG")
        try:
            send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="bloom", now=NOW, testers={"email": tester})
        finally:
            tester._provider.close()
        [message] = standin.accepted
        answer = api.http.get(_view_path(message))
        assert answer.status_code == 200
        _assert_strict_headers(answer.headers, "ar")
        assert '<html lang="ar" dir="rtl">' in answer.text and COPY["ar"][0] in answer.text
