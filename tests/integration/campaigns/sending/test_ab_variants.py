"""A/B content variants on the real graph, worker, reference inbox and Postmark
stand-in: one assignment (``domain/ab_variants.py:assigned_variant``) decides every path's copy (the
inbox payload, the email, its web view, the in-app card, the self-test, explainRecipient, the export),
stays put across channels, re-dispatches and copy edits, and getStats counts each variant's recipients
as an independent count of what was delivered and done."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.email.compose import compose_email, email_variants_for
from campaign_engine.domain.ab_variants import assigned_variant, unit_point
from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
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

ADMIN = {"as_": ADMIN_ID, "admin": True}
NOW_TS = "2026-01-01T00:00:00.000000Z"


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


CAMPAIGN: dict[str, Any] = {
    "id": "ab",
    "name": "AB",
    "channels": ["inApp", "notify", "email"],
    "locale": "en",
    **_content("en A"),
    "translations": {"es": _content("es A")},
    # A is the control (the campaign's own copy); B overrides every channel in both languages.
    "variants": [
        {"id": "A"},
        {"id": "B", "weight": 1, **_content("en B"), "translations": {"es": _content("es B")}},
    ],
}
READERS = {f"r{i:02d}": ("es" if i % 3 == 0 else "en-GB") for i in range(16)}
READERS[ADMIN_ID] = "en"


def _arm(pid: str) -> str:
    arm = assigned_variant(CAMPAIGN["variants"], campaign_id="ab", profile_id=pid)
    assert arm is not None
    return arm


def _lang(pid: str) -> str:
    return "es" if READERS[pid] == "es" else "en"


def _issues(answer: Any) -> str:
    return " ".join(issue["message"] for issue in answer.json()["error"]["data"]["issues"])


def test_assignment_is_deterministic_weighted_and_independent_between_campaigns() -> None:
    variants = [{"id": "A", "weight": 1}, {"id": "B", "weight": 3}, {"id": "C"}]  # C: the default weight 1
    profiles = [f"profile-{i}" for i in range(20_000)]
    arms = [assigned_variant(variants, campaign_id="spring", profile_id=p) for p in profiles]
    assert arms == [assigned_variant(variants, campaign_id="spring", profile_id=p) for p in profiles]
    shares = {arm: n / len(profiles) for arm, n in Counter(arms).items()}
    # Expected 0.2 / 0.6 / 0.2; four standard deviations of a binomial share at n=20,000 is ~0.014.
    assert (
        abs(shares["A"] - 0.2) < 0.014 and abs(shares["B"] - 0.6) < 0.014 and abs(shares["C"] - 0.2) < 0.014
    )
    # Another campaign draws independently (same profiles, other arms), and so does another purpose
    # (a test wave's membership must not select one variant's readers).
    other = [assigned_variant(variants, campaign_id="autumn", profile_id=p) for p in profiles]
    assert 0.3 < sum(a != b for a, b in zip(arms, other, strict=True)) / len(profiles) < 0.7
    wave = [unit_point("spring", p, purpose="test-wave") < 0.2 for p in profiles]
    in_wave = Counter(arm for arm, w in zip(arms, wave, strict=True) if w)
    assert abs(in_wave["B"] / sum(in_wave.values()) - 0.6) < 0.04
    assert assigned_variant(None, campaign_id="spring", profile_id="p") is None


def test_variants_are_validated_like_content_and_kept_by_get_update_and_duplicate(
    base_settings: Settings, graph: Graph
) -> None:
    b_email = _content("en B")["email"]
    bad = [
        [{"id": "A"}],  # one variant
        [{"id": v} for v in "ABCDE"],  # five
        [{"id": "A"}, {"id": "a"}],  # ids repeat (case-insensitively)
        [{"id": "A"}, {"id": "B", "weight": 0}],  # weights are positive
        [{"id": "A"}, {"id": "no spaces"}],
        [{"id": "A"}, {"id": "B", "email": {**b_email, "heroImageUrl": "http://x.example/a.png"}}],
        [{"id": "A"}, {"id": "B", "email": {}}],  # overrides nothing of the email
        [{"id": "A"}, {"id": "B", "translations": {"fr": {"email": b_email}}}],  # no fr translation
        [{"id": "A"}, {"id": "B", "unknown": 1}],
    ]
    with api_client(base_settings, graph) as api:
        for variants in bad:
            answer = api.mutate("campaigns.create", {**CAMPAIGN, "variants": variants}, **ADMIN)
            assert error_code(answer) == "BAD_REQUEST", variants
        no_push = {k: v for k, v in CAMPAIGN.items() if k != "notification"} | {
            "channels": ["inApp", "email"]
        }
        no_push["translations"] = {"es": {k: v for k, v in _content("es A").items() if k != "notification"}}
        refused = api.mutate("campaigns.create", no_push, **ADMIN)  # B overrides a notification it lacks
        assert error_code(refused) == "BAD_REQUEST"
        assert "variants['B'].notification" in _issues(refused)
        assert ok(api.query("campaigns.list", **ADMIN))["records"] == []  # nothing half-written

        ok(api.mutate("campaigns.create", CAMPAIGN, **ADMIN))
        got = ok(api.query("campaigns.get", {"campaignId": "ab"}, **ADMIN))
        assert [v["id"] for v in got["variants"]] == ["A", "B"]
        assert got["variants"][1]["translations"]["es"]["email"]["subject"] == "Subject es B"
        # An edit that breaks a variant's rule is refused whole: dropping the es translation B overrides.
        broken = api.mutate("campaigns.update", {"campaignId": "ab", "translations": None}, **ADMIN)
        assert error_code(broken) == "BAD_REQUEST" and "variants['B'].translations" in _issues(broken)
        copy = ok(api.mutate("campaigns.duplicate", {"campaignId": "ab", "id": "ab-copy"}, **ADMIN))
        assert copy["variants"] == got["variants"]
        cleared = ok(api.mutate("campaigns.update", {"campaignId": "ab", "variants": None}, **ADMIN))
        assert cleared["variants"] is None
        stats = ok(api.query("campaigns.getStats", {"campaignId": "ab"}, **ADMIN))
        assert stats["variants"] == {}
        fresh = ok(api.query("campaigns.getStats", {"campaignId": "ab-copy"}, **ADMIN))["variants"]
        assert set(fresh) == {"A", "B"} and set(fresh["A"].values()) == {0}


def test_the_email_walk_renders_once_per_language_and_variant_never_per_recipient(graph: Graph) -> None:
    campaign = CampaignPublic.model_validate(
        {**CAMPAIGN, "status": "live", "tenantId": None, "createdAt": "x", "updatedAt": "x", "revision": 1}
    )
    content = email_variants_for(
        campaign, origins={"default": "https://app.example"}, tenants={}, default_tenant="default"
    )
    assert sorted(content.by_language) == [("en", "A"), ("en", "B"), ("es", "A"), ("es", "B")]
    tokens = UnsubscribeTokens("u" * 32)
    readers = sorted(READERS)
    messages = {
        pid: compose_email(
            content.for_reader(READERS[pid], content.variant_of(pid)), key=pid, to=f"{pid}@example.com",
            unsubscribe_id=f"u-{pid}", tokens=tokens, domain_name="campaigns.example",
        )
        for pid in readers
    }  # fmt: skip
    templates = {id(m.body_template) for m in messages.values()}
    assert len(templates) == len({(_lang(p), _arm(p)) for p in readers}) <= 4  # shared, not per reader
    for pid, message in messages.items():
        assert message.subject == f"Subject {_lang(pid)} {_arm(pid)}", pid


def test_every_path_serves_each_reader_the_same_variant_and_stats_count_it(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> None:
    standin.reset()
    settings = email_settings(delivery_settings(base_settings), standin.url, standin.token)
    queues = local_queues(tmp_path / "q.sqlite3")
    with inbox_server(tmp_path) as inbox, api_client(settings, graph) as api:
        ok(api.mutate("campaigns.create", CAMPAIGN, **ADMIN))
        hook = f"{inbox.url}/api/notifications/send"
        for pid, locale in READERS.items():
            add_email_members(
                graph, "ab", [pid], locale=locale, notificationsWebhook=hook, tenants=["default"]
            )
        ok(api.mutate("campaigns.setStatus", {"campaignId": "ab", "status": "live"}, **ADMIN))
        arms = {pid: _arm(pid) for pid in READERS}
        assert set(arms.values()) == {"A", "B"}  # both arms have readers (a fixed draw: deterministic)

        # A preview reviewed before the variants changed is void: the token covers them.
        stale = ok(api.query("campaigns.previewDispatch", {"campaignId": "ab"}, **ADMIN))["previewToken"]
        reweighted = [CAMPAIGN["variants"][0], {**CAMPAIGN["variants"][1], "weight": 2}]
        ok(api.mutate("campaigns.update", {"campaignId": "ab", "variants": reweighted}, **ADMIN))
        refused = api.mutate(
            "campaigns.dispatch", {"campaignId": "ab", "expectedPreviewToken": stale}, **ADMIN
        )
        assert error_code(refused) == "CONFLICT"
        ok(api.mutate("campaigns.update", {"campaignId": "ab", "variants": CAMPAIGN["variants"]}, **ADMIN))

        preview = preview_dispatch(graph, campaign_id="ab", now=NOW, settings=DISPATCH_SETTINGS)
        dispatch(graph, queues.dispatch, campaign_id="ab", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()

        emails = {m["To"].split("@")[0]: m for m in standin.accepted}
        assert set(emails) == set(READERS)
        for pid in READERS:
            tag = f"{_lang(pid)} {arms[pid]}"
            [record] = inbox_records(inbox.url, pid)
            assert (record["title"], record["metadata"]["variantId"]) == (f"Push {tag}", arms[pid]), pid
            assert emails[pid]["Subject"] == f"Subject {tag}", pid
            view = re.search(
                r"https://[^/\s]+(/campaigns/view\?token=[A-Za-z0-9%._-]+)", emails[pid]["TextBody"]
            )
            assert view is not None and f"Subject {tag}" in api.http.get(view.group(1)).text, pid
            [card] = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
            assert (card["message"]["title"], card["variantId"]) == (f"Card {tag}", arms[pid]), pid
            explained = ok(
                api.query("campaigns.explainRecipient", {"campaignId": "ab", "profileId": pid}, **ADMIN)
            )
            assert explained["variant"]["variantId"] == arms[pid] == explained["past"]["variantId"], pid
        why = ok(api.query("campaigns.explainRecipient", {"campaignId": "ab", "profileId": "r01"}, **ADMIN))
        assert why["variant"]["why"].startswith("the keyed hash of (campaign, profile) is ")
        assert [s["id"] for s in why["variant"]["shares"]] == ["A", "B"]

        # The self-test shows the admin's own arm on every channel; the preview renders any arm.
        test = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "ab"}, **ADMIN))
        assert test["variantId"] == arms[ADMIN_ID]
        mine = ok(api.query("campaigns.getMyCampaigns", **ADMIN))["campaigns"]
        assert [c["message"]["title"] for c in mine if c.get("testId")] == [f"Card en {arms[ADMIN_ID]}"]
        tested = [m for m in standin.accepted if m["Subject"].startswith("[Test]")]
        assert [m["Subject"] for m in tested] == [f"[Test] Subject en {arms[ADMIN_ID]}"]
        for arm in ("A", "B"):
            asked = {"campaignId": "ab", "locale": "es", "variantId": arm}
            shown = ok(api.query("campaigns.previewEmail", asked, **ADMIN))
            assert (shown["subject"], shown["variantId"]) == (f"Subject es {arm}", arm)
        first = ok(api.query("campaigns.previewEmail", {"campaignId": "ab"}, **ADMIN))
        assert first["variantId"] == "A"
        unknown = api.query("campaigns.previewEmail", {"campaignId": "ab", "variantId": "Z"}, **ADMIN)
        assert error_code(unknown) == "BAD_REQUEST"

        # In-app engagement, and feedback and email clicks set on the states (as feedback and the click
        # route do), for an independent count per arm.
        readers = sorted(READERS)
        saw, clicked = readers[::2], readers[::4]
        for pid in saw:
            ok(api.mutate("campaigns.recordEvent", {"campaignId": "ab", "event": "shown"}, as_=pid))
        for pid in clicked:
            ok(api.mutate("campaigns.recordEvent", {"campaignId": "ab", "event": "clicked"}, as_=pid))
        marks = {"bouncedAt": readers[1:3], "complainedAt": readers[3:4], "emailClickedAt": readers[4:9]}
        for prop, pids in marks.items():
            graph.run(f"MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {{id: 'ab'}}) "
                      f"WHERE p.profileId IN $ids SET s.{prop} = $at", ids=pids, at=NOW_TS)  # fmt: skip
        stats = ok(api.query("campaigns.getStats", {"campaignId": "ab"}, **ADMIN))

        def count(arm: str, pids: list[str]) -> int:
            return sum(arms[p] == arm for p in pids)

        expected = {
            arm: {"recipients": count(arm, readers), "notified": count(arm, readers),
                  "emailed": count(arm, readers), "shown": count(arm, saw), "clicked": count(arm, clicked),
                  "emailClicked": count(arm, marks["emailClickedAt"]),
                  "bounced": count(arm, marks["bouncedAt"]), "complained": count(arm, marks["complainedAt"]),
                  "unsubscribed": 0}
            for arm in ("A", "B")
        }  # fmt: skip
        assert stats["variants"] == expected
        assert sum(v["recipients"] for v in stats["variants"].values()) == stats["notified"] == len(READERS)

        export = api.http.get(
            "/exports/campaigns/ab/recipients.csv", headers=api.headers_for(ADMIN_ID, admin=True)
        )
        rows = list(csv.DictReader(io.StringIO(export.text)))
        assert {r["profileId"]: r["variantId"] for r in rows} == arms

        # Stable across re-dispatch and copy edits: B's copy changes, nobody changes arm, and a reader
        # added later gets the arm the hash gives them while the recorded ones stay.
        current = ok(api.query("campaigns.get", {"campaignId": "ab"}, **ADMIN))
        edited = [CAMPAIGN["variants"][0], {**CAMPAIGN["variants"][1], **_content("en B2"),
                                            "translations": {"es": _content("es B2")}}]  # fmt: skip
        ok(api.mutate("campaigns.update", {"campaignId": "ab", "variants": edited,
                                           "expectedUpdatedAt": current["updatedAt"]}, **ADMIN))  # fmt: skip
        add_email_members(graph, "ab", ["late"], notificationsWebhook=hook, tenants=["default"])
        # No address: only the notify outcome write can stamp its variant.
        add_email_members(
            graph, "ab", ["late-push"], emails=[], notificationsWebhook=hook, tenants=["default"]
        )
        preview = preview_dispatch(graph, campaign_id="ab", now=NOW, settings=DISPATCH_SETTINGS)
        dispatch(graph, queues.dispatch, campaign_id="ab", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        late = "B2" if _arm("late") == "B" else "A"
        assert inbox_records(inbox.url, "late")[0]["title"] == f"Push en {late}"
        for pid in READERS:
            assert len(inbox_records(inbox.url, pid)) == 1, pid  # not sent again
            [card] = ok(api.query("campaigns.getMyCampaigns", as_=pid))["campaigns"]
            assert card["variantId"] == arms[pid], pid
        states = graph.run("MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {id: 'ab'}) "
                           "RETURN p.profileId AS pid, s.variantId AS v, s.emailedAt AS emailed")  # fmt: skip
        recorded = {row["pid"]: row["v"] for row in states}
        assert sorted(row["pid"] for row in states if row["emailed"] is None) == ["late-push"]
        assert recorded == {**arms, "late": _arm("late"), "late-push": _arm("late-push")}
        assert [row for row in states if row["pid"] == "late-push"] == [
            {"pid": "late-push", "v": _arm("late-push"), "emailed": None}
        ]
