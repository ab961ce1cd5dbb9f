"""Suppressions: the admin procedures, and the one eligibility rule that applies them wherever email
eligibility is computed (preview, page walk and claim, self-test) through an index seek."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.errors import BadRequest
from campaign_engine.feedback.events import AddressEvent, Feedback
from campaign_engine.feedback.store import FeedbackStore
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.wiring import build_email_self_tester
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import NOW, StepClock
from tests.support.email import add_email_members, address_of, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)


def suppress(graph: Graph, address: str, action: Any = "hard_bounce", key: str | None = None) -> None:
    store = FeedbackStore(graph, soft_bounce_limit=3, soft_bounce_window=timedelta(days=1), clock=lambda: NOW)
    event = AddressEvent(address=address, action=action, detail="test")
    store.apply(Feedback(key or f"test:{address}:{action}", "postmark", (event,)))


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph, clock=lambda: NOW) as client:
        yield client


def test_list_filters_by_reason_and_pages_by_address(api: TrpcClient, graph: Graph) -> None:
    seeded = {"e": "hard_bounce", "a": "complaint", "c": "hard_bounce", "b": "hard_bounce", "d": "complaint"}
    for name, action in seeded.items():
        suppress(graph, f"{name}@x.test", action)

    def page(**data: Any) -> dict[str, Any]:
        return dict(ok(api.query("suppressions.list", data, as_=ADMIN_ID, admin=True)))

    first = page(limit=2)
    assert [r["address"] for r in first["records"]] == ["a@x.test", "b@x.test"]
    assert first["hasMore"] and first["cursor"] == "b@x.test"
    second = page(limit=2, cursor=first["cursor"])
    last = page(limit=2, cursor=second["cursor"])
    assert [r["address"] for r in second["records"] + last["records"]] == ["c@x.test", "d@x.test", "e@x.test"]
    assert not last["hasMore"] and last["cursor"] is None
    complaints = page(reason="spam_complaint")
    assert [(r["address"], r["reason"]) for r in complaints["records"]] == [
        ("a@x.test", "spam_complaint"),
        ("d@x.test", "spam_complaint"),
    ]
    record = complaints["records"][0]
    assert record["source"] == "postmark" and record["suppressedAt"] == "2026-03-01T12:00:00.000000Z"
    assert (
        error_code(api.query("suppressions.list", {"reason": "bored"}, as_=ADMIN_ID, admin=True))
        == "BAD_REQUEST"
    )
    assert error_code(api.query("suppressions.list", {}, as_="someone")) == "FORBIDDEN"


def test_get_and_remove_by_any_spelling_of_the_address(api: TrpcClient, graph: Graph) -> None:
    suppress(graph, "Gone@Example.com")
    got = ok(api.query("suppressions.get", {"address": "GONE@example.COM"}, as_=ADMIN_ID, admin=True))
    assert (got["address"], got["reason"]) == ("gone@example.com", "hard_bounce")
    missing = api.query("suppressions.get", {"address": "kept@example.com"}, as_=ADMIN_ID, admin=True)
    assert error_code(missing) == "NOT_FOUND"
    assert error_code(api.query("suppressions.get", {"address": "no-at-sign"}, as_=ADMIN_ID, admin=True)) == (
        "BAD_REQUEST"
    )
    assert (
        error_code(api.mutate("suppressions.remove", {"address": "gone@example.com"}, as_="someone"))
        == "FORBIDDEN"
    )
    assert ok(
        api.mutate("suppressions.remove", {"address": "gone@EXAMPLE.com"}, as_=ADMIN_ID, admin=True)
    ) == {"ok": True}
    again = api.mutate("suppressions.remove", {"address": "gone@example.com"}, as_=ADMIN_ID, admin=True)
    assert error_code(again) == "NOT_FOUND"
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:EmailSoftBounces RETURN count(n) AS n")[0]["n"]
        == 0
    )


def test_preview_counts_leave_suppressed_addresses_out_until_removed(api: TrpcClient, graph: Graph) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["a", "b", "c"])
    add_email_members(
        graph, "c1", ["d"], emails=[{"value": "D@Example.com", "isPrimary": True, "isVerified": True}]
    )

    def email_recipients() -> int:
        return preview_dispatch(
            graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS
        ).email_recipient_count

    assert email_recipients() == 4
    suppress(graph, address_of("b"))
    suppress(graph, "d@example.COM", "complaint")  # stored in another case: still the same address
    assert email_recipients() == 2
    ok(api.mutate("suppressions.remove", {"address": address_of("b")}, as_=ADMIN_ID, admin=True))
    assert email_recipients() == 3


def test_an_admin_with_a_suppressed_address_gets_no_self_test(base_settings: Settings, graph: Graph) -> None:
    with PostmarkStandin() as postmark:
        settings = email_settings(base_settings, postmark.url, postmark.token)
        tester = build_email_self_tester(settings, graph, clock=StepClock())
        assert tester is not None
        try:
            make_email_campaign(graph)
            add_email_members(graph, "c1", [ADMIN_ID], member=False)
            suppress(graph, address_of(ADMIN_ID))
            with pytest.raises(BadRequest):
                send_test_to_me(
                    graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester}
                )
            assert postmark.accepted == []
        finally:
            tester._provider.close()


def _db_hits(plan: Any) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(child) for child in plan.get("children", []))


def test_the_suppression_rule_seeks_its_index_and_never_scans(graph: Graph) -> None:
    """The cost of the eligibility rule does not grow with the number of suppressed addresses: each
    candidate address is one seek of the unique email_suppression_address index (PROFILE counts the
    nested subquery's work, so a label scan would show here)."""
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["a", "b", "c"])
    params = policy_params(datetime.now(UTC), 18)

    def hits(name: str, **extra: Any) -> int:
        with graph.driver.session(database=graph.database) as session:
            text = statement(name)
            # A statement that does not pin its plan (replan=skip) is planned afresh for each measure:
            # a replan between the two (the statistics moved) would otherwise compare two plans.
            head = "PROFILE " if "replan=skip" in text else "CYPHER replan=force PROFILE "
            result = session.run(head + text, {**params, **extra})
            list(result)
            return _db_hits(result.consume().profile)

    def measure() -> tuple[int, int]:
        return hits(
            "dispatch_preview", campaignId="c1", cursor="", limit=100, notify=False, email=True
        ), hits("email_test_recipient", profileId="a", campaignId="c1")

    graph.run("UNWIND range(1, 10) AS i CREATE (:EmailSuppression {address: 'x' + i + '@example.com'})")
    few = measure()
    graph.run("UNWIND range(11, 3000) AS i CREATE (:EmailSuppression {address: 'x' + i + '@example.com'})")
    many = measure()
    # A scan would read each of the 2,990 new suppressions at least once; a fresh plan may reorder the
    # other lookups by a few hits, which is not growth.
    assert all(after - before < 50 for before, after in zip(few, many, strict=True)), (few, many)


def test_feedback_finds_its_send_through_the_relationship_index(graph: Graph) -> None:
    for name in ("feedback_link", "feedback_profiles"):
        with graph.driver.session(database=graph.database) as session:
            params = {"messageIds": ["m-1", "m-2"], "values": ["a@x.test"], "bounced": True, "now": "n"}
            params["complained"] = False
            plan = session.run("EXPLAIN " + statement(name), params).consume().plan
        operators: list[str] = []

        def walk(node: Any, found: list[str] = operators) -> None:
            found.append(f"{node['operatorType']} {node.get('args', {}).get('Details', '')}")
            for child in node.get("children", []):
                walk(child)

        walk(plan)
        assert any("RelationshipIndexSeek" in op and "emailProviderMessageId" in op for op in operators), (
            operators
        )
        assert not any("Scan" in op for op in operators), operators
