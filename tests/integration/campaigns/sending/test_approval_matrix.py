"""The approval path matrix: every way content reaches people under a tenant's policy of two or more.

Each row is one path: with one person it is refused or held, with a second it goes through, and the
trail names both. The rows are derived, not only listed: every ``action`` a request can have and every
``campaigns.*`` mutation the API offers must be a row or be named in ``REACHES_NOBODY`` with why, so a
new action or a new procedure that sets content live fails here until it has a row. Paths an earlier
test walks whole (a copy, an API key, a growing segment, a fallback) are rows naming that test, which
must exist in this package; the others are walked here, with the helpers of ``test_approval.py``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, get_args

import pytest

from campaign_engine.api.app import ROUTERS
from campaign_engine.campaigns.sending.approval import ApprovalAction
from campaign_engine.graph.graph import Graph
from tests.integration.campaigns.sending.test_approval import (
    CAMPAIGN,
    CLOCK,
    TENANT,
    Person,
    _profiles,
    _trail,
    api,
)
from tests.integration.campaigns.sending.test_approval_people import _live
from tests.integration.campaigns.tenants.test_event_sources import _events, _subscribe
from tests.support.api import TrpcClient, error_code, ok

__all__ = ["api"]  # the fixture, shared with test_approval.py

_HERE = "tests.integration.campaigns.sending"

# campaigns.* mutations that make nothing visible to anyone who did not see it, and why.
REACHES_NOBODY = {
    "campaigns.create": "a draft: nobody sees a campaign before it is live",
    "campaigns.previewAudience": "reads",
    "campaigns.previewSegment": "reads",
    "campaigns.removeAudience": "fewer people (the remover still counts as an editor)",
    "campaigns.sendTestToMe": "the caller alone",
    "campaigns.delete": "removes",
    "campaigns.cancelScheduledDispatch": "stops a send",
    "campaigns.chooseVariant": "picks one of the approved definition's variants, for the approved send",
    "campaigns.recordEvent": "a member's own action on a card they see (the rows check it is refused unseen)",
    "campaigns.enroll": "a member enrolling themselves sees the approved card",
    "campaigns.leave": "a member leaving",
    "campaigns.unsubscribeFromAnnouncements": "a reader's own opt-out",
}


@dataclass(frozen=True)
class Row:
    path: str
    procedure: str
    action: ApprovalAction | None = None
    walk: Callable[[TrpcClient, Graph], None] | None = None
    proof: str | None = None  # "module::test" of this package that walks the path whole


def _card(api: TrpcClient, profile_id: str) -> list[str]:
    """The titles of the in-app cards ``profile_id`` sees."""
    cards = ok(api.query("campaigns.getMyCampaigns", as_=profile_id))["campaigns"]
    return [str(c["message"]["title"]) for c in cards if c["campaignId"] == "launch"]


def _shown(api: TrpcClient, profile_id: str) -> str:
    """``recorded``, or the code recordEvent refuses a ``shown`` of ``launch`` by ``profile_id`` with."""
    answer = api.mutate("campaigns.recordEvent", {"campaignId": "launch", "event": "shown"}, as_=profile_id)
    return "recorded" if answer.status_code == 200 else str(error_code(answer))


def _requests(person: Person, action: str) -> list[dict[str, Any]]:
    listed = ok(person.query("campaigns.listAwaitingApproval", None))["records"]
    return [r for r in listed if r["action"] == action]


def _approve(person: Person, token: str) -> Any:
    return person.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})


def _both_named(graph: Graph, requester: str, approver: str, procedure: str) -> None:
    """The trail holds the request (held or refused) by one person and the approval by the other."""
    trail = _trail(graph)
    asked = [e for e in trail if e["procedure"] == procedure and e["actor"] == requester]
    assert any({"held", "refused"} & json.loads(e["detail"] or "{}").keys() for e in asked), asked
    approvals = [e for e in trail if e["procedure"] == "campaigns.approveDispatch"]
    assert approvals and approvals[-1]["actor"] == approver
    assert requester in json.loads(approvals[-1]["detail"])["notBy"]


def _go_live(api: TrpcClient, graph: Graph) -> None:
    """A publisher's go-live shows the in-app card to nobody until another publisher approves it."""
    pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(pia.mutate("campaigns.create", CAMPAIGN))
    _live(pia, pia)
    assert _card(api, "m1") == []
    [held] = _requests(pol, "publish")
    assert (held["requestedBy"], held["recipients"]) == ("pia", 3)
    assert error_code(_approve(pia, held["previewToken"])) == "FORBIDDEN"
    assert (_card(api, "m1"), _shown(api, "m1")) == ([], "NOT_FOUND")  # no engagement with a held card
    ok(_approve(pol, held["previewToken"]))
    assert (_card(api, "m1"), _shown(api, "m1")) == (["In app"], "recorded")
    assert _requests(pol, "publish") == []
    _both_named(graph, "pia", "pol", "campaigns.setStatus")


