"""Two different people, whatever the credential or the copy: an API key approves as its minter, a
copy's source editors count as the copy's, and a test wave waits for the same second publisher (the
tenant policy of ``test_approval.py``: two recipients or more need a second publisher)."""

from __future__ import annotations

import json
from pathlib import Path

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.api.context import TENANT_HEADER
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.integration.campaigns.sending.test_approval import (
    CAMPAIGN,
    TENANT,
    Person,
    _approval_api,
    _message,
    _profiles,
    _trail,
    api,
)
from tests.support.api import TrpcClient, error_code, ok

__all__ = ["api"]  # the fixture, shared with test_approval.py

AUDIENCE = {"type": "profileIds", "profileIds": ["m1", "m2", "m3"]}


def _live(author: Person, publisher: Person, campaign_id: str = "launch") -> None:
    ok(author.mutate("campaigns.addAudience", {"campaignId": campaign_id, "source": AUDIENCE}))
    ok(publisher.mutate("campaigns.setStatus", {"campaignId": campaign_id, "status": "live"}))


def _approvals(graph: Graph) -> int:
    return int(graph.run("MATCH (x:DispatchApproval) RETURN count(x) AS n")[0]["n"])


class KeyHolder(Person):
    """Calls with an API key instead of a token (the key's role: publisher)."""

    def __init__(self, api: TrpcClient, key: str) -> None:
        self.api, self.sub = api, key
        self.headers = {"authorization": f"Bearer {key}"}


def test_an_api_key_approves_as_the_person_who_minted_it(api: TrpcClient, graph: Graph) -> None:
    pia, pol = Person(api, "pia", "admin"), Person(api, "pol", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(pia.mutate("campaigns.create", CAMPAIGN))
    _live(pia, pia)
    token = pia.token()
    assert error_code(
        pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    )
    minted = ok(pia.mutate("apiKeys.create", {"tenantId": TENANT, "name": "pia's", "role": "publisher"}))
    key = KeyHolder(api, minted["key"])

    # The key is pia: it may not approve pia's own request, and nothing is recorded.
    by_key = key.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(by_key) == "FORBIDDEN" and "another publisher than pia" in _message(by_key)
    assert _approvals(graph) == 0
    approved = ok(pol.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token}))
    assert approved["approvedBy"] == "pol"
    # The key may send pol's approval of pia's request: it acts for pia, not for pol.
    started = ok(key.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token}))
    assert (
        ok(pia.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))["approvedBy"] == "pol"
    )

    entries = graph.run(
        "MATCH (a:AuditEntry {tenantId: $t}) WHERE a.procedure STARTS WITH 'campaigns.' "
        "RETURN a.procedure AS procedure, a.actor AS actor, a.via AS via ORDER BY a.orderKey",
        t=TENANT,
    )
    assert [(e["procedure"], e["actor"], e["via"]) for e in entries[-3:]] == [
        ("campaigns.dispatch", "pia", None),  # pia's refused request
        ("campaigns.approveDispatch", "pol", None),
        ("campaigns.dispatch", "pia", f"apikey:{minted['id']}"),
    ]


class SignedIn(Person):
    """A person as the organisation's provider signs them in: a token naming no tenant, a role granted in
    alpha, and the console's tenant header picking alpha."""

    def __init__(self, api: TrpcClient, sub: str, role: str) -> None:
        admin = {
            "authorization": f"Bearer {mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"
        }
        grant = {"tenantId": TENANT, "subject": sub, "role": role}
        ok(api.http.post("/trpc/access.grant", json=grant, headers=admin))
        self.api, self.sub = api, sub
        self.headers = {
            "authorization": f"Bearer {mint_token(api.settings, profile_id=sub)}",
            TENANT_HEADER: TENANT,
        }


def test_two_people_signed_in_by_the_provider_are_still_two_and_no_fewer(
    api: TrpcClient, graph: Graph
) -> None:
    pia, pol = SignedIn(api, "pia", "publisher"), SignedIn(api, "pol", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(pia.mutate("campaigns.create", CAMPAIGN))
    _live(pia, pia)
    token = pia.token()
    held = pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    assert error_code(held) == "FORBIDDEN"
    own = pia.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token})
    assert error_code(own) == "FORBIDDEN" and "another publisher than pia" in _message(own)
    assert _approvals(graph) == 0
    approved = ok(pol.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token}))
    assert approved["approvedBy"] == "pol"
    ok(pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token}))
    entries = graph.run(
        "MATCH (a:AuditEntry {tenantId: $t}) WHERE a.procedure IN ['campaigns.approveDispatch', "
        "'campaigns.dispatch'] RETURN a.procedure AS procedure, a.actor AS actor ORDER BY a.orderKey",
        t=TENANT,
    )
    assert [(e["procedure"], e["actor"]) for e in entries] == [
        ("campaigns.dispatch", "pia"),
        ("campaigns.approveDispatch", "pol"),
        ("campaigns.dispatch", "pia"),
    ]


