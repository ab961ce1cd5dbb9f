"""What a signed-in user sees and records: ``getMyCampaigns`` and ``recordEvent``.

Reads consume nothing: showing a campaign is recorded only when the client says so. Every write takes
the caller's profile lock first (DESIGN.md), which is what makes 20 devices recording at once produce
one CAMPAIGN_STATE relationship with exact counts. Users only ever see the public projection
(``CampaignCard``) plus their own state: never audiences, stats or other users' data.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.campaigns.audience import Policy
from campaign_engine.domain.campaign import Message
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.policy import policy_query

__all__ = [
    "CampaignCard",
    "EngagementState",
    "EventKind",
    "EventResult",
    "MyCampaign",
    "MyCampaigns",
    "card_from_node",
    "my_campaigns",
    "record_event",
]

EventKind = Literal["shown", "clicked", "dismissed"]
_EVENTS: frozenset[str] = frozenset({"shown", "clicked", "dismissed"})


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class CampaignCard(_Out):
    """The public projection of a campaign: what any eligible user may read."""

    campaign_id: Annotated[str, Field(alias="campaignId")]
    name: str
    message: Message | None
    starts_at: Annotated[str | None, Field(alias="startsAt")]
    ends_at: Annotated[str | None, Field(alias="endsAt")]


class EngagementState(_Out):
    shown_first_at: Annotated[str | None, Field(alias="shownFirstAt")] = None
    shown_last_at: Annotated[str | None, Field(alias="shownLastAt")] = None
    shown_count: Annotated[int, Field(alias="shownCount")] = 0
    clicked_first_at: Annotated[str | None, Field(alias="clickedFirstAt")] = None
    clicked_last_at: Annotated[str | None, Field(alias="clickedLastAt")] = None
    clicked_count: Annotated[int, Field(alias="clickedCount")] = 0
    dismissed_first_at: Annotated[str | None, Field(alias="dismissedFirstAt")] = None
    dismissed_last_at: Annotated[str | None, Field(alias="dismissedLastAt")] = None
    dismissed_count: Annotated[int, Field(alias="dismissedCount")] = 0
    last_action_id: Annotated[str | None, Field(alias="lastActionId")] = None

    @classmethod
    def from_rel(cls, props: dict[str, Any] | None) -> EngagementState | None:
        if props is None:
            return None
        names = {field.alias for field in cls.model_fields.values()}
        return cls.model_validate({key: value for key, value in props.items() if key in names})


class MyCampaign(CampaignCard):
    state: EngagementState | None = None
    test_id: Annotated[str | None, Field(alias="testId")] = None


class MyCampaigns(_Out):
    campaigns: list[MyCampaign]


class EventResult(_Out):
    recorded: bool
    state: EngagementState | None = None


def card_from_node(node: dict[str, Any]) -> CampaignCard:
    definition = json.loads(node["definition"])
    return CampaignCard(
        campaign_id=node["id"],
        name=definition["name"],
        message=definition.get("message"),
        starts_at=node.get("startsAt"),
        ends_at=node.get("endsAt"),
    )


def _order_key(row: dict[str, Any]) -> tuple[int, str, str]:
    campaign = row["campaign"]
    # Higher message priority first, then the earliest start (no start = started first), then id.
    return (-int(campaign.get("messagePriority") or 0), campaign.get("startsAt") or "", campaign["id"])


def my_campaigns(graph: Graph, *, profile_id: str, include_tests: bool, policy: Policy) -> MyCampaigns:
    """The caller's visible campaigns (pending self-tests first for an admin); writes nothing."""
    now = format_ts(policy.now)

    def tx_fn(tx: Tx) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        rows = [r.data() for r in tx.run(policy_query("my_campaigns"), profileId=profile_id, now=now,
                                         **policy.params())]  # fmt: skip
        tests = [r.data() for r in tx.run(query("my_tests"), profileId=profile_id)] if include_tests else []
        return rows, tests

    rows, tests = graph.read(tx_fn)
    out = [
        MyCampaign.model_validate({**json.loads(test["snapshot"]), "campaignId": test["campaignId"],
                                   "testId": test["testId"]})
        for test in tests
    ]  # fmt: skip
    for row in sorted(rows, key=_order_key):
        card = card_from_node(row["campaign"])
        out.append(MyCampaign(**card.model_dump(), state=EngagementState.from_rel(row["state"])))
    return MyCampaigns(campaigns=out)


@cache
def _record_query(event: str) -> str:
    if event not in _EVENTS:  # the event name becomes part of the query text: closed set only
        raise ValueError(f"unknown event {event!r}")
    return policy_query("record_event").replace("{{EVENT}}", event)


def record_event(
    graph: Graph,
    *,
    profile_id: str,
    campaign_id: str,
    event: EventKind,
    action_id: str | None,
    test_id: str | None,
    policy: Policy,
) -> EventResult:
    """One engagement event (not an idempotent retry: repeated calls count again).

    With ``test_id`` it only acknowledges that self-test: the snapshot goes away when the id is the
    current one, and no engagement state is written either way.
    """
    now = format_ts(policy.now)

    def tx_fn(tx: Tx) -> EventResult:
        if not lock_profiles(tx, [profile_id]):
            raise NotFound(f"campaign '{campaign_id}' not found")
        if test_id is not None:
            record = tx.run(query("ack_test"), profileId=profile_id, campaignId=campaign_id,
                            testId=test_id).single()  # fmt: skip
            return EventResult(recorded=record is not None and int(record["removed"]) > 0)
        record = tx.run(
            _record_query(event),
            profileId=profile_id,
            campaignId=campaign_id,
            now=now,
            actionId=action_id,
            **policy.params(),
        ).single()
        if record is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        return EventResult(recorded=True, state=EngagementState.from_rel(dict(record["state"])))

    return graph.write(tx_fn)
