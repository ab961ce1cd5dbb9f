"""A campaign's priority through the API: who may make one critical, where the tenant forbids it, the
trail, the review, and that a critical send still needs a second publisher where the tenant asks.

The tenant ``alpha`` asks approval of sends to two or more (``test_approval.py``'s set-up).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
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
)
from tests.support.api import TrpcClient, error_code, ok


@pytest.fixture
def api(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[TrpcClient]:
    with _approval_api(base_settings, graph, tmp_path) as client:
        yield client


def _platform(api: TrpcClient, path: str, data: dict[str, Any]) -> Any:
    token = mint_token(api.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
    return api.http.post(f"/trpc/{path}", json=data, headers={"authorization": f"Bearer {token}"})


def test_critical_needs_a_publisher_and_the_tenants_allowance_and_still_a_second_publisher(
    api: TrpcClient, graph: Graph
) -> None:
    author, pia, pol = (
        Person(api, "ana", "author"),
        Person(api, "pia", "publisher"),
        Person(api, "pol", "publisher"),
    )
    _profiles(api, "m1", "m2")

    # An author may create and edit campaigns, but not critical ones: FORBIDDEN naming the role.
    refused = author.mutate("campaigns.create", {**CAMPAIGN, "priority": "critical"})
    assert error_code(refused) == "FORBIDDEN" and "publisher" in _message(refused)
    created = ok(author.mutate("campaigns.create", {**CAMPAIGN, "priority": "bulk"}))
    assert created["priority"] == "bulk"
    refused = author.mutate("campaigns.update", {"campaignId": "launch", "priority": "critical"})
    assert error_code(refused) == "FORBIDDEN" and "publisher" in _message(refused)
    ok(author.mutate("campaigns.update", {"campaignId": "launch", "description": "an author's edit"}))
    made = ok(pia.mutate("campaigns.update", {"campaignId": "launch", "priority": "critical"}))
    assert made["priority"] == "critical"
    # An author's edit that sends the definition back whole, critical as it is, is not a change of it.
    kept = {"campaignId": "launch", "priority": "critical", "description": "kept as it was"}
    assert ok(author.mutate("campaigns.update", kept))["priority"] == "critical"
    # The trail names the priority set and changed, with who did it.
    details = [(e["actor"], _json(e["detail"])) for e in _trail(graph) if e["detail"]]
    assert [(actor, d["priority"]) for actor, d in details if "priority" in d] == [
        ("ana", {"from": None, "to": "bulk"}),
        ("pia", {"from": "bulk", "to": "critical"}),
    ]

    # A critical send still needs a second publisher where the tenant's policy asks for one.
    source = {"type": "profileIds", "profileIds": ["m1", "m2"]}
    ok(author.mutate("campaigns.addAudience", {"campaignId": "launch", "source": source}))
    ok(pia.mutate("campaigns.setStatus", {"campaignId": "launch", "status": "live"}))
    token = pia.token()
    refused = pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    assert error_code(refused) == "FORBIDDEN" and "campaigns.approveDispatch" in _message(refused)

    # The tenant forbids critical campaigns: making one and dispatching one are refused, naming why.
    forbidding = {"tenantId": TENANT, "allowCritical": False}
    assert ok(_platform(api, "tenants.update", forbidding))["allowCritical"] is False
    refused = pia.mutate("campaigns.create", {**CAMPAIGN, "id": "other", "priority": "critical"})
    assert error_code(refused) == "FORBIDDEN" and "allowCritical" in _message(refused)
    ok(pol.mutate("campaigns.approveDispatch", {"campaignId": "launch", "previewToken": token}))
    refused = pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token})
    assert error_code(refused) == "FORBIDDEN" and "allowCritical" in _message(refused)
    assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0


def test_a_tenants_weight_is_kept_within_its_bounds(api: TrpcClient) -> None:
    assert ok(_platform(api, "tenants.update", {"tenantId": TENANT, "name": "Alpha"}))["weight"] == 1
    assert ok(_platform(api, "tenants.update", {"tenantId": TENANT, "weight": 3}))["weight"] == 3
    refused = _platform(api, "tenants.update", {"tenantId": TENANT, "weight": 0})
    assert error_code(refused) == "BAD_REQUEST"
    assert ok(_platform(api, "tenants.update", {"tenantId": TENANT, "name": "Alpha"}))["weight"] == 3


def _json(detail: Any) -> Any:
    return json.loads(detail) if isinstance(detail, str) else detail
