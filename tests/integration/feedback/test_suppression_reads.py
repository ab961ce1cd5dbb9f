"""Suppression reads stay inside (docs/people.md): a tenant reads a suppression's reason, provider
detail and dates only when its own sends caused it, found through the provider message ids of the
feedback (the campaigns of those sends); of any other address its members hold, only that it is
suppressed. A platform credential sees everything. Real app, real Neo4j."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.domain.types import format_ts
from campaign_engine.feedback.events import AddressEvent, Feedback
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.feedback_marks import link_pending
from campaign_engine.graph.graph import Graph, Tx
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import NOW, make_campaign

SHARED = "parent@school.test"


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=lambda: NOW) as client:
        yield client


def _feedback(graph: Graph, address: str, key: str, *message_ids: str, action: Any = "hard_bounce") -> None:
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=lambda: NOW)
    event = AddressEvent(address=address, action=action, detail="550 mailbox unknown at mx.school.test")
    store.apply(Feedback(key, "postmark", (event,), message_ids=message_ids))


def _seed(graph: Graph) -> None:
    """A parent both tenants hold, river's campaign sent to them as provider message ``msg-river``."""
    for campaign, tenant in (("c-river", "river"), ("c-north", "north")):
        make_campaign(graph, campaign, tenant_id=tenant)
    graph.run(
        "CREATE (p:Profile {profileId: 'parent', tenants: ['north', 'river']})"
        "-[:HAS_CONTACT_METHOD]->"
        "(:ContactMethod {type: 'email', value: $a, isPrimary: true, isVerified: true})"
        " WITH p MATCH (c:Campaign {id: 'c-river'})"
        " CREATE (p)-[:CAMPAIGN_STATE {emailProviderMessageId: 'msg-river', emailedAt: 'x'}]->(c)",
        a=SHARED,
    )


def _as_tenant(api: TrpcClient, tenant: str, path: str, data: dict[str, Any]) -> Any:
    token = mint_token(api.settings, profile_id=f"{tenant}-viewer", tenant_id=tenant, roles=["viewer"])
    response = api.http.get(
        f"/trpc/{path}", params={"input": json.dumps(data)}, headers={"authorization": f"Bearer {token}"}
    )
    return ok(response)


def test_only_the_tenant_whose_send_bounced_reads_why(api: TrpcClient, graph: Graph) -> None:
    _seed(graph)
    _feedback(graph, SHARED, "bounce-1", "msg-river")
    mine = _as_tenant(api, "river", "suppressions.get", {"address": SHARED})
    assert (mine["detailed"], mine["reason"], mine["detail"]) == (True, "hard_bounce", mine["detail"])
    assert mine["detail"] and mine["suppressedAt"]
    theirs = _as_tenant(api, "north", "suppressions.get", {"address": SHARED})
    assert theirs == {
        "address": SHARED, "detailed": False, "reason": None, "source": None, "detail": None,
        "suppressedAt": None, "lastFeedbackAt": None, "feedbackCount": None,
    }  # fmt: skip
    platform = ok(api.query("suppressions.get", {"address": SHARED}, as_=ADMIN_ID, admin=True))
    assert platform["detailed"] and platform["reason"] == "hard_bounce"

    # The list says the same, and north's reason filter reveals no reason either.
    north = _as_tenant(api, "north", "suppressions.list", {})["records"]
    assert [(r["address"], r["detailed"], r["reason"]) for r in north] == [(SHARED, False, None)]
    assert _as_tenant(api, "north", "suppressions.list", {"reason": "hard_bounce"})["records"] == []
    river = _as_tenant(api, "river", "suppressions.list", {"reason": "hard_bounce"})["records"]
    assert [(r["address"], r["reason"]) for r in river] == [(SHARED, "hard_bounce")]


def test_a_complaint_about_another_tenants_send_takes_the_details_away(api: TrpcClient, graph: Graph) -> None:
    _seed(graph)
    graph.run(
        "MATCH (p:Profile {profileId: 'parent'}), (c:Campaign {id: 'c-north'})"
        " CREATE (p)-[:CAMPAIGN_STATE {emailProviderMessageId: 'msg-north', emailedAt: 'x'}]->(c)"
    )
    _feedback(graph, SHARED, "bounce-1", "msg-river")
    _feedback(graph, SHARED, "complaint-1", "msg-north", action="complaint")  # outranks: now north's
    assert _as_tenant(api, "north", "suppressions.get", {"address": SHARED})["reason"] == "spam_complaint"
    assert _as_tenant(api, "river", "suppressions.get", {"address": SHARED})["detailed"] is False


def test_a_suppression_no_send_of_a_tenant_caused_shows_no_tenant_why(api: TrpcClient, graph: Graph) -> None:
    _seed(graph)
    _feedback(graph, SHARED, "provider-list-1", action="suppress")  # a provider's own list: no message
    for tenant in ("north", "river"):
        assert _as_tenant(api, tenant, "suppressions.get", {"address": SHARED})["detailed"] is False
    assert ok(api.query("suppressions.get", {"address": SHARED}, as_=ADMIN_ID, admin=True))["detailed"]


def test_a_bounce_that_outran_its_send_is_read_by_its_tenant_once_the_send_is_recorded(
    api: TrpcClient, graph: Graph
) -> None:
    """The webhook arrives before the walk's record transaction wrote the message id: no tenant is known
    then, so nobody reads why; the record of river's send (its message id and the pending feedback's
    count, as the email walk writes them) gives river the reason, and north still reads none."""
    _seed(graph)
    _feedback(graph, SHARED, "bounce-late", "msg-late")
    assert _as_tenant(api, "river", "suppressions.get", {"address": SHARED})["detailed"] is False

    def record(tx: Tx) -> None:
        tx.run(
            "MATCH (p:Profile {profileId: 'parent'})-[s:CAMPAIGN_STATE]->(:Campaign {id: 'c-river'})"
            " SET s.emailProviderMessageId = 'msg-late'"
        ).consume()
        link_pending(tx, None, ["msg-late"], now=format_ts(NOW))

    graph.write(record)
    mine = _as_tenant(api, "river", "suppressions.get", {"address": SHARED})
    assert (mine["detailed"], mine["reason"]) == (True, "hard_bounce")
    river = _as_tenant(api, "river", "suppressions.list", {"reason": "hard_bounce"})["records"]
    assert [(r["address"], r["reason"]) for r in river] == [(SHARED, "hard_bounce")]
    assert _as_tenant(api, "north", "suppressions.get", {"address": SHARED})["detailed"] is False
    pending = graph.run("MATCH (f:PendingFeedback) RETURN count(f) AS n")[0]["n"]
    assert pending == 0  # the record counted it, once
