"""Routing announcements for minors to their guardians, against real Neo4j, the real
local queue, the reference inbox and the Postmark stand-in: both channels walked in pages of two, so
a guardian's children fall on different pages."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.engagement.events import record_event
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.email.web_view import render_web_view
from campaign_engine.delivery.frequency_cap import notify_recheck_query
from campaign_engine.domain.errors import Conflict, NotFound
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import TENANT_VIEW, Policy, policy_params
from campaign_engine.graph.rules.routing import ROUTED_GUARDIAN, routed_query
from campaign_engine.wiring import Queues, build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    StepClock,
    drain,
    inbox_records,
    inbox_server,
    local_queues,
    make_campaign,
)
from tests.support.email import EMAIL_COPY, add_email_members, email_settings, email_states
from tests.support.guardians import independent_routed_count
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000)

ADULT = "1980-05-17"
MINOR = "2015-09-01"
GUARDIAN_COPY = {
    "notification": {"title": "For families", "body": "Your child's class has news"},
    "email": {**EMAIL_COPY, "subject": "For families of grade 7", "title": "Families of grade 7"},
    "translations": {"es": {"notification": {"title": "Para familias", "body": "Noticias de la clase"}}},
}


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _settings(base: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(
        base, postmark.url, postmark.token, campaign_dispatch_page_size=2, campaign_email_page_size=2
    )


def _profiles(graph: Graph, ids: list[str], *, campaign: str, dob: str, member: bool, hook: str,
              **props: Any) -> None:  # fmt: skip
    add_email_members(graph, campaign, ids, dob=dob, member=member, notificationsWebhook=hook,
                      tenants=["default"], **props)  # fmt: skip


def _link(graph: Graph, guardian: str, child: str, consent: str = "granted") -> None:
    graph.run(
        "MATCH (g:Profile {profileId: $g}), (k:Profile {profileId: $k}) "
        "CREATE (g)-[:GUARDIAN_OF {consent: $consent, source: 'api'}]->(k)",
        g=guardian, k=child, consent=consent,
    )  # fmt: skip


def _fixture(graph: Graph, hook: str, *, minors: str = "guardians", campaign: str = "c1") -> None:
    """Members a1 (an adult, also k3's guardian) and minors k1..k6; guardians outside the audience:
    g1 (of k1 and k5, on different pages), g5 (k1's co-guardian, reads Spanish), g2 (of k2, consent
    revoked), g3 (of k4, a minor), g4 (of k6, no verified email); g6 of k7, a minor who is no member."""
    make_campaign(graph, campaign, channels=["notify", "email"], email=EMAIL_COPY, minors=minors,
                  guardianCopy=GUARDIAN_COPY)  # fmt: skip
    _profiles(graph, ["a1"], campaign=campaign, dob=ADULT, member=True, hook=hook)
    _profiles(graph, ["k1", "k2", "k3", "k4", "k5", "k6"], campaign=campaign, dob=MINOR, member=True,
              hook=hook, isManaged=True)  # fmt: skip
    _profiles(graph, ["g1", "g2"], campaign=campaign, dob=ADULT, member=False, hook=hook)
    _profiles(graph, ["g5"], campaign=campaign, dob=ADULT, member=False, hook=hook, locale="es-MX")
    _profiles(graph, ["g3", "k7"], campaign=campaign, dob=MINOR, member=False, hook=hook)
    _profiles(graph, ["g6"], campaign=campaign, dob=ADULT, member=False, hook=hook)
    _profiles(graph, ["g4"], campaign=campaign, dob=ADULT, member=False, hook=hook,
              emails=[{"value": "g4@example.com", "isPrimary": True, "isVerified": False}])  # fmt: skip
    for guardian, child, consent in [
        ("g1", "k1", "granted"), ("g1", "k5", "granted"), ("g5", "k1", "granted"), ("g2", "k2", "revoked"),
        ("g3", "k4", "granted"), ("g4", "k6", "granted"), ("a1", "k3", "granted"), ("g6", "k7", "granted"),
    ]:  # fmt: skip
        _link(graph, guardian, child, consent)


def _bare(value: Any) -> Any:
    """``value`` without its null fields (the API answers unset optional fields as null)."""
    if isinstance(value, dict):
        return {k: _bare(v) for k, v in value.items() if v is not None}
    return value


def _run(settings: Settings, graph: Graph, queues: Queues) -> None:
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()


def _preview(graph: Graph, campaign: str = "c1") -> Any:
    return preview_dispatch(graph, campaign_id=campaign, now=NOW, settings=DISPATCH_SETTINGS)


def test_minors_reach_their_consenting_eligible_guardians_once_on_both_channels(
    base_settings: Settings, postmark: PostmarkStandin, graph: Graph, queues: Queues, tmp_path: Path
) -> None:
    settings = _settings(base_settings, postmark)
    with inbox_server(tmp_path) as inbox:
        _fixture(graph, f"{inbox.url}/api/notifications/send")
        preview = _preview(graph)
        started = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token,
                           now=NOW, settings=DISPATCH_SETTINGS)  # fmt: skip
        _run(settings, graph, queues)

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


def test_a_page_size_never_changes_the_routed_set_or_its_token(graph: Graph) -> None:
    """The preview pages by 10,000 and the walks by 2 here: a guardian is routed by the page of their
    first child only, so any page size gives the same guardians once (the preview's own boundaries are
    exercised by the walk test above, which counts deliveries against it)."""
    _fixture(graph, "http://127.0.0.1:9/hook")
    rows = []
    for limit in (1, 2, 3, 100):
        cursor, guardians = "", []
        while True:
            row = graph.run(
                routed_query("guardian_preview", None), campaignId="c1", cursor=cursor, limit=limit,
                notify=True, email=True, **policy_params(NOW, 18),
            )  # fmt: skip
            page = graph.run(
                "MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {id: 'c1'}) "
                "WHERE p.profileId > $cursor RETURN p.profileId AS id ORDER BY id LIMIT $limit",
                cursor=cursor, limit=limit,
            )  # fmt: skip
            if not page:
                break
            for record in row:
                guardians += [("n", r[0]) for r in record["notifyRows"]]
                guardians += [("e", r[0]) for r in record["emailRows"]]
            cursor = page[-1]["id"]
        rows.append(sorted(guardians))
    assert all(r == rows[0] for r in rows), rows
    assert rows[0] == [("e", "g1"), ("e", "g5"), ("n", "g1"), ("n", "g4"), ("n", "g5")]


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
        _run(settings, graph, queues)
        reached = [pid for pid in ["a1", "g1", "g4", "g5", "k1"] if inbox_records(inbox.url, pid)]
    assert reached == ["a1"]
    assert [str(m["To"]) for m in postmark.accepted] == ["a1@example.com"]
    node = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.minors AS minors")[0]
    assert node["minors"] is None  # the walks read it: null is today's path
    # A batch without a guardian's job rechecks with the statement it always had.
    assert "GUARDIAN_OF" not in notify_recheck_query(False) and "{{" not in notify_recheck_query(False)


def test_the_routing_expands_per_excluded_member_and_never_scans_profiles(graph: Graph) -> None:
    """Planned on a graph shaped like a real one (profiles, links, members) and with no plan kept from
    another test's statistics: a full run once answered from such a kept plan with a label scan."""
    make_campaign(graph, "c1", minors="guardians")
    graph.run(
        "MATCH (c:Campaign {id: 'c1'}) UNWIND range(0, 499) AS i "
        "CREATE (g:Profile {profileId: 'g' + i, tenants: ['default'], dob: '1980-01-01'})"
        "-[:GUARDIAN_OF {consent: 'granted'}]->(k:Profile {profileId: 'k' + i, tenants: ['default'], "
        "dob: '2015-01-01'})-[:IN_CAMPAIGN_AUDIENCE {campaignId: 'c1', profileId: 'k' + i}]->(c)"
    )
    graph.run("CALL db.clearQueryCaches()")
    params = {"campaignId": "c1", "cursor": "", "limit": 10, "now": "2026-03-01T12:00:00.000000Z",
              "readyAt": {}, "fallbackReadyAt": "2000-01-01T00:00:00.000000Z", "staleBefore": None,
              "notify": True, "email": True, "claimId": "x", "dispatchId": "d",
              **policy_params(NOW, 18)}  # fmt: skip
    for name in ("guardian_page", "guardian_lock", "guardian_preview"):
        with graph.driver.session(database=graph.database) as session:
            plan = session.run("EXPLAIN " + routed_query(name, None), **params).consume().plan
        assert plan is not None
        ops = operators(plan)
        scans = [op for op in ops if op.startswith(("NodeByLabelScan", "AllNodesScan", "NodeIndexScan"))]
        assert not scans, (name, scans, ops)
        assert any("Expand" in op for op in ops), (name, ops)


def test_explain_shows_the_path_from_child_to_guardian_and_why_not(graph: Graph) -> None:
    _fixture(graph, "http://127.0.0.1:9/hook")
    kw: dict[str, Any] = {"campaign_id": "c1", "now": NOW, "adult_age": 18}
    g1 = explain_recipient(graph, profile_id="g1", **kw).model_dump(by_alias=True)
    assert g1["guardian"]["routedFrom"] == ["k1", "k5"]
    assert g1["guardian"]["channels"] == {"notify": True, "email": True}
    g4 = explain_recipient(graph, profile_id="g4", **kw).model_dump(by_alias=True)
    assert g4["guardian"]["channels"] == {"notify": True, "email": False}
    k1 = explain_recipient(graph, profile_id="k1", **kw).model_dump(by_alias=True)
    assert {r["guardianId"]: r["outcome"] for r in k1["routedTo"]} == {"g1": "routed", "g5": "routed"}
    k2 = explain_recipient(graph, profile_id="k2", **kw).model_dump(by_alias=True)
    assert k2["routedTo"] == [{"guardianId": "g2", "outcome": "consent_revoked"}]
    k4 = explain_recipient(graph, profile_id="k4", **kw).model_dump(by_alias=True)
    assert k4["routedTo"] == [{"guardianId": "g3", "outcome": "guardian_not_eligible"}]
    k3 = explain_recipient(graph, profile_id="k3", **kw).model_dump(by_alias=True)
    assert k3["routedTo"] == [{"guardianId": "a1", "outcome": "guardian_is_a_member"}]
    # The in-app question the lead's getMyCampaigns asks, as one fragment.
    rows = graph.run(
        f"MATCH (p:Profile), (c:Campaign {{id: 'c1'}}) {TENANT_VIEW} WITH p, c, view WHERE {ROUTED_GUARDIAN} "
        "RETURN p.profileId AS id ORDER BY id",
        **policy_params(NOW, 18),
    )
    assert [r["id"] for r in rows] == ["a1", "g1", "g4", "g5"]


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
        _run(settings, graph, queues)
        got = {pid: inbox_records(inbox.url, pid) for pid in ["g1", "g2", "k1", "k2"]}
    assert {pid: len(r) for pid, r in got.items()} == {"g1": 1, "g2": 1, "k1": 0, "k2": 0}
    assert (got["g1"][0]["metadata"]["audience"], got["g2"][0]["metadata"].get("audience")) == (
        "guardian",
        None,
    )


def test_minors_and_guardian_copy_are_validated_and_kept_by_get_update_and_duplicate(
    base_settings: Settings, graph: Graph
) -> None:
    admin = {"as_": ADMIN_ID, "admin": True}
    base = {"id": "fam", "name": "Families", "channels": ["notify"],
            "notification": {"title": "News", "body": "Body"}}  # fmt: skip
    bad = [
        {"minors": "parents"},
        {"guardianCopy": {}},  # some copy
        {"guardianCopy": {"notification": {"title": "x" * 66, "body": "b"}}},  # validated like content
        {
            "guardianCopy": {
                "notification": {"title": "t", "body": "b"},
                "translations": {"en": {"notification": {"title": "t", "body": "b"}}},
            }
        },  # repeats the base locale
        {
            "guardianCopy": {
                "notification": {"title": "t", "body": "b"},
                "translations": {"es": {"email": {**EMAIL_COPY}}},
            }
        },  # translates a channel it has no base copy for
    ]
    with api_client(base_settings, graph) as api:
        for extra in bad:
            assert error_code(api.mutate("campaigns.create", {**base, **extra}, **admin)) == "BAD_REQUEST", (
                extra
            )
        assert ok(api.query("campaigns.list", **admin))["records"] == []  # nothing half-written
        plain = ok(api.mutate("campaigns.create", base, **admin))
        assert (plain["minors"], plain.get("guardianCopy")) == ("exclude", None)
        ok(api.mutate("profiles.upsert", {"profiles": [{"profileId": "kid", "dob": MINOR}]}, **admin))
        kid = {"campaignId": "fam", "source": {"type": "profileIds", "profileIds": ["kid"]}}
        assert ok(api.mutate("campaigns.addAudience", kid, **admin))["added"] == 0  # the age policy
        copy = {
            "notification": GUARDIAN_COPY["notification"],
            "translations": {"es": GUARDIAN_COPY["translations"]["es"]},
        }
        current = ok(api.query("campaigns.get", {"campaignId": "fam"}, **admin))
        change = {"campaignId": "fam", "expectedUpdatedAt": current["updatedAt"], "minors": "guardians",
                  "guardianCopy": copy}  # fmt: skip
        updated = ok(api.mutate("campaigns.update", change, **admin))
        assert (updated["minors"], _bare(updated["guardianCopy"])) == ("guardians", copy)
        got = ok(api.query("campaigns.get", {"campaignId": "fam"}, **admin))
        assert (got["minors"], _bare(got["guardianCopy"])) == ("guardians", copy)
        # A minor is a member of a campaign that routes minors to guardians: whom they are replaced by.
        assert ok(api.mutate("campaigns.addAudience", kid, **admin))["added"] == 1
        members = ok(api.query("campaigns.getAudience", {"campaignId": "fam"}, **admin))["records"]
        assert [m["profileId"] for m in members] == ["kid"]
        dup = ok(api.mutate("campaigns.duplicate", {"campaignId": "fam", "id": "fam-2"}, **admin))
        assert (dup["minors"], _bare(dup["guardianCopy"])) == ("guardians", copy)
        before = ok(api.query("campaigns.previewDispatch", {"campaignId": "fam-2"}, **admin))["previewToken"]
        edited = ok(api.mutate("campaigns.update", {"campaignId": "fam-2", "guardianCopy": {
            "notification": {"title": "Other", "body": "Body"}}}, **admin))  # fmt: skip
        assert edited["guardianCopy"]["notification"]["title"] == "Other"
        after = ok(api.query("campaigns.previewDispatch", {"campaignId": "fam-2"}, **admin))["previewToken"]
        assert before != after  # the token digests the definition, guardian copy included
        cleared = ok(api.mutate("campaigns.update", {"campaignId": "fam-2", "guardianCopy": None}, **admin))
        assert cleared.get("guardianCopy") is None


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


def test_a_routed_guardian_sees_the_in_app_card_in_the_guardian_copy_and_records_engagement(
    graph: Graph,
) -> None:
    """getMyCampaigns shows an in-app campaign to its routed guardians (in the guardian copy's message,
    in their language) and to no one the routing leaves out; recordEvent accepts a routed guardian's."""
    copy = {
        "message": {"title": "For families"},
        "translations": {"es": {"message": {"title": "Para familias"}}},
    }
    make_campaign(graph, "app", channels=["inApp"], minors="guardians", guardianCopy=copy)
    _profiles(graph, ["a1"], campaign="app", dob=ADULT, member=True, hook="http://127.0.0.1:9/hook")
    _profiles(graph, ["k1", "k2", "k3", "k4"], campaign="app", dob=MINOR, member=True,
              hook="http://127.0.0.1:9/hook", isManaged=True)  # fmt: skip
    _profiles(graph, ["g1", "g2", "g6"], campaign="app", dob=ADULT, member=False, hook="http://127.0.0.1:9/h")
    _profiles(
        graph, ["g5"], campaign="app", dob=ADULT, member=False, hook="http://127.0.0.1:9/h", locale="es-MX"
    )
    _profiles(graph, ["g3", "k7"], campaign="app", dob=MINOR, member=False, hook="http://127.0.0.1:9/h")
    for guardian, child, consent in [
        ("g1", "k1", "granted"), ("g1", "k2", "granted"), ("g5", "k1", "granted"), ("g2", "k3", "revoked"),
        ("g3", "k4", "granted"), ("a1", "k4", "granted"), ("g6", "k7", "granted"),
    ]:  # fmt: skip
        _link(graph, guardian, child, consent)
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")

    def titles(profile_id: str) -> list[tuple[str, str]]:
        cards = my_campaigns(graph, profile_id=profile_id, include_tests=False, policy=policy).campaigns
        return [(card.campaign_id, card.message.title if card.message else "") for card in cards]

    assert titles("g1") == [("app", "For families")]  # one card for two children
    assert titles("g5") == [("app", "Para familias")]
    assert titles("a1") == [("app", "In app")]  # a member reads the campaign, guardian or not
    for nobody in ("g2", "g3", "g6", "k1"):  # revoked, a minor, a child who is no member, a child
        assert titles(nobody) == [], nobody
    recorded = record_event(graph, profile_id="g1", campaign_id="app", event="shown", action_id=None,
                            test_id=None, policy=policy)  # fmt: skip
    assert recorded.state is not None and recorded.state.shown_count == 1
    with pytest.raises(NotFound):
        record_event(graph, profile_id="g2", campaign_id="app", event="shown", action_id=None, test_id=None,
                     policy=policy)  # fmt: skip
