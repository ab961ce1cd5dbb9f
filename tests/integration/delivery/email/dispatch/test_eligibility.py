"""The email channel end to end against the real graph and the loopback Postmark stand-in: who
is eligible, previewed and sent to, the preview token over the addresses, and each channel's own
dispatch."""

from __future__ import annotations

import pytest

from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.errors import Conflict
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues
from tests.support.delivery import NOW, add_members, run_worker
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    claimed,
    emailed,
    make_email_campaign,
)
from tests.support.email_dispatch import (
    DISPATCH_SETTINGS,
    _dispatch,
    _email_dispatch,
)
from tests.support.postmark_standin import PostmarkStandin


def test_eligibility_matrix_preview_and_send(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    # excludeMinors=false: the email age policy still fails closed for minors, unknown ages and
    # managed (non-service) profiles.
    make_email_campaign(graph, excludeMinors=False)
    add_email_members(graph, "c1", ["ok", "push-optout"])
    graph.run("MATCH (p:Profile {profileId: 'push-optout'}) SET p.announcementPushOptOut = true")
    add_email_members(graph, "c1", ["service"], isManaged=True, isServiceProfile=True)
    add_email_members(graph, "c1", ["managed"], isManaged=True)
    add_email_members(graph, "c1", ["minor"], dob="2015-06-01")
    add_email_members(graph, "c1", ["unknown-age"], dob=None)
    add_email_members(graph, "c1", ["bad-dob"], dob="1990-13-45x")
    add_email_members(graph, "c1", ["optout"], announcementEmailOptOut=True)
    add_email_members(
        graph,
        "c1",
        ["unverified"],
        emails=[{"value": "u@example.com", "isPrimary": True, "isVerified": False}],
    )
    add_email_members(
        graph,
        "c1",
        ["not-primary"],
        emails=[{"value": "n@example.com", "isPrimary": False, "isVerified": True}],
    )
    add_email_members(graph, "c1", ["two-primaries"], emails=[
        {"value": "a@example.com", "isPrimary": True, "isVerified": True},
        {"value": "b@example.com", "isPrimary": True, "isVerified": True},
    ])  # fmt: skip
    add_email_members(
        graph, "c1", ["invalid"], emails=[{"value": "not an address", "isPrimary": True, "isVerified": True}]
    )
    add_email_members(graph, "c1", ["no-email"], emails=[])
    add_email_members(graph, "c1", ["emailed", "claimed"])
    graph.run(
        "MATCH (p:Profile), (c:Campaign {id: 'c1'}) WHERE p.profileId IN ['emailed', 'claimed'] "
        "MERGE (p)-[s:CAMPAIGN_STATE]->(c) "
        "SET s.emailedAt = CASE p.profileId WHEN 'emailed' THEN 'x' END, "
        "    s.emailClaimedAt = CASE p.profileId WHEN 'claimed' THEN 'x' END"
    )
    add_email_members(graph, "c1", ["outsider"], member=False)

    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert preview.email_recipient_count == 3
    assert preview.recipient_count == 3
    assert preview.notification_recipient_count == 0
    assert claimed(graph, "c1") == ["claimed"]  # the preview claims no one

    _dispatch(graph, queues, preview.preview_token)
    run_worker(settings, graph, queues)
    assert accepted_to(postmark) == sorted(address_of(p) for p in ["ok", "push-optout", "service"])
    assert emailed(graph, "c1") == ["emailed", "ok", "push-optout", "service"]
    record = _email_dispatch(graph)
    assert record["status"] == "completed" and record["emailed"] == 3


def test_preview_token_covers_email_addresses(settings: Settings, graph: Graph, queues: Queues) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1"])
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    again = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert again.preview_token == preview.preview_token
    graph.run("MATCH (:Profile {profileId: 'p1'})-->(m:ContactMethod) SET m.value = 'other@example.com'")
    with pytest.raises(Conflict):
        _dispatch(graph, queues, preview.preview_token)


def test_channels_get_their_own_dispatch_and_recipients_count_distinct_profiles(
    settings: Settings, graph: Graph, queues: Queues, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph, channels=["notify", "email"], notification={"title": "Hi", "body": "News"})
    add_email_members(graph, "c1", ["both", "email-only"])
    graph.run("MATCH (p:Profile {profileId: 'email-only'}) SET p.announcementPushOptOut = true")
    add_members(graph, "c1", ["notify-only"])
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert (preview.notification_recipient_count, preview.email_recipient_count) == (2, 2)
    assert preview.recipient_count == 3
    started = dispatch(
        graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token, now=NOW,
        settings=DISPATCH_SETTINGS,
    )  # fmt: skip
    assert sorted(started.channels) == ["email", "notify"]
    channels = sorted(d.channel for d in list_dispatches(graph, "c1"))
    assert channels == ["email", "notify"]
    jobs = [parse_job(m.body) for m in queues.dispatch.receive(max_messages=10)]
    assert sorted(j.channel for j in jobs if isinstance(j, PageJob)) == ["email", "notify"]
    assert graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.revision AS r")[0]["r"] == 3  # +1 only
