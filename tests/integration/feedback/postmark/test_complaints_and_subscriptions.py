"""POST /webhooks/postmark against the real app and graph, replaying Postmark's documented record
shapes: a spam complaint suppresses and opts out every profile
with the address, bounces and complaints count in the stats, a subscription change suppresses and
reactivates, other records are acknowledged."""

from __future__ import annotations

from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, ok
from tests.support.email import add_email_members, address_of, make_email_campaign
from tests.support.postmark_feedback import (
    BOUNCE,
    DELIVERY,
    PASSWORD,
    SPAM_COMPLAINT,
    SUBSCRIPTION_CHANGE,
    USER,
    applied,
    opted_out,
    post,
    record,
    suppressions,
)


def test_spam_complaint_suppresses_and_opts_out_every_profile_with_the_address(
    api: TrpcClient, graph: Graph
) -> None:
    make_email_campaign(graph)
    add_email_members(
        graph, "c1", ["p1"], emails=[{"value": "john@example.com", "isPrimary": True, "isVerified": True}]
    )
    # Another profile using the same address, as a secondary, unverified one: still that address.
    add_email_members(
        graph, "c1", ["p2"], emails=[{"value": "john@example.com", "isPrimary": False, "isVerified": False}]
    )
    add_email_members(graph, "c1", ["p3"])
    assert applied(api, SPAM_COMPLAINT) == "applied"
    assert suppressions(graph) == {"john@example.com": "spam_complaint"}
    assert opted_out(graph) == ["p1", "p2"]
    # A complaint outranks the reason an address was first suppressed for.
    assert applied(api, record(BOUNCE, Email=address_of("p3"))) == "applied"
    assert applied(api, record(SPAM_COMPLAINT, ID=43, Email=address_of("p3"))) == "applied"
    assert suppressions(graph)[address_of("p3")] == "spam_complaint"
    assert opted_out(graph) == ["p1", "p2", "p3"]


def test_bounces_and_complaints_count_in_stats_through_the_provider_message_id(
    api: TrpcClient, graph: Graph
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2", "p3"])
    for pid, message_id in (("p1", "m-1"), ("p2", "m-2"), ("p3", "m-3")):
        graph.run(
            "MATCH (p:Profile {profileId: $p}), (c:Campaign {id: 'c1'}) "
            "CREATE (p)-[:CAMPAIGN_STATE {emailedAt: 'x', emailProviderMessageId: $m}]->(c)",
            p=pid,
            m=message_id,
        )
    assert applied(api, record(BOUNCE, MessageID="m-1", Email=address_of("p1"))) == "applied"
    soft = record(BOUNCE, ID=7, Type="SoftBounce", Inactive=False, MessageID="m-3", Email=address_of("p3"))
    assert applied(api, soft) == "applied"  # a soft bounce is not a bounce in the stats
    assert applied(api, record(SPAM_COMPLAINT, MessageID="m-2", Email="P2@example.com")) == "applied"
    stats = ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
    assert (stats["emailed"], stats["bounced"], stats["complained"]) == (3, 1, 1)
    # Out of its send's tenant only, not every tenant's (test_feedback_tenants.py, a case variant too).
    assert opted_out(graph) == []


def test_subscription_change_suppresses_and_reactivates(api: TrpcClient, graph: Graph) -> None:
    suppress = SUBSCRIPTION_CHANGE
    assert applied(api, suppress) == "applied"
    assert suppressions(graph) == {"bounced-address@wildbit.com": "manual"}
    reactivate = record(SUBSCRIPTION_CHANGE, SuppressSending=False, ChangedAt="2020-02-02T09:00:00.000000Z")
    assert applied(api, reactivate) == "applied"
    assert suppressions(graph) == {}
    assert applied(api, suppress) == "duplicate"  # a late retry of the old change does not undo the new one
    assert suppressions(graph) == {}
    hard = record(
        SUBSCRIPTION_CHANGE, SuppressionReason="HardBounce", ChangedAt="2020-02-03T09:00:00.000000Z"
    )
    assert applied(api, hard) == "applied"
    assert suppressions(graph) == {"bounced-address@wildbit.com": "hard_bounce"}


def test_other_records_are_acknowledged_and_unreadable_ones_refused(api: TrpcClient, graph: Graph) -> None:
    for other in (DELIVERY, record(DELIVERY, RecordType="Open"), record(DELIVERY, RecordType="Click")):
        assert applied(api, other) == "ignored"
    assert post(api, record(BOUNCE, Email=None)).status_code == 400
    assert post(api, record(BOUNCE, ID=None)).status_code == 400
    assert post(api, record(SUBSCRIPTION_CHANGE, SuppressSending="yes")).status_code == 400
    assert post(api, [BOUNCE]).status_code == 400
    response = api.http.post("/webhooks/postmark", content=b"{not json", auth=(USER, PASSWORD))
    assert response.status_code == 400
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:FeedbackRecord RETURN count(n) AS n")[0]["n"] == 0
    )
