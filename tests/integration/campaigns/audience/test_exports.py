"""Streamed exports on the real app and graph: a campaign emailed through the worker
to the loopback Postmark stand-in, engagement recorded through the API, then its recipients exported
and checked against getStats, the stand-in's records and the graph; the audit trail against audit.list."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.api.exports import _cell
from campaign_engine.campaigns.audience.exports import RECIPIENT_COLUMNS
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import NOW, StepClock, drain, local_queues
from tests.support.email import (
    accepted_to,
    add_email_members,
    address_of,
    email_settings,
    make_email_campaign,
)
from tests.support.plans import operators
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=10_000)

ADULTS = [f"r{i:04d}" for i in range(2300)]  # three export pages of 1,000
MINORS = ["kid1", "kid2"]
SHOWN = ["r0001", "r0500", "r2299"]


@pytest.fixture
def emailed_campaign(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> Settings:
    """Campaign c1 (in-app and email) sent to every eligible member through the real worker."""
    standin.reset()
    settings = email_settings(base_settings, standin.url, standin.token)
    make_email_campaign(graph, channels=["inApp", "email"], message={"title": "Hi"})
    add_email_members(graph, "c1", ADULTS)
    add_email_members(graph, "c1", MINORS, dob="2015-06-01")
    queues = local_queues(tmp_path / "q.sqlite3")
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=preview.preview_token, now=NOW,
             settings=DISPATCH_SETTINGS)  # fmt: skip
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    return settings


def _admin(api: TrpcClient, *, tenant: str | None = None, roles: list[str] | None = None) -> dict[str, str]:
    sub = ADMIN_ID if tenant is None else f"{tenant}-user"
    token = mint_token(
        api.settings,
        profile_id=sub,
        scope=ADMIN_SCOPE if tenant is None else "",
        tenant_id=tenant,
        roles=roles,
    )
    return {"authorization": f"Bearer {token}"}


def test_recipients_export_matches_stats_the_provider_and_the_graph(
    emailed_campaign: Settings, graph: Graph, standin: PostmarkStandin
) -> None:
    with api_client(emailed_campaign, graph) as api:
        for user in SHOWN:
            ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_=user))
        ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "clicked"}, as_=SHOWN[0]))
        stats = ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))
        answer = api.http.get("/exports/campaigns/c1/recipients.csv", headers=_admin(api))
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/csv")
        assert answer.headers["content-disposition"] == 'attachment; filename="c1-recipients.csv"'
        assert answer.headers["cache-control"] == "no-store"
        rows = list(csv.DictReader(io.StringIO(answer.text)))
        ndjson = api.http.get("/exports/campaigns/c1/recipients.ndjson", headers=_admin(api))
        lines = [json.loads(line) for line in ndjson.text.splitlines()]

    assert list(rows[0]) == list(RECIPIENT_COLUMNS)
    assert [r["profileId"] for r in rows] == sorted(ADULTS + MINORS)  # every member once, in order
    emailed = sorted(r["profileId"] for r in rows if r["emailedAt"])
    assert [address_of(p) for p in emailed] == accepted_to(standin)  # what the provider accepted
    assert len(emailed) == stats["emailed"] == len(ADULTS)
    assert {r["emailOutcome"] for r in rows if r["emailedAt"]} == {"accepted"}
    assert sum(r["eligibleNow"] == "true" for r in rows) == stats["audience"] == len(ADULTS)
    assert {r["profileId"] for r in rows if r["eligibleNow"] == "false"} == set(MINORS)
    assert sorted(r["profileId"] for r in rows if r["shown"] != "0") == SHOWN
    assert sum(r["shown"] != "0" for r in rows) == stats["shown"]
    assert [r["profileId"] for r in rows if r["clicked"] != "0"] == [SHOWN[0]]
    assert all(r["notifiedAt"] == "" and r["bouncedAt"] == "" for r in rows)

    assert [line["profileId"] for line in lines] == [r["profileId"] for r in rows]
    by_id = {line["profileId"]: line for line in lines}
    assert by_id[SHOWN[0]]["shown"] == 1 and by_id["kid1"]["eligibleNow"] is False
    assert by_id["kid1"]["emailedAt"] is None


def test_the_export_page_is_an_ordered_index_seek(graph: Graph) -> None:
    plan = graph.driver.execute_query(
        "EXPLAIN " + statement("export_recipients"),
        {"campaignId": "c1", "cursor": "", "limit": 1000, **policy_params(NOW, 18)},
        database_=graph.database,
    ).summary.plan
    assert plan is not None
    ops = operators(plan)
    assert "DirectedRelationshipIndexSeek" in ops, ops
    assert "Sort" not in ops and "Top" not in ops and "Skip" not in ops, ops


def test_refusals_come_before_the_first_byte(base_settings: Settings, graph: Graph) -> None:
    make_email_campaign(graph, tenant_id="beta")
    with api_client(base_settings, graph) as api:
        cases = [
            ("/exports/campaigns/c1/recipients.csv", {}, 401),
            ("/exports/campaigns/c1/recipients.csv", _admin(api, tenant="alpha", roles=["viewer"]), 404),
            ("/exports/campaigns/c1/recipients.csv", _admin(api, tenant="beta"), 403),  # no role in beta
            ("/exports/campaigns/c1/recipients.xlsx", _admin(api), 404),
            ("/exports/audit.csv?from=yesterday", _admin(api), 400),
            ("/exports/audit.csv?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", _admin(api), 400),
        ]
        for url, headers, status in cases:
            answer = api.http.get(url, headers=headers)
            assert answer.status_code == status, (url, answer.text)
            assert answer.json()["error"]["data"]["httpStatus"] == status
        viewer = _admin(api, tenant="beta", roles=["viewer"])
        assert api.http.get("/exports/campaigns/c1/recipients.csv", headers=viewer).status_code == 200


def test_audit_export_is_audit_list_in_a_file(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        for i in range(5):
            campaign = {"id": f"a{i}", "name": f"A{i}", "channels": ["inApp"], "message": {"title": "Hi"}}
            ok(api.mutate("campaigns.create", campaign, as_=ADMIN_ID, admin=True))
        listed = ok(api.query("audit.list", {"limit": 200}, as_=ADMIN_ID, admin=True))["records"]
        answer = api.http.get("/exports/audit.csv", headers=_admin(api))
        assert answer.headers["content-disposition"] == 'attachment; filename="audit-default.csv"'
        rows = list(csv.DictReader(io.StringIO(answer.text)))
        middle = listed[2]["at"]
        since = api.http.get("/exports/audit.csv", params={"from": middle}, headers=_admin(api))
        later = list(csv.DictReader(io.StringIO(since.text)))
    assert [(r["at"], r["procedure"], r["targetId"]) for r in rows] == [
        (e["at"], e["procedure"], e["targetId"]) for e in listed
    ]
    assert len(rows) == 5
    assert [r["at"] for r in later] == [e["at"] for e in listed if e["at"] >= middle]


@pytest.mark.parametrize(
    ("value", "cell"),
    [("=HYPERLINK(1)", "'=HYPERLINK(1)"), ("+1", "'+1"), ("-x", "'-x"), ("@sum", "'@sum"),
     ("plain", "plain"), (None, ""), (True, "true"), (3, "3"), ({"b": 1, "a": [2]}, '{"a":[2],"b":1}')],
)  # fmt: skip
def test_a_cell_is_never_a_formula(value: Any, cell: str) -> None:
    assert _cell(value) == cell
