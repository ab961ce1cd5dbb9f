"""Routing announcements for minors to their guardians, sent: against real Neo4j, the real local queue,
the reference inbox and the Postmark stand-in, both channels walked in pages of two, so a guardian's
children fall on different pages. Guardians reached once on both channels, the preview token over the
routed set, ``exclude`` reaching no guardian, a live segment's excluded matches routed, and a consent
revoked after the page holding the notification back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.email.web_view import render_web_view
from campaign_engine.delivery.frequency_cap import notify_recheck_query
from campaign_engine.domain.errors import Conflict
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy, policy_params
from campaign_engine.wiring import Queues, build_worker
from tests.support.delivery import (
    NOW,
    StepClock,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
    run_worker,
)
from tests.support.email import EMAIL_COPY, email_states
from tests.support.guardian_routing import (
    ADULT,
    DISPATCH_SETTINGS,
    MINOR,
    _fixture,
    _link,
    _preview,
    _profiles,
    _settings,
)
from tests.support.guardians import independent_routed_count
from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def test_minors_reach_their_consenting_eligible_guardians_once_on_both_channels(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    settings = _settings(base_settings, postmark)
    with inbox_server(tmp_path) as inbox:
        _fixture(graph, f"{inbox.url}/api/notifications/send")
        preview = _preview(graph)
        # g5 reads Spanish: the guardian copy's Spanish notification, but its base email (it has no
        # Spanish email), so the review counts them untranslated and the send accepts that.
        assert (preview.untranslated, preview.blocked_reason) == ({"es": 1}, "missing_translation")
        started = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token,
                           now=NOW, settings=DISPATCH_SETTINGS, accept_fallback=True)  # fmt: skip
        run_worker(settings, graph, queues)

        everyone = ["a1", "g1", "g2", "g3", "g4", "g5", "g6", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]
        notified = {pid: inbox_records(inbox.url, pid) for pid in everyone}
        assert {pid: len(r) for pid, r in notified.items() if r} == {"a1": 1, "g1": 1, "g4": 1, "g5": 1}
        member, guardian, spanish = notified["a1"][0], notified["g1"][0], notified["g5"][0]
        assert (member["title"], member["metadata"].get("audience")) == ("Big news", None)
        assert (guardian["title"], guardian["metadata"]["audience"]) == ("For families", "guardian")
        assert (spanish["title"], spanish["metadata"]["locale"]) == ("Para familias", "es")

        sent = Counter(str(m["To"]) for m in postmark.accepted)
        assert sent == Counter({"a1@example.com": 1, "g1@example.com": 1, "g5@example.com": 1})
        subjects = {str(m["To"]): m["Subject"] for m in postmark.accepted}
        assert subjects["g1@example.com"] == "For families of grade 7"
        assert subjects["a1@example.com"] == EMAIL_COPY["subject"]
        assert all(m["Metadata"].get("audience") == ("guardian" if m["To"] != "a1@example.com" else None)
                   for m in postmark.accepted)  # fmt: skip

    # The preview counted exactly what was delivered, and an independent count agrees.
    assert (preview.notification_recipient_count, preview.email_recipient_count) == (4, 3)
    assert (preview.guardian_notification_recipient_count, preview.guardian_email_recipient_count) == (3, 2)
    assert (preview.guardian_recipient_count, preview.recipient_count) == (3, 4)
    assert independent_routed_count(graph, "c1", adult_dob=policy_params(NOW, 18)["adultDob"]) == {
        "notify": 3,
        "email": 2,
    }
    # The web view of each email is what that reader got: the guardian copy for a guardian.
    rows = graph.run("MATCH (p:Profile) RETURN p.profileId AS id, p.campaignUnsubscribeId AS u")
    ids = {r["id"]: r["u"] for r in rows}
    guardian_view, member_view = (render_web_view(graph, settings, ids[pid], "c1") for pid in ("g1", "a1"))
    assert guardian_view is not None and "Families of grade 7" in guardian_view[0]
    assert member_view is not None and "Families of grade 7" not in member_view[0]
    states = email_states(graph, "c1")
    assert not any(pid.startswith("k") for pid in states)  # never a child, on any channel
    stats = get_stats(graph, campaign_id="c1", policy=Policy(now=NOW, adult_age=18, domain="example.com"))
    assert stats.guardians.model_dump() == {"notified": 3, "emailed": 2}
    assert stats.audience == preview.audience_count == 7  # a1 and k1..k6: the minors are members
    assert started.dispatch_ids


def test_the_preview_token_covers_the_routed_set_and_a_consent_change_voids_it(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues
) -> None:
    _fixture(graph, "http://127.0.0.1:9/hook")
    before = _preview(graph)
    graph.run("MATCH (:Profile {profileId: 'g1'})-[l:GUARDIAN_OF]->(:Profile {profileId: 'k1'}) "
              "SET l.consent = 'revoked'")  # fmt: skip
    after = _preview(graph)
    assert after.preview_token != before.preview_token
    assert (after.guardian_recipient_count, before.guardian_recipient_count) == (3, 3)  # k5 still routes g1
    with pytest.raises(Conflict):
        dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=before.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS)  # fmt: skip


def test_exclude_runs_todays_statements_and_reaches_no_guardian(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    settings = _settings(base_settings, postmark)
    with inbox_server(tmp_path) as inbox:
        _fixture(graph, f"{inbox.url}/api/notifications/send", minors="exclude")
        preview = _preview(graph)
        assert (preview.recipient_count, preview.guardian_recipient_count) == (1, 0)
        dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS)  # fmt: skip
        run_worker(settings, graph, queues)
        reached = [pid for pid in ["a1", "g1", "g4", "g5", "k1"] if inbox_records(inbox.url, pid)]
    assert reached == ["a1"]
    assert [str(m["To"]) for m in postmark.accepted] == ["a1@example.com"]
    node = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.minors AS minors")[0]
    assert node["minors"] is None  # the walks read it: null is today's path
    # A batch without a guardian's job rechecks with the statement it always had.
    assert "GUARDIAN_OF" not in notify_recheck_query(False) and "{{" not in notify_recheck_query(False)


def test_a_live_segment_routes_its_excluded_matches(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    """Members matched by a live segment route like static ones: k1 and k2 are tagged minors, never
    static members; g1 gets it for k1, g2 (tagged, an adult) for being matched, once, as a member."""
    settings = _settings(base_settings, postmark)
    with inbox_server(tmp_path) as inbox:
        hook = f"{inbox.url}/api/notifications/send"
        make_campaign(graph, "c1", minors="guardians", segment={"tag": "grade-7"})
        _profiles(graph, ["k1", "k2"], campaign="c1", dob=MINOR, member=False, hook=hook, isManaged=True)
        _profiles(graph, ["g1", "g2"], campaign="c1", dob=ADULT, member=False, hook=hook)
        graph.run(  # as upsert_profiles.cypher writes a tag
            "MERGE (t:Tag {slug: 'grade-7'}) WITH t MATCH (p:Profile) WHERE p.profileId IN ['k1', 'k2', 'g2']"
            " MERGE (p)-[:HAS_TAG {slug: t.slug, profileId: p.profileId}]->(t)"
        )
        _link(graph, "g1", "k1")
        _link(graph, "g2", "k2")
        preview = _preview(graph)
        assert (preview.notification_recipient_count, preview.guardian_recipient_count) == (2, 1)
        dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token, now=NOW,
                 settings=DISPATCH_SETTINGS)  # fmt: skip
        run_worker(settings, graph, queues)
        got = {pid: inbox_records(inbox.url, pid) for pid in ["g1", "g2", "k1", "k2"]}
    assert {pid: len(r) for pid, r in got.items()} == {"g1": 1, "g2": 1, "k1": 0, "k2": 0}
    assert (got["g1"][0]["metadata"]["audience"], got["g2"][0]["metadata"].get("audience")) == (
        "guardian",
        None,
    )


def test_a_consent_revoked_after_the_page_holds_the_guardians_notification_back(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    """The page routed g1 (for k1 and k5) and g5; both revoke before the POSTs: the recheck finds no
    granted link to the members their jobs name and sends nothing, as it holds back a member who left."""
    settings = _settings(base_settings, postmark).model_copy(update={"campaign_dispatch_page_size": 1000})
    with inbox_server(tmp_path) as inbox:
        _fixture(graph, f"{inbox.url}/api/notifications/send")
        graph.run("MATCH (c:Campaign {id: 'c1'}) SET c.channels = ['notify']")
        dispatch(
            graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW, settings=DISPATCH_SETTINGS
        )
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            while messages := queues.dispatch.receive(max_messages=10):
                worker.handle(queues.dispatch, messages)  # the pages only: deliveries wait in the queue
            graph.run("MATCH (g:Profile)-[l:GUARDIAN_OF]->() WHERE g.profileId IN ['g1', 'g5'] "
                      "SET l.consent = 'revoked'")  # fmt: skip
            drain(worker.handle, queues)
        finally:
            worker.close()
        reached = {pid: len(inbox_records(inbox.url, pid)) for pid in ["a1", "g1", "g4", "g5"]}
    assert reached == {"a1": 1, "g1": 0, "g4": 1, "g5": 0}
