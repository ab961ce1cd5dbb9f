"""``audit.list``: pages by key, newest first, with filters; refuses bad input; admins only; seeks its
indexes in order and never sorts.

Every mutation is called through the real API (tRPC over HTTP, real graph, real local queue)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, list_statement, record_audit
from campaign_engine.graph.graph import Graph, Tx
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, error_code, ok
from tests.support.delivery import NOW


def _seed(graph: Graph) -> list[dict[str, Any]]:
    """Ten entries over two campaigns and two actors, three of them at one instant (the id orders them)."""
    seeded = []
    for i, (campaign, actor, minute) in enumerate(
        [("a", "x", 0), ("b", "x", 1), ("a", "y", 2), ("a", "x", 3), ("b", "y", 3), ("a", "y", 3),
         (None, "x", 4), ("a", "y", 5), ("b", "x", 6), ("a", "x", 7)]
    ):  # fmt: skip
        audit = AuditContext.begin(
            actor=actor,
            procedure="p",
            request_id=f"r{i}",
            now=NOW + timedelta(minutes=minute),
            tenant_id="default",
        )
        node = None if campaign is None else {"id": campaign, "createdAt": "t"}

        def tx_fn(tx: Tx, audit: AuditContext, node: dict[str, Any] | None) -> None:
            record_audit(tx, audit, target_type="campaign", target_id="t", campaign=node)

        graph.write(tx_fn, audit, node)
        seeded.append({"id": audit.entry_id, "at": audit.at, "campaignId": campaign, "actor": actor})
    return sorted(seeded, key=lambda e: (e["at"], e["id"]), reverse=True)


def test_list_pages_by_key_newest_first_and_filters(api: TrpcClient, graph: Graph) -> None:
    seeded = _seed(graph)

    def walk(**filters: Any) -> list[str]:
        ids, cursor = [], None
        while True:
            page = ok(
                api.query("audit.list", {**filters, "limit": 2, "cursor": cursor}, as_=ADMIN_ID, admin=True)
            )
            ids += [record["id"] for record in page["records"]]
            assert page["hasMore"] == (page["cursor"] is not None)
            if not page["hasMore"]:
                return ids
            cursor = page["cursor"]

    assert walk() == [e["id"] for e in seeded]
    assert walk(campaignId="a") == [e["id"] for e in seeded if e["campaignId"] == "a"]
    assert walk(actor="y") == [e["id"] for e in seeded if e["actor"] == "y"]
    assert walk(campaignId="b", actor="x") == [
        e["id"] for e in seeded if (e["campaignId"], e["actor"]) == ("b", "x")
    ]
    since, until = format_ts(NOW + timedelta(minutes=3)), format_ts(NOW + timedelta(minutes=6))
    assert walk(**{"from": since, "to": "2026-03-01T13:06:00+01:00"}) == [
        e["id"] for e in seeded if since <= e["at"] < until
    ]
    assert walk(actor="x", **{"from": since}) == [
        e["id"] for e in seeded if e["actor"] == "x" and since <= e["at"]
    ]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ({"cursor": "not-a-cursor"}, "BAD_REQUEST"),
        ({"cursor": "2026-03-01T12:00:00.000000Z|abc"}, "BAD_REQUEST"),  # a time, but no entry id
        ({"cursor": "2026-02-30T12:00:00.000000Z|" + "0" * 32}, "BAD_REQUEST"),  # no such day
        ({"from": "2026-03-02T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "BAD_REQUEST"),
        ({"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "BAD_REQUEST"),
        ({"from": "yesterday"}, "BAD_REQUEST"),
        ({"limit": 0}, "BAD_REQUEST"),
        ({"campaignId": ""}, "BAD_REQUEST"),
    ],
)
def test_list_refuses_bad_input(api: TrpcClient, data: dict[str, Any], code: str) -> None:
    assert error_code(api.query("audit.list", data, as_=ADMIN_ID, admin=True)) == code


def test_list_is_for_admins_only(api: TrpcClient) -> None:
    assert error_code(api.query("audit.list", {}, as_="m1")) == "FORBIDDEN"
    assert error_code(api.query("audit.list", {})) == "UNAUTHORIZED"


@pytest.mark.parametrize(
    ("lead", "index"),
    [("campaign", "(campaignId, orderKey)"), ("actor", "(actor, orderKey)"), ("all", "(tenantId, orderKey)")],
)
def test_list_seeks_its_index_in_order_and_never_sorts(graph: Graph, lead: Any, index: str) -> None:
    _seed(graph)
    params = {"tenantId": "default", "campaignId": "a", "actor": "x", "since": "", "until": "~", "after": "~"}
    params["limit"] = 3
    with graph.driver.session(database=graph.database) as session:
        plan = session.run("EXPLAIN " + list_statement(lead), params).consume().plan
    operators: list[str] = []

    def walk(node: Any) -> None:
        operators.append(f"{node['operatorType']} {node.get('args', {}).get('Details', '')}")
        for child in node.get("children", []):
            walk(child)

    walk(plan)
    assert any("IndexSeek" in op and index in op for op in operators), operators
    assert not any(
        op.split()[0].startswith(("Sort", "Top", "PartialSort", "PartialTop")) for op in operators
    ), operators
    assert not any("Scan" in op for op in operators), operators
