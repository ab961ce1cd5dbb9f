"""What the guardian-routing tests share: adults, minors and their guardian links written in the graph,
the guardians' own copy, settings walking both channels in pages of two, one run of the real worker,
and the routed preview."""

from __future__ import annotations

from typing import Any

from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.delivery import (
    NOW,
    make_campaign,
)
from tests.support.email import EMAIL_COPY, add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000)

ADULT = "1980-05-17"
MINOR = "2015-09-01"
GUARDIAN_COPY = {
    "notification": {"title": "For families", "body": "Your child's class has news"},
    "email": {**EMAIL_COPY, "subject": "For families of grade 7", "title": "Families of grade 7"},
    "translations": {"es": {"notification": {"title": "Para familias", "body": "Noticias de la clase"}}},
}


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


def _preview(graph: Graph, campaign: str = "c1") -> Any:
    return preview_dispatch(graph, campaign_id=campaign, now=NOW, settings=DISPATCH_SETTINGS)