def _published(api: TrpcClient) -> tuple[Person, Person, Person]:
    """``launch`` live with its card approved: pia asked, pol approved (returns ana, pia, pol)."""
    ana, pia, pol = (
        Person(api, "ana", "author"),
        Person(api, "pia", "publisher"),
        Person(api, "pol", "publisher"),
    )
    _profiles(api, "m1", "m2", "m3", "m4")
    ok(ana.mutate("campaigns.create", CAMPAIGN))
    _live(ana, pia)
    ok(_approve(pol, _requests(pol, "publish")[0]["previewToken"]))
    return ana, pia, pol


def _edit_live(api: TrpcClient, graph: Graph) -> None:
    """An author's edit of a live card stays invisible to members until a publisher approves it."""
    ana, pia, _ = _published(api)
    ok(ana.mutate("campaigns.update", {"campaignId": "launch", "message": {"title": "Changed"}}))
    assert _card(api, "m1") == ["In app"]
    [held] = _requests(pia, "publish")
    assert error_code(_approve(ana, held["previewToken"])) == "FORBIDDEN"  # an author, and its editor
    ok(_approve(pia, held["previewToken"]))
    assert _card(api, "m1") == ["Changed"]
    _both_named(graph, "ana", "pia", "campaigns.update")


def _grow_audience(api: TrpcClient, graph: Graph) -> None:
    """A member added to a live campaign sees its card once a second publisher approves; the others
    keep seeing it meanwhile."""
    ana, pia, _ = _published(api)
    added = {"campaignId": "launch", "source": {"type": "profileIds", "profileIds": ["m4"]}}
    ok(ana.mutate("campaigns.addAudience", added))
    assert (_card(api, "m1"), _card(api, "m4")) == (["In app"], [])
    assert (_shown(api, "m1"), _shown(api, "m4")) == ("recorded", "NOT_FOUND")
    [held] = _requests(pia, "publish")
    assert held["recipients"] == 4
    ok(_approve(pia, held["previewToken"]))
    assert (_card(api, "m4"), _shown(api, "m4")) == (["In app"], "recorded")
    _both_named(graph, "ana", "pia", "campaigns.addAudience")


def _sendable(api: TrpcClient) -> Person:
    """``launch`` without an in-app card, live on pia's say (it shows nothing): only sends reach people.
    (With a card, the approval of its go-live would approve a send of the same preview too.)"""
    pia = Person(api, "pia", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(
        pia.mutate(
            "campaigns.create",
            {k: v for k, v in CAMPAIGN.items() if k != "message"} | {"channels": ["notify"]},
        )
    )
    _live(pia, pia)
    assert _requests(pia, "publish") == []
    return pia


def _dispatch(api: TrpcClient, graph: Graph) -> None:
    """A send is refused until a second publisher approves its preview; then the requester sends it."""
    pia = _sendable(api)
    token = pia.token()
    sent = {"campaignId": "launch", "expectedPreviewToken": token}
    assert error_code(pia.mutate("campaigns.dispatch", sent)) == "FORBIDDEN"
    assert error_code(_approve(pia, token)) == "FORBIDDEN"  # one's own request
    quy = Person(api, "quy", "publisher")
    ok(_approve(quy, token))
    started = ok(pia.mutate("campaigns.dispatch", sent))
    record = ok(pia.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))
    assert record["approvedBy"] == "quy"
    _both_named(graph, "pia", "quy", "campaigns.dispatch")


def _schedule(api: TrpcClient, graph: Graph) -> None:
    """A schedule is refused until a second publisher approves its preview."""
    pia = _sendable(api)
    token = pia.token()
    at = {"sendAt": (CLOCK.now + timedelta(days=1)).isoformat().replace("+00:00", "Z")}
    asked = {"campaignId": "launch", "expectedPreviewToken": token, **at}
    assert error_code(pia.mutate("campaigns.scheduleDispatch", asked)) == "FORBIDDEN"
    [request] = _requests(pia, "schedule")
    quy = Person(api, "quy", "publisher")
    ok(_approve(quy, request["previewToken"]))
    [scheduled, *_] = ok(pia.mutate("campaigns.scheduleDispatch", asked))
    assert scheduled["approvedBy"] == "quy"
    _both_named(graph, "pia", "quy", "campaigns.scheduleDispatch")


