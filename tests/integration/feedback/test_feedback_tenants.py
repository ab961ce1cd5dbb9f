"""Feedback meets shared people (docs/people.md): an address a tenant wrote into its own view of a person
is that person's as much as a shared one, so a complaint about it opts them out and ``suppressions.get``
and ``.list`` show it to that tenant; and a spam complaint about tenant alpha's email suppresses the
address for every tenant (one provider account, one sending reputation) while the person's opt-out it
records is alpha's only. Real Neo4j, the real app for the reads.

``parent``: held by alpha and beta; shared address ``parent@shared.test``, alpha's own list
``parent@alpha.test`` (alpha's campaign emailed it as provider message ``msg-alpha``), beta none of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.config import Settings
from campaign_engine.feedback.events import AddressEvent, Feedback
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import NOW
from tests.support.email import add_email_members, make_email_campaign
from tests.support.tenant_views import write_view

SHARED, ALPHAS = "parent@shared.test", "parent@alpha.test"


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=lambda: NOW) as client:
        yield client


def _seed(graph: Graph, *, sent: bool = True) -> None:
    make_email_campaign(graph, "c-alpha", tenant_id="alpha")
    make_email_campaign(graph, "c-beta", tenant_id="beta")
    shared = [{"value": SHARED, "isPrimary": True, "isVerified": True}]
    add_email_members(graph, "c-alpha", ["parent"], emails=shared, tenants=["alpha", "beta"])
    add_email_members(graph, "c-beta", ["parent"], emails=[])
    write_view(graph, "alpha", "parent", emails=[ALPHAS])
    if sent:
        graph.run(
            "MATCH (p:Profile {profileId: 'parent'}), (c:Campaign {id: 'c-alpha'})"
            " CREATE (p)-[:CAMPAIGN_STATE {emailProviderMessageId: 'msg-alpha', emailedAt: 'x'}]->(c)"
        )


def _complaint(graph: Graph, address: str, *message_ids: str, action: Any = "complaint") -> None:
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=lambda: NOW)
    event = AddressEvent(address=address, action=action, detail="abuse report")
    store.apply(Feedback(f"{action}:{address}:{message_ids}", "postmark", (event,), message_ids=message_ids))


def _opt_outs(graph: Graph) -> dict[str, bool]:
    """The person's deployment-wide opt-out and each tenant view's."""
    [row] = graph.run(
        "MATCH (p:Profile {profileId: 'parent'}) OPTIONAL MATCH (p)-[:HAS_VIEW]->(v:TenantView)"
        " RETURN coalesce(p.announcementEmailOptOut, false) AS wide,"
        " collect([v.tenantId, coalesce(v.announcementEmailOptOut, false)]) AS views"
    )
    return {"every tenant": row["wide"], **{t: out for t, out in row["views"] if t is not None}}


def _email_blocked_by(graph: Graph, campaign_id: str) -> str | None:
    told = explain_recipient(graph, campaign_id=campaign_id, profile_id="parent", now=NOW, adult_age=18)
    [email] = [c for c in told.channels if c.channel == "email"]
    return email.blocked_by


def test_a_complaint_on_an_address_only_a_view_holds_finds_its_person(graph: Graph) -> None:
    """No message id names a send (a provider's report without one): the address alone finds the person
    through alpha's view, and with no tenant known the opt-out is from every tenant."""
    _seed(graph, sent=False)
    _complaint(graph, ALPHAS)
    assert _opt_outs(graph) == {"every tenant": True, "alpha": False}


def test_a_complaint_about_alphas_email_suppresses_for_all_and_opts_out_of_alpha_only(graph: Graph) -> None:
    _seed(graph)
    _complaint(graph, ALPHAS, "msg-alpha")
    # The address is suppressed for every tenant: one provider account, one sending reputation.
    [suppressed] = graph.run("MATCH (s:EmailSuppression) RETURN s.address AS a, s.reason AS r")
    assert (suppressed["a"], suppressed["r"]) == (ALPHAS, "spam_complaint")
    # The opt-out it records names alpha, whose email drew it: beta still emails the shared address.
    assert _opt_outs(graph) == {"every tenant": False, "alpha": True}
    assert _email_blocked_by(graph, "c-alpha") == "opted_out"
    assert _email_blocked_by(graph, "c-beta") is None


def test_a_complaint_opts_out_only_where_the_address_is_the_persons_for_that_tenant(graph: Graph) -> None:
    """The same complaint about alpha's email reaches a second person whose shared address it is: alpha
    reads alpha's own list for `parent` but the shared one for `other`, so both leave alpha; a beta-only
    person with the address leaves nobody (the suppression already stops the address)."""
    _seed(graph)
    add_email_members(graph, "c-alpha", ["other"], emails=[{"value": ALPHAS, "isPrimary": True,
                      "isVerified": True}], tenants=["alpha", "beta"])  # fmt: skip
    add_email_members(graph, "c-beta", ["beta-only"], emails=[{"value": ALPHAS, "isPrimary": True,
                      "isVerified": True}], tenants=["beta"])  # fmt: skip
    _complaint(graph, ALPHAS.upper(), "msg-alpha")
    rows = graph.run(
        "MATCH (p:Profile)-[:HAS_VIEW]->(v:TenantView) WHERE v.announcementEmailOptOut"
        " RETURN p.profileId AS p, v.tenantId AS t ORDER BY p"
    )
    assert [(r["p"], r["t"]) for r in rows] == [("other", "alpha"), ("parent", "alpha")]
    assert graph.run("MATCH (p:Profile) WHERE p.announcementEmailOptOut RETURN p.profileId AS p") == []


def _as_tenant(api: TrpcClient, tenant: str, path: str, data: dict[str, Any]) -> Any:
    token = mint_token(api.settings, profile_id=f"{tenant}-viewer", tenant_id=tenant, roles=["viewer"])
    return api.http.get(
        f"/trpc/{path}", params={"input": json.dumps(data)}, headers={"authorization": f"Bearer {token}"}
    )


def test_a_tenant_reads_the_suppression_of_an_address_only_its_view_holds(
    api: TrpcClient, graph: Graph
) -> None:
    _seed(graph)
    _complaint(graph, ALPHAS, "msg-alpha", action="hard_bounce")
    got = ok(_as_tenant(api, "alpha", "suppressions.get", {"address": ALPHAS}))
    assert (got["detailed"], got["reason"]) == (True, "hard_bounce")
    listed = ok(_as_tenant(api, "alpha", "suppressions.list", {}))["records"]
    assert [(r["address"], r["reason"]) for r in listed] == [(ALPHAS, "hard_bounce")]
    # Beta holds the person but not the address (alpha's view is alpha's): beta learns nothing of it.
    assert error_code(_as_tenant(api, "beta", "suppressions.get", {"address": ALPHAS})) == "NOT_FOUND"
    assert ok(_as_tenant(api, "beta", "suppressions.list", {}))["records"] == []
