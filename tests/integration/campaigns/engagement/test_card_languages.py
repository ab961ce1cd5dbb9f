"""The in-app card's language is the campaign tenant's view of the reader over the shared locale
(docs/people.md): a person tenants alpha and beta share, whose beta view says ``es`` and whose shared
locale is ``ar``, reads beta's cards in Spanish (as a member, as a segment's match, as a routed
guardian, and in an admin's self-test snapshot) and alpha's in Arabic. Real Neo4j."""

from __future__ import annotations

import json
from typing import Any

from campaign_engine.campaigns.engagement.cards import my_campaigns
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy
from tests.support.delivery import NOW, make_campaign
from tests.support.email import add_email_members
from tests.support.tenant_facts import own_link, view

BOTH = ["alpha", "beta"]
TITLES = {"en": "News", "es": "Noticias", "ar": "أخبار"}


def _in_app(tenant: str, **extra: Any) -> dict[str, Any]:
    return {
        "tenant_id": tenant,
        "channels": ["inApp"],
        "locale": "en",
        "message": {"title": TITLES["en"]},
        "translations": {tag: {"message": {"title": TITLES[tag]}} for tag in ("es", "ar")},
        **extra,
    }


def _world(graph: Graph) -> None:
    """`both`: a member of alpha's `a-news` and beta's `b-news`, matched by beta's segment `b-seg` (a
    shared tag) and the granted guardian of beta's minor `kid` in `b-kids`, which routes to guardians."""
    make_campaign(graph, "a-news", **_in_app("alpha"))
    make_campaign(graph, "b-news", **_in_app("beta"))
    make_campaign(graph, "b-seg", **_in_app("beta", segment={"tag": "seg"}))
    make_campaign(graph, "b-kids", **_in_app("beta", minors="guardians"))
    add_email_members(graph, "a-news", ["both"], tenants=BOTH, locale="ar")
    add_email_members(graph, "b-news", ["both"])
    view(graph, "beta", "both", locale="es")
    graph.run(
        "MATCH (p:Profile {profileId: 'both'}) MERGE (t:Tag {slug: 'seg'})"
        " CREATE (p)-[:HAS_TAG {slug: 'seg', profileId: 'both'}]->(t)"
    )
    add_email_members(graph, "b-kids", ["kid"], dob="2015-09-01", isManaged=True, tenants=BOTH)
    own_link(graph, None, "both", "kid", "granted")


def test_each_tenants_cards_are_in_that_tenants_view_of_the_reader(graph: Graph) -> None:
    _world(graph)
    policy = Policy(now=NOW, adult_age=18, domain="campaigns.test")
    cards = my_campaigns(graph, profile_id="both", include_tests=False, policy=policy).campaigns
    assert {c.campaign_id: (c.locale, c.message.title) for c in cards} == {
        "a-news": ("ar", TITLES["ar"]),  # alpha wrote no view: the shared locale
        "b-news": ("es", TITLES["es"]),
        "b-seg": ("es", TITLES["es"]),
        "b-kids": ("es", TITLES["es"]),
    }

    # An admin's self-test snapshot is the card they would read: in the campaign tenant's view.
    for campaign_id, locale in (("b-news", "es"), ("a-news", "ar")):
        send_test_to_me(graph, admin_id="both", campaign_id=campaign_id, now=NOW)
        [row] = graph.run(
            "MATCH (:Profile {profileId: 'both'})-[t:CAMPAIGN_TEST]->(:Campaign {id: $c})"
            " RETURN t.snapshot AS s",
            c=campaign_id,
        )
        snapshot = json.loads(row["s"])
        assert (snapshot["locale"], snapshot["message"]["title"]) == (locale, TITLES[locale]), campaign_id