def _resume_after_change(api: TrpcClient, graph: Graph) -> None:
    """A failed send whose campaign changed since it went out resumes only with a new approval."""
    ana, pia, pol = _published(api)
    token = pia.token()
    ok(_approve(pol, token))
    started = ok(pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token}))
    ref = {"dispatchId": started["dispatchId"]}
    graph.run("MATCH (d:Dispatch {id: $id}) SET d.status = 'failed'", id=started["dispatchId"])
    changed = {"campaignId": "launch", "notification": {"title": "New", "body": "Changed"}}
    ok(ana.mutate("campaigns.update", changed))
    refused = pia.mutate("campaigns.resumeDispatch", ref)
    assert error_code(refused) == "FORBIDDEN"
    [request] = _requests(pol, "resume")
    assert request["requestedBy"] == "pia"
    ok(_approve(pol, request["previewToken"]))
    resumed = ok(pia.mutate("campaigns.resumeDispatch", ref))
    assert (resumed["status"], resumed["approvedBy"]) == ("sending", "pol")
    _both_named(graph, "pia", "pol", "campaigns.resumeDispatch")


ROWS = [
    Row("go live with in-app", "campaigns.setStatus", "publish", _go_live),
    Row("edit live content", "campaigns.update", "publish", _edit_live),
    Row("change a live audience", "campaigns.addAudience", "publish", _grow_audience),
    Row("dispatch", "campaigns.dispatch", "dispatch", _dispatch),
    Row("schedule", "campaigns.scheduleDispatch", "schedule", _schedule),
    Row("resume after a change", "campaigns.resumeDispatch", "resume", _resume_after_change),
    Row("approve one's own request", "campaigns.approveDispatch",
        proof="test_approval::test_a_large_send_needs_a_second_publisher_and_pins_the_preview"),
    Row("duplicate then dispatch", "campaigns.duplicate",
        proof="test_approval_people::test_a_copy_carries_the_editors_of_its_source"),
    Row("approve with one's own API key", "campaigns.approveDispatch",
        proof="test_approval_people::test_an_api_key_approves_as_the_person_who_minted_it"),
    Row("a live segment growing past the approved count", "campaigns.resumeDispatch", "resume",
        proof="test_approval_reach::test_a_growing_segment_pauses_past_its_approval_until_a_new_one"),
    Row("an approved fallback", "campaigns.dispatch", "dispatch",
        proof="test_approval_languages::test_an_approved_fallback_is_pinned_and_sends_without_a_second_flag"),
]  # fmt: skip


def test_every_action_and_every_campaign_mutation_has_a_row() -> None:
    mutations = {p.path for r in ROUTERS if r.namespace == "campaigns" for p in r.procedures
                 if p.kind == "mutation"}  # fmt: skip
    rowless = mutations - {row.procedure for row in ROWS} - REACHES_NOBODY.keys()
    assert not rowless, f"campaigns mutations with no approval row and no reason to reach nobody: {rowless}"
    assert set(get_args(ApprovalAction)) <= {row.action for row in ROWS}
    for row in ROWS:
        assert (row.walk is None) != (row.proof is None), row.path
        if row.proof is not None:
            module, name = row.proof.split("::")
            assert callable(getattr(importlib.import_module(f"{_HERE}.{module}"), name)), row.proof


@pytest.mark.parametrize("row", [r for r in ROWS if r.walk is not None], ids=lambda r: r.path)
def test_a_path_needs_a_second_person(row: Row, api: TrpcClient, graph: Graph) -> None:
    assert row.walk is not None
    row.walk(api, graph)


def test_requests_and_approvals_are_tenant_events(api: TrpcClient, graph: Graph) -> None:
    """Each request raises ``approval.requested`` once and each approval ``approval.granted``, to the
    campaign's tenant's endpoints only (ids, counts and the person, never the copy)."""
    _subscribe(graph, api.settings, tenant=TENANT)
    _subscribe(graph, api.settings, tenant="elsewhere")
    pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(pia.mutate("campaigns.create", CAMPAIGN))
    _live(pia, pia)
    token = pia.token()
    sent = {"campaignId": "launch", "expectedPreviewToken": token}
    for _ in range(2):  # asked twice: one request, one event
        assert error_code(pia.mutate("campaigns.dispatch", sent)) == "FORBIDDEN"
    ok(_approve(pol, token))
    events = [(e["type"], e["data"]) for e in _events(graph, "approval.requested", "approval.granted")]
    assert events == [
        ("approval.requested", {"campaignId": "launch", "action": "publish", "recipients": 3, "by": "pia"}),
        ("approval.requested", {"campaignId": "launch", "action": "dispatch", "recipients": 3, "by": "pia"}),
        (
            "approval.granted",
            {"campaignId": "launch", "action": "dispatch,publish", "recipients": 3, "by": "pol"},
        ),
    ]
    endpoints = graph.run(
        "MATCH (m:WebhookBatch) MATCH (e:WebhookEndpoint {id: m.endpointId}) RETURN DISTINCT e.tenantId AS t"
    )
    assert endpoints == [{"t": TENANT}]
