"""A variant that overrides single fields of a channel's copy, on the real graph, worker, reference inbox
and Postmark stand-in: every path reads copy through the one merge (``domain/variant_copy.py``), so a
subject-line test changes the subject alone, over the base copy of each reader's language. The
assignment itself is ``test_ab_variants.py``; the merge on its own, ``tests/unit/test_variant_copy.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import assigned_variant
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok
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
ADMIN = {"as_": ADMIN_ID, "admin": True}


def _content(tag: str) -> dict[str, Any]:
    """Every channel's copy, marked with its language and arm so each path's answer names both."""
    return {
        "message": {"title": f"Card {tag}"},
        "notification": {"title": f"Push {tag}", "body": f"Body {tag}"},
        "email": {
            "subject": f"Subject {tag}",
            "title": f"Title {tag}",
            "body": f"Text {tag}",
            "ctaLabel": "Open",
        },
    }


SUBJECT_TEST: dict[str, Any] = {
    "id": "subject-test",  # the draw puts the admin in B, so the self-test reads the merge too
    "name": "Subject line",
    "channels": ["inApp", "notify", "email"],
    "locale": "en",
    **_content("en A"),
    "translations": {"es": _content("es A"), "fr": _content("fr A")},
    # B tests the subject line alone: in English and Spanish, not in French.
    "variants": [
        {"id": "A"},
        {"id": "B", "email": {"subject": "Subject en B"},
         "translations": {"es": {"email": {"subject": "Subject es B"}}}},
    ],
}  # fmt: skip
SUBJECT_READERS = {f"s{i:02d}": ("es", "fr", "en-GB")[i % 3] for i in range(18)}


def test_a_subject_only_variant_changes_only_the_subject_on_every_path(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    """A variant overriding ``email.subject`` alone is accepted, and every path merges it over the base
    copy of the reader's language: the email body (and the card, the push) stay the base ones; a French
    reader of B, whose language B does not override, reads the French subject."""
    standin.reset()
    settings = email_settings(delivery_settings(base_settings), standin.url, standin.token)
    queues = local_queues(tmp_path / "q.sqlite3")

    def arm(pid: str) -> str:
        chosen = assigned_variant(SUBJECT_TEST["variants"], campaign_id="subject-test", profile_id=pid)
        assert chosen is not None
        return chosen

    def lang(pid: str) -> str:
        return SUBJECT_READERS[pid][:2]

    def subject(pid: str) -> str:
        return f"Subject {lang(pid)} {'B' if arm(pid) == 'B' and lang(pid) != 'fr' else 'A'}"

    with inbox_server(tmp_path) as inbox, api_client(settings, graph) as api:
        ok(api.mutate("campaigns.create", SUBJECT_TEST, **ADMIN))
        hook = f"{inbox.url}/api/notifications/send"
        for pid, locale in SUBJECT_READERS.items():
            add_email_members(graph, "subject-test", [pid], locale=locale, notificationsWebhook=hook,
                              tenants=["default"])  # fmt: skip
        ok(api.mutate("campaigns.setStatus", {"campaignId": "subject-test", "status": "live"}, **ADMIN))
        assert {(arm(p), lang(p)) for p in SUBJECT_READERS} >= {("B", "en"), ("B", "es"), ("B", "fr")}
        assert arm(ADMIN_ID) == "B"

        shown_as = [("en", "B", "Subject en B"), ("es", "B", "Subject es B"), ("fr", "B", "Subject fr A"),
                    ("es", "A", "Subject es A")]  # fmt: skip
        for locale, variant, expected in shown_as:
            asked = {"campaignId": "subject-test", "locale": locale, "variantId": variant}
            shown = ok(api.query("campaigns.previewEmail", asked, **ADMIN))
            assert shown["subject"] == expected and f"Text {locale} A" in shown["text"], (locale, variant)

        preview = preview_dispatch(graph, campaign_id="subject-test", now=NOW, settings=DISPATCH_SETTINGS)
        dispatch(graph, queues.dispatch, campaign_id="subject-test", expected_token=preview.preview_token,
                 now=NOW, settings=DISPATCH_SETTINGS)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()

        emails = {m["To"].split("@")[0]: m for m in standin.accepted}
        assert set(emails) == set(SUBJECT_READERS)
        for pid in SUBJECT_READERS:
            base = f"{lang(pid)} A"
            assert emails[pid]["Subject"] == subject(pid), pid
            assert f"Text {base}" in emails[pid]["TextBody"] and f"Title {base}" in emails[pid]["HtmlBody"]
            view = re.search(
                r"https://[^/\s]+(/campaigns/view\?token=[A-Za-z0-9%._-]+)", emails[pid]["TextBody"]
            )
            assert view is not None, pid
            page = api.http.get(view.group(1)).text
            assert subject(pid) in page and f"Text {base}" in page, pid
            [record] = inbox_records(inbox.url, pid)
            assert (record["title"], record["metadata"]["variantId"]) == (f"Push {base}", arm(pid)), pid
            [card] = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
            assert (card["message"]["title"], card["variantId"]) == (f"Card {base}", arm(pid)), pid
            asked = {"campaignId": "subject-test", "profileId": pid}
            explained = ok(api.query("campaigns.explainRecipient", asked, **ADMIN))["variant"]
            overrides = {"email": ["subject"]} if subject(pid).endswith(" B") else {}
            assert explained["overrides"] == overrides, pid

        add_email_members(graph, "subject-test", [ADMIN_ID], member=False, locale="en", tenants=["default"])
        test = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "subject-test"}, **ADMIN))
        assert test["variantId"] == "B"
        [tested] = [m for m in standin.accepted if m["Subject"].startswith("[Test]")]
        assert tested["Subject"] == "[Test] Subject en B" and "Text en A" in tested["TextBody"]
