"""Routing announcements for minors to their guardians, read without a send, against real Neo4j: the
routed set and its token whatever the page size, the routing's plan (per excluded member, never a
profile scan), explain's path from child to guardian, the campaign's minors and guardian copy kept by
get, update and duplicate, the routed guardian's in-app card, and the review's language counts by the
guardian copy each guardian is served."""

from __future__ import annotations

import json
from typing import Any

import pytest

from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.engagement.events import record_event
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.config import Settings
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import TENANT_VIEW, Policy, policy_params
from campaign_engine.graph.rules.routing import ROUTED_GUARDIAN, routed_query
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok
from tests.support.delivery import (
    NOW,
    make_campaign,
)
from tests.support.email import EMAIL_COPY
from tests.support.guardian_routing import (
    ADULT,
    DISPATCH_SETTINGS,
    GUARDIAN_COPY,
    MINOR,
    _bare,
    _fixture,
    _link,
    _profiles,
)
from tests.support.plans import operators


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


def test_the_review_counts_a_routed_guardian_by_the_language_of_the_copy_they_are_served(
    graph: Graph,
) -> None:
    """A guardian's language counts by the guardian copy's translations, never the campaign's: a
    French guardian of a campaign translated into French, whose guardian copy is not, reads the base
    guardian copy and is counted untranslated; a Spanish one reads the Spanish notification but the
    base email, and is one untranslated reader for both channels. Guardians are also counted apart."""
    french = {"notification": {"title": "Grande nouvelle", "body": "Du nouveau"},
              "email": {**EMAIL_COPY, "subject": "Nouvelles"}}  # fmt: skip
    make_campaign(graph, "c1", channels=["notify", "email"], email=EMAIL_COPY, minors="guardians",
                  guardianCopy=GUARDIAN_COPY, translations={"fr": french})  # fmt: skip
    hook = "http://127.0.0.1:9/hook"
    _profiles(graph, ["a-fr"], campaign="c1", dob=ADULT, member=True, hook=hook, locale="fr-FR")
    _profiles(graph, ["k1"], campaign="c1", dob=MINOR, member=True, hook=hook, isManaged=True)
    _profiles(graph, ["g-fr"], campaign="c1", dob=ADULT, member=False, hook=hook, locale="fr-FR")
    _profiles(graph, ["g-es"], campaign="c1", dob=ADULT, member=False, hook=hook, locale="es-MX")
    _link(graph, "g-fr", "k1")
    _link(graph, "g-es", "k1")
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert preview.locale_counts == {"notify": {"en": 1, "es": 1, "fr": 1}, "email": {"en": 2, "fr": 1}}
    assert preview.guardian_locale_counts == {"notify": {"en": 1, "es": 1}, "email": {"en": 2}}
    assert preview.untranslated == preview.guardian_untranslated == {"es": 1, "fr": 1}
    assert preview.blocked_reason == "missing_translation"  # two of three readers get the base
    # The explanation names the language the guardian is served, as the review counts it.
    kw: dict[str, Any] = {"campaign_id": "c1", "now": NOW, "adult_age": 18}
    french = explain_recipient(graph, profile_id="g-fr", **kw).language
    assert french.served == {"notification": "en", "email": "en"} and "guardian copy" in french.why
    assert explain_recipient(graph, profile_id="a-fr", **kw).language.served["email"] == "fr"


READ = {"label": "Read it", "style": "primary", "action": {"type": "internalLink", "path": "/news"}}


