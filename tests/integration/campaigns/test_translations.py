"""Every recipient in their own language, on the real graph, worker, reference inbox
and Postmark stand-in: one campaign with `en` base content and `es` and `ar` translations, recipients of
locales `en-GB`, `es-MX`, `es`, `ar`, `fr`, `zz` and none; the inbox payload, the email and the in-app
card of each are in the language the one rule (``served_locale``) picks, the Arabic email is RTL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.locale import direction, lookup
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.variants import served_locale
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    delivery_settings,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
)
from tests.support.email import add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

COPY = {
    "en": ("Spring is here", "New features for everyone", "Spring news", "Open the app"),
    "es": ("Llegó la primavera", "Novedades para todos", "Noticias de primavera", "Abrir la app"),
    "ar": ("وصل الربيع", "ميزات جديدة للجميع", "أخبار الربيع", "افتح التطبيق"),
}
READERS = {"r-en-gb": "en-GB", "r-es-mx": "es-MX", "r-es": "es", "r-ar": "ar", "r-fr": "fr", "r-zz": "zz",
           "r-none": None}  # fmt: skip
EXPECTED = {"r-en-gb": "en", "r-es-mx": "es", "r-es": "es", "r-ar": "ar", "r-fr": "en", "r-zz": "en",
            "r-none": "en"}  # fmt: skip


def _content(lang: str) -> dict[str, Any]:
    title, body, subject, cta = COPY[lang]
    return {
        "message": {"title": title, "body": body},
        "notification": {"title": title, "body": body},
        "email": {"subject": subject, "title": title, "body": body, "ctaLabel": cta},
    }


CAMPAIGN = {
    "id": "spring",
    "name": "Spring",
    "channels": ["inApp", "notify", "email"],
    "locale": "en",
    **_content("en"),
    "translations": {"es": _content("es"), "ar": _content("ar")},
}


def test_the_lookup_takes_the_most_specific_tag_and_falls_back_to_the_base() -> None:
    available = ["en", "es", "es-MX", "ar"]
    cases = {"es-MX": "es-MX", "ES-mx": "es-MX", "es-419": "es", "es": "es", "ar-EG": "ar", "pt_BR": None,
             "fr": None, "en-GB": "en", "es-MX-x-custom": "es-MX", "": None, None: None}  # fmt: skip
    for requested, served in cases.items():
        assert lookup(requested, available) == served, requested
    assert served_locale(available, "fr") == "en"  # no match: the base, listed first
    assert [direction(t) for t in ("ar", "he-IL", "fa", "ur", "az-Arab", "en", "es-MX", "ks-Deva")] == [
        "rtl", "rtl", "rtl", "rtl", "rtl", "ltr", "ltr", "ltr"
    ]  # fmt: skip


def test_a_channel_a_translation_leaves_out_falls_back_like_a_missing_one() -> None:
    es_mx = {"notification": {"title": "¡Primavera!", "body": "Para México"}}
    definition = CampaignCreate.model_validate(
        {**CAMPAIGN, "translations": {**CAMPAIGN["translations"], "es-MX": es_mx}}
    )
    assert definition.variant("notification", "es-MX")[0] == "es-MX"
    assert definition.variant("email", "es-MX")[0] == "es"  # es-MX has no email: the next tag that has one
    assert definition.variant("message", "es-mx")[1].title == "Llegó la primavera"


def test_every_channel_serves_each_reader_their_language(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    standin.reset()
    settings = email_settings(delivery_settings(base_settings), standin.url, standin.token)
    queues = local_queues(tmp_path / "q.sqlite3")
    with inbox_server(tmp_path) as inbox, api_client(settings, graph) as api:
        ok(api.mutate("campaigns.create", CAMPAIGN, as_=ADMIN_ID, admin=True))
        for pid, locale in READERS.items():
            add_email_members(graph, "spring", [pid], webhook=f"{inbox.url}/api/notifications/send")
            if locale is not None:
                graph.run("MATCH (p:Profile {profileId: $id}) SET p.locale = $locale", id=pid, locale=locale)
            hook = f"{inbox.url}/api/notifications/send"
            graph.run("MATCH (p:Profile {profileId: $id}) SET p.notificationsWebhook = $url, "
                      "p.tenants = ['default']", id=pid, url=hook)  # fmt: skip
        ok(
            api.mutate(
                "campaigns.setStatus", {"campaignId": "spring", "status": "live"}, as_=ADMIN_ID, admin=True
            )
        )
        preview = preview_dispatch(graph, campaign_id="spring", now=NOW, settings=DISPATCH_SETTINGS)
        # The review knows the languages: each channel's served variants, and who falls back to the base.
        served = {"en": 4, "es": 2, "ar": 1}
        assert preview.locale_counts == {"notify": served, "email": served}
        assert preview.untranslated == {"fr": 1, "zz": 1}  # 2 of 7: past the 5% the guard allows
        assert preview.blocked_reason == "missing_translation"
        with pytest.raises(BadRequest, match="acceptFallback"):
            dispatch(graph, queues.dispatch, campaign_id="spring", expected_token=preview.preview_token,
                     now=NOW, settings=DISPATCH_SETTINGS)  # fmt: skip
        dispatch(graph, queues.dispatch, campaign_id="spring", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS, accept_fallback=True)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()

        emails = {m["To"].split("@")[0]: m for m in standin.accepted}
        for pid, lang in EXPECTED.items():
            title, _, subject, cta = COPY[lang]
            [record] = inbox_records(inbox.url, pid)
            assert (record["title"], record["metadata"]["locale"]) == (title, lang), pid
            message = emails[pid]
            assert message["Subject"] == subject, pid
            assert f'<html lang="{lang}" dir="{direction(lang)}">' in message["HtmlBody"], pid
            assert cta in message["HtmlBody"] and title in message["TextBody"], pid
            [card] = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
            assert (card["message"]["title"], card["locale"]) == (title, lang), pid
            explained = ok(api.query("campaigns.explainRecipient", {"campaignId": "spring", "profileId": pid},
                                     as_=ADMIN_ID, admin=True))["language"]  # fmt: skip
            assert explained["locale"] == READERS[pid]
            assert explained["served"] == {"message": lang, "notification": lang, "email": lang}, pid
        why = {
            pid: ok(api.query("campaigns.explainRecipient", {"campaignId": "spring", "profileId": pid},
                              as_=ADMIN_ID, admin=True))["language"]["why"]
            for pid in ("r-es-mx", "r-fr", "r-none")
        }  # fmt: skip
        assert why == {
            "r-es-mx": "es-MX is served es (RFC 4647 lookup: the most specific tag it has)",
            "r-fr": "no translation matches fr: the base content (en)",
            "r-none": "the profile has no locale: the base content (en)",
        }
        assert 'dir="rtl"' in emails["r-ar"]["HtmlBody"] and "text-align:right" in emails["r-ar"]["HtmlBody"]

        shown = ok(api.query("campaigns.previewEmail", {"campaignId": "spring", "locale": "ar-EG"},
                             as_=ADMIN_ID, admin=True))  # fmt: skip
        assert shown["locale"] == "ar" and shown["subject"] == COPY["ar"][2]
        assert '<html lang="ar" dir="rtl">' in shown["html"]
        base = ok(api.query("campaigns.previewEmail", {"campaignId": "spring"}, as_=ADMIN_ID, admin=True))
        assert base["locale"] == "en" and '<html lang="en" dir="ltr">' in base["html"]


def test_translations_are_validated_like_the_base_content(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        es = _content("es")
        bad = [
            {"translations": {"spanish!": es}},  # not a language tag
            {"translations": {"es": es, "ES": es}},  # the same language twice
            {"translations": {"EN": es}},  # the base language again
            {"translations": {"es": {}}},  # no content at all
            {"translations": {"es": {"email": {**es["email"], "heroImageUrl": "http://x.example/a.png"}}}},
            {"translations": {"es": {"notification": {"title": "x" * 66, "body": "y"}}}},
            {"locale": "not a tag"},
        ]
        for change in bad:
            answer = api.mutate("campaigns.create", {**CAMPAIGN, **change}, as_=ADMIN_ID, admin=True)
            assert error_code(answer) == "BAD_REQUEST", change
        assert ok(api.query("campaigns.list", as_=ADMIN_ID, admin=True))["records"] == []

        ok(api.mutate("campaigns.create", CAMPAIGN, as_=ADMIN_ID, admin=True))
        got = ok(api.query("campaigns.get", {"campaignId": "spring"}, as_=ADMIN_ID, admin=True))
        assert got["locale"] == "en" and sorted(got["translations"]) == ["ar", "es"]
        assert got["translations"]["ar"]["email"]["subject"] == COPY["ar"][2]
        patched = ok(api.mutate("campaigns.update", {"campaignId": "spring", "translations": None},
                                as_=ADMIN_ID, admin=True))  # fmt: skip
        assert patched["translations"] is None


def test_duplicate_copies_the_definition_never_the_audience_state_or_dispatches(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    with api_client(base_settings, graph) as api:
        admin = {"as_": ADMIN_ID, "admin": True}
        ok(api.mutate("campaigns.create", CAMPAIGN, **admin))
        add_email_members(graph, "spring", ["m1", "m2"])
        ok(api.mutate("campaigns.setStatus", {"campaignId": "spring", "status": "live"}, **admin))
        ok(api.mutate("campaigns.recordEvent", {"campaignId": "spring", "event": "shown"}, as_="m1"))
        queues = local_queues(tmp_path / "q.sqlite3")
        dispatch(
            graph,
            queues.dispatch,
            campaign_id="spring",
            expected_token=None,
            now=NOW,
            settings=DISPATCH_SETTINGS,
        )

        named = {"campaignId": "spring", "id": "autumn", "name": "Autumn"}
        copy = ok(api.mutate("campaigns.duplicate", named, **admin))
        assert (copy["id"], copy["name"], copy["status"], copy["revision"]) == (
            "autumn",
            "Autumn",
            "draft",
            1,
        )
        original = ok(api.query("campaigns.get", {"campaignId": "spring"}, **admin))
        kept = ("channels", "message", "notification", "email", "locale", "translations", "excludeMinors")
        assert {k: copy[k] for k in kept} == {k: original[k] for k in kept}
        audience = ok(api.query("campaigns.getAudience", {"campaignId": "autumn"}, **admin))
        assert audience["records"] == []
        stats = ok(api.query("campaigns.getStats", {"campaignId": "autumn"}, **admin))
        assert stats["shown"] == 0 and stats["audience"] == 0
        assert ok(api.query("campaigns.listDispatches", {"campaignId": "autumn"}, **admin)) == []
        assert (
            len(ok(api.query("campaigns.listDispatches", {"campaignId": "spring"}, **admin))) == 2
        )  # notify, email

        again = api.mutate("campaigns.duplicate", {"campaignId": "spring", "id": "autumn"}, **admin)
        assert error_code(again) == "CONFLICT"
        missing = api.mutate("campaigns.duplicate", {"campaignId": "nope", "id": "winter"}, **admin)
        assert error_code(missing) == "NOT_FOUND"


def test_the_preview_token_covers_each_readers_variant(base_settings: Settings, graph: Graph) -> None:
    """A translation added or changed, or a reader whose locale now picks another variant, voids the
    reviewed preview; a campaign without translations keeps the tokens it always had."""
    with api_client(base_settings, graph) as api:
        admin = {"as_": ADMIN_ID, "admin": True}
        ok(api.mutate("campaigns.create", {**CAMPAIGN, "channels": ["inApp", "notify"]}, **admin))
        add_email_members(graph, "spring", ["a", "b"])
        graph.run("MATCH (p:Profile) WHERE p.profileId IN ['a', 'b'] SET p.locale = 'es', "
                  "p.notificationsWebhook = 'https://inbox.example/hook'")  # fmt: skip
        ok(api.mutate("campaigns.setStatus", {"campaignId": "spring", "status": "live"}, **admin))

        def review() -> dict[str, Any]:
            return dict(ok(api.query("campaigns.previewDispatch", {"campaignId": "spring"}, **admin)))

        first = review()
        assert first["localeCounts"] == {"notify": {"es": 2}} and first["blockedReason"] is None
        assert review()["previewToken"] == first["previewToken"]  # nothing changed: the same token
        graph.run("MATCH (p:Profile {profileId: 'b'}) SET p.locale = 'ar'")
        moved = review()
        assert moved["previewToken"] != first["previewToken"] and moved["localeCounts"]["notify"] == {
            "ar": 1, "es": 1
        }  # fmt: skip
        current = ok(api.query("campaigns.get", {"campaignId": "spring"}, **admin))
        es = {**CAMPAIGN["translations"]["es"], "notification": {"title": "¡Primavera!", "body": "Nuevo"}}
        ok(
            api.mutate(
                "campaigns.update",
                {
                    "campaignId": "spring",
                    "expectedUpdatedAt": current["updatedAt"],
                    "translations": {**CAMPAIGN["translations"], "es": es},
                },
                **admin,
            )
        )
        assert review()["previewToken"] != moved["previewToken"]
        stale = api.mutate(
            "campaigns.dispatch",
            {"campaignId": "spring", "expectedPreviewToken": moved["previewToken"]},
            **admin,
        )
        assert error_code(stale) == "CONFLICT"


def test_a_scheduled_send_keeps_its_accepted_fallback_until_it_fires(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    with api_client(base_settings, graph, clock=lambda: NOW) as api:
        admin = {"as_": ADMIN_ID, "admin": True}
        ok(api.mutate("campaigns.create", {**CAMPAIGN, "channels": ["inApp", "notify"]}, **admin))
        add_email_members(graph, "spring", ["fr1", "es1"])
        graph.run(
            "MATCH (p:Profile) WHERE p.profileId IN ['fr1', 'es1'] "
            "SET p.locale = substring(p.profileId, 0, 2), p.notificationsWebhook = 'https://i.example/h'"
        )
        ok(api.mutate("campaigns.setStatus", {"campaignId": "spring", "status": "live"}, **admin))
        token = ok(api.query("campaigns.previewDispatch", {"campaignId": "spring"}, **admin))["previewToken"]
        send_at = format_ts(NOW + timedelta(hours=1))
        schedule = {"campaignId": "spring", "sendAt": send_at, "expectedPreviewToken": token}
        refused = api.mutate("campaigns.scheduleDispatch", schedule, **admin)
        assert error_code(refused) == "BAD_REQUEST" and "acceptFallback" in refused.json()["error"]["message"]
        ok(api.mutate("campaigns.scheduleDispatch", {**schedule, "acceptFallback": True}, **admin))
    queues = local_queues(tmp_path / "q.sqlite3")
    fired = fire_due(graph, queues.dispatch, now=NOW + timedelta(hours=1), settings=DISPATCH_SETTINGS)
    assert list(fired.values()) == ["sending"]


def test_in_app_action_labels_are_translated_and_only_their_labels(
    base_settings: Settings, graph: Graph
) -> None:
    """A translation's in-app buttons are the base message's, in order, with their labels translated:
    a different number of buttons or another target is refused naming the position, and the Spanish
    reader's card carries the Spanish label on the base button's target."""
    opens = {"type": "externalLink", "url": "https://example.com/spring"}
    base = {"title": "Spring", "actions": [{"label": "Read more", "action": opens}, {"label": "Later",
            "action": {"type": "dismiss"}, "style": "dismiss"}]}  # fmt: skip
    spanish = {"title": "Primavera", "actions": [{"label": "Leer más", "action": opens}, {"label": "Luego",
               "action": {"type": "dismiss"}, "style": "dismiss"}]}  # fmt: skip
    campaign = {"id": "buttons", "name": "Buttons", "channels": ["inApp"], "message": base,
                "translations": {"es": {"message": spanish}}}  # fmt: skip
    with api_client(base_settings, graph) as api:
        elsewhere = {**spanish["actions"][0], "action": {"type": "externalLink", "url": "https://evil.test/"}}
        for actions, where in [
            (spanish["actions"][:1], "translations['es'].message.actions"),  # a button missing
            ([elsewhere, spanish["actions"][1]], "translations['es'].message.actions[0]"),  # another target
        ]:
            bad = {**campaign, "translations": {"es": {"message": {**spanish, "actions": actions}}}}
            answer = api.mutate("campaigns.create", bad, as_=ADMIN_ID, admin=True)
            assert error_code(answer) == "BAD_REQUEST" and where in answer.text, actions
        ok(api.mutate("campaigns.create", campaign, as_=ADMIN_ID, admin=True))
        ok(api.mutate("profiles.upsert", {"profiles": [{"profileId": "r-es", "locale": "es-MX"}]},
                      as_=ADMIN_ID, admin=True))  # fmt: skip
        source = {"type": "profileIds", "profileIds": ["r-es"]}
        ok(api.mutate("campaigns.addAudience", {"campaignId": "buttons", "source": source}, as_=ADMIN_ID,
                      admin=True))  # fmt: skip
        ok(api.mutate("campaigns.setStatus", {"campaignId": "buttons", "status": "live"}, as_=ADMIN_ID,
                      admin=True))  # fmt: skip
        [card] = ok(api.query("campaigns.getMyCampaigns", as_="r-es"))["campaigns"]
    labels = [(a["label"], a["action"]["type"]) for a in card["message"]["actions"]]
    assert labels == [("Leer más", "externalLink"), ("Luego", "dismiss")]
    assert card["message"]["actions"][0]["action"]["url"] == "https://example.com/spring"