def test_a_copy_carries_the_editors_of_its_source(api: TrpcClient, graph: Graph) -> None:
    pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
    quy = Person(api, "quy", "publisher")
    _profiles(api, "m1", "m2", "m3")
    ok(pia.mutate("campaigns.create", CAMPAIGN))
    ok(pol.mutate("campaigns.duplicate", {"campaignId": "launch", "id": "again"}))
    _live(pol, pol, "again")
    token = str(ok(pol.query("campaigns.previewDispatch", {"campaignId": "again"}))["previewToken"])
    refused = pol.mutate("campaigns.dispatch", {"campaignId": "again", "expectedPreviewToken": token})
    assert error_code(refused) == "FORBIDDEN" and "another publisher than pol and pia" in _message(refused)

    # pia wrote what the copy says: she never touched the copy, yet her approval would not count.
    by_author = pia.mutate("campaigns.approveDispatch", {"campaignId": "again", "previewToken": token})
    assert error_code(by_author) == "FORBIDDEN" and "another publisher than pol and pia" in _message(
        by_author
    )
    assert _approvals(graph) == 0
    ok(quy.mutate("campaigns.approveDispatch", {"campaignId": "again", "previewToken": token}))
    ok(pol.mutate("campaigns.dispatch", {"campaignId": "again", "expectedPreviewToken": token}))

    copied = [e for e in _trail(graph) if e["procedure"] == "campaigns.duplicate"]
    assert [(e["actor"], json.loads(e["detail"])) for e in copied] == [("pol", {"editors": ["pia"]})]
    approved = [e for e in _trail(graph) if e["procedure"] == "campaigns.approveDispatch"]
    assert [(e["actor"], json.loads(e["detail"])["notBy"]) for e in approved] == [("quy", ["pol", "pia"])]


def test_a_test_wave_waits_for_the_second_publisher_like_the_send_it_starts(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """The review's test wave goes through the approval as its send does: the preview's token is the
    same with the experiment, the requester's send with it is FORBIDDEN (nothing started), and once
    another publisher approved that preview the same send starts testing."""
    settings = base_settings.model_copy(update={"campaign_experiment_min_per_variant": 1})
    members = [f"w{i}" for i in range(12)]
    with _approval_api(settings, graph, tmp_path) as api:
        pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
        _profiles(api, *members)
        variants = [{"id": "A"}, {"id": "B", "message": {"title": "B"}}]
        ok(pia.mutate("campaigns.create", {**CAMPAIGN, "variants": variants}))
        source = {"type": "profileIds", "profileIds": members}
        ok(pia.mutate("campaigns.addAudience", {"campaignId": "launch", "source": source}))
        ok(pia.mutate("campaigns.setStatus", {"campaignId": "launch", "status": "live"}))
        experiment = {"testShare": 0.5, "metric": "clicked", "decideAfterSeconds": 3600}
        preview = ok(
            pia.query("campaigns.previewDispatch", {"campaignId": "launch", "experiment": experiment})
        )
        assert preview["previewToken"] == pia.token() and min(preview["testWave"].values()) >= 1
        send = {
            "campaignId": "launch",
            "expectedPreviewToken": preview["previewToken"],
            "experiment": experiment,
        }
        refused = pia.mutate("campaigns.dispatch", send)
        assert error_code(refused) == "FORBIDDEN" and "approveDispatch" in _message(refused)
        assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0
        ok(
            pol.mutate(
                "campaigns.approveDispatch", {"campaignId": "launch", "previewToken": preview["previewToken"]}
            )
        )
        ok(pia.mutate("campaigns.dispatch", send))
    rows = graph.run("MATCH (d:Dispatch) RETURN d.phase AS phase, d.approvedBy AS by")
    assert {(r["phase"], r["by"]) for r in rows} == {("testing", "pol")}