def test_the_guardian_copy_labels_the_campaigns_buttons_and_the_guardians_card_says_so(
    base_settings: Settings, graph: Graph
) -> None:
    """The guardian copy's in-app message has the campaign's buttons with its own labels (and its
    translations' labels); another action, style or count is refused, and a routed guardian's card
    carries the guardian label on the campaign's action."""
    admin = {"as_": ADMIN_ID, "admin": True}
    base = {"id": "fam-app", "name": "Families", "channels": ["inApp"], "minors": "guardians",
            "message": {"title": "In app", "actions": [READ]}}  # fmt: skip

    def guardian(*actions: dict[str, Any]) -> dict[str, Any]:
        return {"guardianCopy": {"message": {"title": "For families", "actions": list(actions)}}}

    elsewhere = {**READ, "action": {"type": "internalLink", "path": "/other"}}
    with api_client(base_settings, graph) as api:
        for bad in (
            guardian(),
            guardian(elsewhere),
            guardian({**READ, "style": "secondary"}),
            guardian(READ, READ),
        ):
            refused = api.mutate("campaigns.create", {**base, **bad}, **admin)
            assert error_code(refused) == "BAD_REQUEST", bad
            assert "guardianCopy.message.actions" in refused.text
        labelled = guardian({**READ, "label": "See your child's class news"})
        labelled["guardianCopy"]["translations"] = {
            "es": {"message": {"title": "Para familias", "actions": [{**READ, "label": "Ver las noticias"}]}}
        }
        created = ok(api.mutate("campaigns.create", {**base, **labelled}, **admin))
        assert created["guardianCopy"]["message"]["actions"][0]["label"] == "See your child's class news"
    graph.run("MATCH (c:Campaign {id: 'fam-app'}) SET c.status = 'live'")
    _profiles(graph, ["kid"], campaign="fam-app", dob=MINOR, member=True, hook="http://127.0.0.1:9/h",
              isManaged=True)  # fmt: skip
    _profiles(graph, ["mum"], campaign="fam-app", dob=ADULT, member=False, hook="http://127.0.0.1:9/h")
    _profiles(graph, ["papa"], campaign="fam-app", dob=ADULT, member=False, hook="http://127.0.0.1:9/h",
              locale="es")  # fmt: skip
    for parent in ("mum", "papa"):
        _link(graph, parent, "kid", "granted")
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    for parent, label in (("mum", "See your child's class news"), ("papa", "Ver las noticias")):
        [card] = my_campaigns(graph, profile_id=parent, include_tests=False, policy=policy).campaigns
        assert card.message is not None
        [button] = card.message.model_dump(by_alias=True, mode="json")["actions"]
        assert (button["label"], button["action"], button["style"]) == (label, READ["action"], "primary")


def test_a_campaign_stored_before_the_button_rules_is_read_as_written_and_edited_to_them(
    base_settings: Settings, graph: Graph
) -> None:
    """Campaigns stored before a translation's and the guardian copy's buttons had to be the campaign's
    stay readable (admins, the card read, explain); the next edit must meet the rules."""
    admin = {"as_": ADMIN_ID, "admin": True}
    base = {"id": "older", "name": "Families", "channels": ["inApp"], "minors": "guardians",
            "message": {"title": "In app", "actions": [READ]}}  # fmt: skip
    with api_client(base_settings, graph) as api:
        ok(api.mutate("campaigns.create", base, **admin))
        graph.run(  # as an older release stored it: guardian and Spanish messages without the buttons
            "MATCH (c:Campaign {id: 'older'}) SET c.definition = $definition",
            definition=json.dumps({**{k: v for k, v in base.items() if k != "id"},
                                   "guardianCopy": {"message": {"title": "For families"}},
                                   "translations": {"es": {"message": {"title": "En la app"}}}}),
        )  # fmt: skip
        read = ok(api.query("campaigns.get", {"campaignId": "older"}, **admin))
        assert read["guardianCopy"]["message"]["title"] == "For families"
        assert [c["id"] for c in ok(api.query("campaigns.list", {}, **admin))["records"]] == ["older"]
        refused = api.mutate("campaigns.update", {"campaignId": "older", "name": "Families 2"}, **admin)
        assert error_code(refused) == "BAD_REQUEST" and "message.actions" in refused.text
    graph.run("MATCH (c:Campaign {id: 'older'}) SET c.status = 'live'")
    _profiles(graph, ["kid"], campaign="older", dob=MINOR, member=True, hook="http://127.0.0.1:9/h",
              isManaged=True)  # fmt: skip
    _profiles(graph, ["mum"], campaign="older", dob=ADULT, member=False, hook="http://127.0.0.1:9/h")
    _link(graph, "mum", "kid", "granted")
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    [card] = my_campaigns(graph, profile_id="mum", include_tests=False, policy=policy).campaigns
    assert card.message is not None and card.message.title == "For families"
