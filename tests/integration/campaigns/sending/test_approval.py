"""Two-person approval end to end: an author, two publishers, a tenant policy of two recipients.

Walked through the API as its users meet it: refusals name what is missing, an approval pins the preview
it was given, nobody approves their own edit or dispatches their own approval, and the trail and the
Dispatch record both people.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import StepClock, local_queues

TENANT = "alpha"
CAMPAIGN = {
    "id": "launch",
    "name": "Launch",
    "channels": ["inApp", "notify"],
    "message": {"title": "In app"},
    "notification": {"title": "Big news", "body": "Something happened"},
}


CLOCK = StepClock()


class Person:
    def __init__(self, api: TrpcClient, sub: str, role: str) -> None:
        self.api, self.sub = api, sub
        token = mint_token(api.settings, profile_id=sub, tenant_id=TENANT, roles=[role])
        self.headers = {"authorization": f"Bearer {token}"}

    def mutate(self, path: str, data: Any) -> Any:
        CLOCK.now += timedelta(seconds=1)  # the trail orders entries by time: each call is later
        return self.api.http.post(f"/trpc/{path}", json=data, headers=self.headers)

    def query(self, path: str, data: Any) -> Any:
        params = {} if data is None else {"input": json.dumps(data)}
        return self.api.http.get(f"/trpc/{path}", params=params, headers=self.headers)

    def token(self) -> str:
        return str(ok(self.query("campaigns.previewDispatch", {"campaignId": "launch"}))["previewToken"])


@pytest.fixture
def api(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[TrpcClient]:
    with _approval_api(base_settings, graph, tmp_path) as client:
        yield client


@contextmanager
def _approval_api(settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[TrpcClient]:
    """The API under ``settings``, with tenant ``alpha`` asking approval of sends to two or more."""
    queues = local_queues(tmp_path / "queue.sqlite3")
    with api_client(settings, graph, clock=CLOCK, dispatch_queue=queues.dispatch) as client:
        platform = {
            "authorization": f"Bearer {mint_token(client.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"
        }
        ok(
            client.http.post(
                "/trpc/tenants.create", json={"tenantId": TENANT, "name": "Alpha"}, headers=platform
            )
        )
        policy = {"tenantId": TENANT, "approval": {"minRecipients": 2}}
        ok(client.http.post("/trpc/tenants.update", json=policy, headers=platform))
        yield client


def _profiles(api: TrpcClient, *ids: str, locale: dict[str, str] | None = None) -> None:
    """Upserted by a platform admin (profiles.* is platform-only); ``locale``: profile id -> its language."""
    token = mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    languages = locale or {}
    members = [
        {"profileId": p, "notificationsWebhook": f"https://{p}.example/hook", "tenants": [TENANT]}
        | ({"locale": languages[p]} if p in languages else {})
        for p in ids
    ]
    response = api.http.post(
        "/trpc/profiles.upsert", json={"profiles": members}, headers={"authorization": f"Bearer {token}"}
    )
    ok(response)


def _message(response: Any) -> str:
    return str(response.json()["error"]["message"])


def _trail(graph: Graph) -> list[dict[str, Any]]:
    return graph.run(
        "MATCH (a:AuditEntry {tenantId: $t}) RETURN a.procedure AS procedure, a.actor AS actor, "
        "a.detail AS detail ORDER BY a.orderKey",
        t=TENANT,
    )


def test_a_large_send_needs_a_second_publisher_and_pins_the_preview(api: TrpcClient, graph: Graph) -> None:
    author, first = Person(api, "ana", "author"), Person(api, "pia", "publisher")
    second, third = Person(api, "pol", "publisher"), Person(api, "quy", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(author.mutate("campaigns.create", CAMPAIGN))
    source = {"type": "profileIds", "profileIds": ["m1", "m2", "m3"]}
    ok(author.mutate("campaigns.addAudience", {"campaignId": "launch", "source": source}))
    ok(first.mutate("campaigns.setStatus", {"campaignId": "launch", "status": "live"}))
    token = token_asked = first.token()

    # Without an approval, and without a reviewed token at all: FORBIDDEN, naming what is missing.
    refused = first.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    assert error_code(refused) == "FORBIDDEN" and "campaigns.approveDispatch" in _message(refused)
    assert "another publisher than pia and ana" in _message(refused)
    # The refused send now awaits a second publisher, as the console lists it, with who may approve,
    # beside the go-live it follows (its in-app card reaches three members: held as well).
    listed = ok(second.query("campaigns.listAwaitingApproval", None))["records"]
    assert [(w["action"], w["previewToken"], w["recipients"]) for w in listed] == [
        ("dispatch", token, 3), ("publish", token, 3),
    ]  # fmt: skip
    waiting = [w for w in listed if w["action"] == "dispatch"]
    assert [(w["campaignId"], w["previewToken"], w["recipients"], w["requestedBy"]) for w in waiting] == [
        ("launch", token, 3, "pia")
    ]
    assert (waiting[0]["changedSince"], waiting[0]["action"], waiting[0]["notBy"]) == (
        False, "dispatch", ["pia", "ana"],
    )  # fmt: skip
    assert waiting[0]["mayApprove"] == "another publisher than pia and ana"
    blind = first.mutate("campaigns.dispatch", {"campaignId": "launch"})
    assert error_code(blind) == "FORBIDDEN" and "expectedPreviewToken" in _message(blind)
    # An author may not approve; the role table says so.
    by_author = author.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(by_author) == "FORBIDDEN" and "publisher" in _message(by_author)
    # The requester may not approve their own request, and nothing is recorded.
    own_request = first.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(own_request) == "FORBIDDEN"
    assert "another publisher than pia and ana" in _message(own_request)
    assert graph.run("MATCH (x:DispatchApproval) RETURN count(x) AS n")[0]["n"] == 0
    assert ok(second.query("campaigns.listAwaitingApproval", None))["records"][0]["approvedBy"] is None

    # Nobody approves their own edit (of a live card: held for approval, so pol asks for it too).
    ok(second.mutate("campaigns.update", {"campaignId": "launch", "description": "second's words"}))
    token = second.token()
    own = second.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(own) == "FORBIDDEN" and "another publisher than pol, pia and ana" in _message(own)

    # An approval pins its preview: an edit after it voids it, and the dispatch names the stale approval.
    approved = ok(third.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token}))
    assert (approved["approvedBy"], approved["recipients"], approved["campaignId"]) == ("quy", 3, "launch")
    ok(author.mutate("campaigns.update", {"campaignId": "launch", "description": "a late change"}))
    changed = author.token()
    stale = first.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": changed})
    assert error_code(stale) == "CONFLICT" and "stale" in _message(stale) and "quy" in _message(stale)
    # The approved token itself is no longer the campaign's preview: the ordinary stale-token CONFLICT.
    old = first.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    assert error_code(old) == "CONFLICT"
    # Approving a preview that is not the current one is refused as well.
    late = third.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(late) == "CONFLICT"

    # The approver may not dispatch their own approval; the requester may, and the request, still
    # listed for everyone, names who approved until the send uses it.
    ok(third.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": changed}))
    mine = third.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": changed})
    assert error_code(mine) == "FORBIDDEN" and "another must dispatch" in _message(mine)
    listed = ok(first.query("campaigns.listAwaitingApproval", None))["records"]
    assert [(w["previewToken"], w["approvedPreviewToken"], w["approvedBy"]) for w in listed] == [
        (token_asked, changed, "quy")
    ]
    started = ok(
        first.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": changed})
    )
    record = ok(first.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))
    assert record["approvedBy"] == "quy" and record["approvedAt"]
    # An approval is used once: the same token cannot be replayed into a second send.
    assert graph.run("MATCH (x:DispatchApproval) RETURN count(x) AS n")[0]["n"] == 0
    assert ok(second.query("campaigns.listAwaitingApproval", None))["records"] == []

    trail = _trail(graph)
    approvals = [e for e in trail if e["procedure"] == "campaigns.approveDispatch"]
    assert [e["actor"] for e in approvals] == ["quy", "quy"]
    # The first approval showed pol's edit: only ana's later change (and the requesters) count after it.
    assert [json.loads(e["detail"])["notBy"] for e in approvals] == [
        ["pol", "pia", "ana"],
        ["ana", "pia"],
    ]
    dispatched = [e for e in trail if e["procedure"] == "campaigns.dispatch"]
    refusals = [e for e in dispatched if "refused" in json.loads(e["detail"])]
    assert [e["actor"] for e in refusals] == ["pia", "pia", "pia", "quy"]
    sent = [json.loads(e["detail"]) for e in dispatched if "dispatchIds" in json.loads(e["detail"])]
    assert [(e["approvedBy"], e["recipients"]) for e in sent] == [("quy", 3)]
    assert [e["actor"] for e in dispatched if "dispatchIds" in json.loads(e["detail"])] == ["pia"]


def test_a_send_below_the_threshold_needs_no_approval(api: TrpcClient, graph: Graph) -> None:
    author, publisher = Person(api, "ana", "author"), Person(api, "pia", "publisher")
    _profiles(api, "m1")
    ok(author.mutate("campaigns.create", CAMPAIGN))
    source = {"type": "profileIds", "profileIds": ["m1"]}
    ok(author.mutate("campaigns.addAudience", {"campaignId": "launch", "source": source}))
    ok(publisher.mutate("campaigns.setStatus", {"campaignId": "launch", "status": "live"}))
    token = publisher.token()
    started = ok(
        publisher.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    )
    assert (
        ok(publisher.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))["approvedBy"]
        is None
    )
    # Still, under the policy nobody dispatches unseen: a token is required whatever the size.
    assert error_code(publisher.mutate("campaigns.dispatch", {"campaignId": "launch"})) == "FORBIDDEN"


def test_approval_judges_untranslated_readers_by_the_configured_share(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """One reader in three gets the base content: past the default share (0.05), within the configured
    one (0.5). Preview, approval and dispatch all judge it by the configured share, so the send the
    preview offers can be approved and sent."""
    settings = base_settings.model_copy(update={"campaign_untranslated_max_share": 0.5})
    with _approval_api(settings, graph, tmp_path) as api:
        author, first = Person(api, "ana", "author"), Person(api, "pia", "publisher")
        second = Person(api, "pol", "publisher")
        _profiles(api, "m1", "m2", "m3", locale={"m1": "fr", "m2": "es", "m3": "en"})
        spanish = {"notification": {"title": "Noticias", "body": "Algo pasó"}, "message": {"title": "App"}}
        translated = {**CAMPAIGN, "locale": "en", "translations": {"es": spanish}}
        ok(author.mutate("campaigns.create", translated))
        source = {"type": "profileIds", "profileIds": ["m1", "m2", "m3"]}
        ok(author.mutate("campaigns.addAudience", {"campaignId": "launch", "source": source}))
        ok(first.mutate("campaigns.setStatus", {"campaignId": "launch", "status": "live"}))
        preview = ok(first.query("campaigns.previewDispatch", {"campaignId": "launch"}))
        assert (preview["untranslated"], preview["blockedReason"]) == ({"fr": 1}, None)

        # pia asked for the go-live (its card reaches three members): pol approves, pia sends.
        approval = {"campaignId": "launch", "previewToken": preview["previewToken"]}
        assert ok(second.mutate("campaigns.approveDispatch", approval))["recipients"] == 3
        sent = {"campaignId": "launch", "expectedPreviewToken": preview["previewToken"]}
        started = ok(first.mutate("campaigns.dispatch", sent))
        record = ok(first.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))
        assert record["approvedBy"] == "pol"
