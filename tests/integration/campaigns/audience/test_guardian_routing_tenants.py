"""Routing to guardians for a campaign of tenant beta reads beta's links only (docs/people.md): per
pair (guardian, child) the link beta recorded, else the shared one, never alpha's. Real Neo4j, the
real local queue, the reference inbox and the Postmark stand-in; alpha writes through profiles.upsert."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.wiring import Queues, build_worker
from tests.support.api import api_client, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
)
from tests.support.email import EMAIL_COPY, ORIGINS, add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin
from tests.support.tenant_facts import own_link, view

ADULT, MINOR = "1980-05-17", "2015-09-01"
SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000)
GUARDIAN_COPY = {
    "notification": {"title": "For families", "body": "News"},
    "message": {"title": "For families"},
    "email": {**EMAIL_COPY, "subject": "For families"},
}
BOTH = ["alpha", "beta"]


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _family(graph: Graph, hook: str) -> None:
    """Beta's campaign `cb` holds the minor kid (alpha's too). Links, by who recorded them:
    mum: shared granted, beta revoked (alpha will grant); dad: alpha only (will be);
    gran: shared granted (alpha will revoke); uncle: shared revoked, beta granted;
    aunt: shared granted but a member of alpha only."""
    make_campaign(graph, "cb", channels=["notify", "email", "inApp"], email=EMAIL_COPY, minors="guardians",
                  guardianCopy=GUARDIAN_COPY, tenant_id="beta")  # fmt: skip
    add_email_members(graph, "cb", ["kid"], dob=MINOR, member=True, isManaged=True, tenants=BOTH,
                      notificationsWebhook=hook)  # fmt: skip
    for pid, tenants in [
        ("mum", BOTH),
        ("dad", BOTH),
        ("gran", BOTH),
        ("uncle", ["beta"]),
        ("aunt", ["alpha"]),
    ]:
        add_email_members(
            graph, "cb", [pid], dob=ADULT, member=False, tenants=tenants, notificationsWebhook=hook
        )
    for tenant, guardian, consent in [
        (None, "mum", "granted"), ("beta", "mum", "revoked"), (None, "gran", "granted"),
        (None, "uncle", "revoked"), ("beta", "uncle", "granted"), (None, "aunt", "granted"),
    ]:  # fmt: skip
        own_link(graph, tenant, guardian, "kid", consent)


def _alpha_writes(settings: Settings, graph: Graph) -> None:
    """An author of alpha grants mum and dad and revokes gran, through the real write path."""
    token = mint_token(settings, profile_id="alpha-author", scope="", tenant_id="alpha", roles=["author"])
    links = [("mum", "granted"), ("dad", "granted"), ("gran", "revoked")]
    body = {
        "profiles": [{"profileId": "kid", "guardians": [{"profileId": g, "consent": c} for g, c in links]}]
    }
    with api_client(settings, graph) as api:
        answer = api.http.post(
            "/trpc/profiles.upsert", json=body, headers={"authorization": f"Bearer {token}"}
        )
    assert ok(answer)["guardianLinks"] == 3


def _beta_answers(graph: Graph) -> dict[str, Any]:
    """What beta reads about its campaign: the preview's guardian counts and token, the explanations."""
    preview = preview_dispatch(graph, campaign_id="cb", now=NOW, settings=SETTINGS)
    kw: dict[str, Any] = {"campaign_id": "cb", "now": NOW, "adult_age": 18}
    explained = {
        pid: explain_recipient(graph, profile_id=pid, **kw).model_dump(by_alias=True)
        for pid in ("kid", "mum", "dad", "gran", "uncle")
    }
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    cards = {
        pid: [
            c.campaign_id
            for c in my_campaigns(graph, profile_id=pid, include_tests=False, policy=policy).campaigns
        ]
        for pid in ("mum", "dad", "gran", "uncle", "aunt")
    }
    counts = (preview.guardian_notification_recipient_count, preview.guardian_email_recipient_count)
    return {"counts": counts, "token": preview.preview_token, "explained": explained, "cards": cards}


def test_beta_routes_by_its_links_or_the_shared_ones_and_alphas_writes_change_nothing(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    origins = {**json.loads(ORIGINS), "beta": "https://beta.example"}
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_app_origins=origins)
    with inbox_server(tmp_path) as inbox:
        _family(graph, f"{inbox.url}/api/notifications/send")
        before = _beta_answers(graph)
        _alpha_writes(settings, graph)
        after = _beta_answers(graph)
        assert after == before

        assert before["counts"] == (2, 2)  # gran (shared) and uncle (beta's own)
        kid = before["explained"]["kid"]
        assert {r["guardianId"]: r["outcome"] for r in kid["routedTo"]} == {
            "mum": "consent_revoked",  # beta's revoked link wins over the shared grant
            "gran": "routed",
            "uncle": "routed",
        }  # dad (alpha's link only) and aunt (not of beta) are never named
        assert before["explained"]["gran"]["guardian"]["routedFrom"] == ["kid"]
        assert before["explained"]["mum"]["guardian"] is None
        assert before["explained"]["dad"]["guardian"] is None
        assert before["cards"] == {"mum": [], "dad": [], "gran": ["cb"], "uncle": ["cb"], "aunt": []}

        dispatch(graph, queues.dispatch, campaign_id="cb", expected_token=after["token"], now=NOW,
                 settings=SETTINGS)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        notified = {
            pid: len(inbox_records(inbox.url, pid)) for pid in ("kid", "mum", "dad", "gran", "uncle", "aunt")
        }
        assert notified == {"kid": 0, "mum": 0, "dad": 0, "gran": 1, "uncle": 1, "aunt": 0}
        emailed = Counter(str(m["To"]) for m in postmark.accepted)
        assert emailed == Counter({"gran@example.com": 1, "uncle@example.com": 1})


def test_a_guardian_who_left_beta_is_routed_nothing_and_leaving_alpha_changes_nothing(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    """Opt-outs add up per tenant for guardians as for members: gran left beta's announcements (beta's
    view), uncle left alpha's only; beta routes uncle alone, on both channels."""
    origins = {**json.loads(ORIGINS), "beta": "https://beta.example"}
    settings = email_settings(base_settings, postmark.url, postmark.token, campaign_app_origins=origins)
    with inbox_server(tmp_path) as inbox:
        _family(graph, f"{inbox.url}/api/notifications/send")
        view(graph, "beta", "gran", announcementPushOptOut=True, announcementEmailOptOut=True)
        view(graph, "alpha", "uncle", announcementPushOptOut=True, announcementEmailOptOut=True)
        preview = preview_dispatch(graph, campaign_id="cb", now=NOW, settings=SETTINGS)
        counts = (preview.guardian_notification_recipient_count, preview.guardian_email_recipient_count)
        assert counts == (1, 1)
        dispatch(graph, queues.dispatch, campaign_id="cb", expected_token=preview.preview_token, now=NOW,
                 settings=SETTINGS)  # fmt: skip
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        assert {pid: len(inbox_records(inbox.url, pid)) for pid in ("gran", "uncle")} == {
            "gran": 0,
            "uncle": 1,
        }
        assert [str(m["To"]) for m in postmark.accepted] == ["uncle@example.com"]
