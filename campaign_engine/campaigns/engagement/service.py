"""What a signed-in user sees and records: ``getMyCampaigns`` and ``recordEvent``.

Reads consume nothing: showing a campaign is recorded only when the client says so. Every write takes the
caller's profile lock first (docs/architecture.md), which is what makes 20 devices recording at once produce
one CAMPAIGN_STATE relationship with exact counts. Users only ever see the public projection
(``CampaignCard``) plus their own state: never audiences, stats or other users' data.

These are the hottest procedures (every app start), so the rules are written for many callers at once:
``my_campaigns_of`` reads any number of profiles in one statement and ``record_events`` writes any
number of events in one transaction. ``EngagementService`` feeds them the calls that arrive together
in one API process (``graph/coalesce.py``); the single-call functions are the same code with one item.
Cards are cached per process by (campaign id, updatedAt): a definition never changes without a new
updatedAt, so a cached card is never stale, and the hot read need not load or parse definitions.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.campaigns.engagement.guardian_cards import (
    GUARDIAN_ROW,
    routed_pairs,
    visible_as_guardian,
)
from campaign_engine.campaigns.engagement.segment_reach import matched_pairs, visible_by_segment
from campaign_engine.domain.ab_variants import (
    Assignment,
    TestWave,
    assigned_variant,
    served_variant,
    wire_variant_content,
)
from campaign_engine.domain.campaign import Message
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.guardian_copy import guardian_source
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.variants import served_locale, wire_languages
from campaign_engine.graph.coalesce import Coalescer
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Statements, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.rules.policy import Policy, policy_query

__all__ = [
    "CampaignCard",
    "CardCache",
    "EngagementService",
    "EngagementState",
    "EventCall",
    "EventKind",
    "EventResult",
    "MyCampaign",
    "MyCampaigns",
    "card_from_node",
    "my_campaigns",
    "my_campaigns_of",
    "record_event",
    "record_events",
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
    locale: str | None = Field(
        default=None, description="the language of `message`: the best match for the reader's locale"
    )
    variant_id: Annotated[str | None, Field(alias="variantId")] = Field(
        default=None, description="the A/B content variant of `message` this reader is assigned (issue 26)"
    )
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
        # Other properties of the relationship (delivery stamps) are not the caller's business:
        # validation ignores them (pydantic's default for unknown keys).
        return None if props is None else cls.model_validate(props)


class MyCampaign(CampaignCard):
    state: EngagementState | None = None
    test_id: Annotated[str | None, Field(alias="testId")] = None


class MyCampaigns(_Out):
    campaigns: list[MyCampaign]


class EventResult(_Out):
    recorded: bool
    state: EngagementState | None = None


def card_from_node(
    node: dict[str, Any], requested_locale: str | None = None, profile_id: str | None = None
) -> CampaignCard:
    """The card in the reader's language (``domain/variants.py:served_locale``) and, for a reader
    ``profile_id``, their A/B content variant (``domain/ab_variants.py:assigned_variant``)."""
    definition = json.loads(node["definition"])
    tag = served_locale(wire_languages(definition, "message"), requested_locale)
    variant_id = None
    if profile_id is not None:
        variant_id = assigned_variant(
            definition.get("variants"), campaign_id=node["id"], profile_id=profile_id
        )
    return _card(node, definition, tag, variant_id)


def _card(
    node: dict[str, Any], definition: Mapping[str, Any], tag: str, variant_id: str | None
) -> CampaignCard:
    return CampaignCard(
        campaign_id=node["id"],
        name=definition["name"],
        message=wire_variant_content(definition, "message", tag, variant_id),
        locale=tag,
        variant_id=variant_id,
        starts_at=node.get("startsAt"),
        ends_at=node.get("endsAt"),
    )


@dataclass(frozen=True)
class _Cards:
    """One campaign version's cards, one per (language its message is in, content variant)."""

    campaign_id: str
    priority: int
    languages: list[str]
    assignment: Assignment
    by_language: dict[tuple[str, str | None], MyCampaign]
    guardian_languages: list[str]
    guardian: dict[str, MyCampaign]
    """Issue 27 item 3: the guardian copy's message card by language (empty: guardians read the
    campaign's own cards, as anyone)."""

    def for_reader(
        self, locale: str | None, profile_id: str, ab_test: str | None = None, *, routed: bool = False
    ) -> tuple[int, MyCampaign] | None:
        """The reader's card; None while they wait outside an undecided test wave (issue 26: no card
        until the decision, then the winner's), so nobody sees two variants. A ``routed`` guardian reads
        the guardian copy where it has a message (never in a test: an experiment is refused there)."""
        if routed and self.guardian:
            return self.priority, self.guardian[served_locale(self.guardian_languages, locale)]
        served = (
            replace(self.assignment, wave=TestWave.of(ab_test)) if self.assignment.bounds else self.assignment
        )
        variant_id = served.variant_of(campaign_id=self.campaign_id, profile_id=profile_id)
        if served.bounds and variant_id is None:
            return None
        return self.priority, self.by_language[(served_locale(self.languages, locale), variant_id)]


class CardCache:
    """Campaign cards by (id, updatedAt), as stateless ``MyCampaign`` values in each language of the
    message; bounded, shared by the threads of one process. Cached values are never mutated: a caller
    with state gets a copy."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._cards: dict[tuple[str, str], _Cards] = {}
        self._max = max_entries

    def fetch(self, tx: Statements, versions: Iterable[tuple[str, str]]) -> dict[str, _Cards]:
        """Each campaign's cards; loads only the versions not cached yet."""
        wanted = set(versions)
        cached = ((cid, self._cards.get((cid, at))) for cid, at in wanted)  # get(): another thread may clear
        found = {cid: entry for cid, entry in cached if entry is not None}
        missing = sorted({cid for cid, _ in wanted} - found.keys())
        if missing:
            if len(self._cards) + len(missing) > self._max:
                self._cards.clear()  # crude but bounded; refilled from the next reads
            for record in tx.run(query("campaign_cards"), campaignIds=missing):
                node = dict(record["campaign"])
                definition = json.loads(node["definition"])
                languages = wire_languages(definition, "message")
                assignment = Assignment.of(definition.get("variants"))
                arms: list[str | None] = [vid for vid, _, _ in assignment.bounds] or [None]
                cards = {
                    (tag, vid): MyCampaign.model_validate(
                        _card(node, definition, tag, vid).model_dump(by_alias=True)
                    )
                    for tag in languages
                    for vid in arms
                }
                source, own = guardian_source(definition, "message")
                guardian_languages = wire_languages(source, "message") if own else []
                guardian = {
                    tag: MyCampaign.model_validate(
                        _card(node, {**source, "name": definition["name"]}, tag, None).model_dump(
                            by_alias=True
                        )
                    )
                    for tag in guardian_languages
                }
                entry = _Cards(
                    node["id"], int(node.get("messagePriority") or 0), languages, assignment, cards,
                    guardian_languages, guardian,
                )  # fmt: skip
                self._cards[(node["id"], node["updatedAt"])] = entry
                found[node["id"]] = entry
        return found


def _order_key(entry: tuple[int, MyCampaign]) -> tuple[int, str, str]:
    priority, card = entry
    # Higher message priority first, then the earliest start (no start = started first), then id.
    return (-priority, card.starts_at or "", card.campaign_id)


def _with_state(card: MyCampaign, state: dict[str, Any] | None) -> MyCampaign:
    return card if state is None else card.model_copy(update={"state": EngagementState.from_rel(state)})


def my_campaigns_of(
    tx: Statements, profile_ids: Sequence[str], *, policy: Policy, cards: CardCache
) -> dict[str, list[MyCampaign]]:
    """Each profile's visible campaigns, in display order and its own language, read in one statement;
    writes nothing. A campaign deleted between that statement and the card read is simply left out."""
    result = tx.run(policy_query("my_campaigns"), profileIds=list(profile_ids), now=format_ts(policy.now),
                    **policy.params())  # fmt: skip
    visible = {record["profileId"]: (record["locale"], record["visible"]) for record in result}
    for profile_id, (locale, reached) in visible_by_segment(tx, profile_ids, policy=policy).items():
        visible.setdefault(profile_id, (locale, []))[1].extend(reached)  # members are never in both
    for profile_id, (locale, reached) in visible_as_guardian(tx, profile_ids, policy=policy).items():
        visible.setdefault(profile_id, (locale, []))[1].extend(reached)  # a routed guardian is no member
    found = cards.fetch(tx, ((row[0], row[1]) for _, rows in visible.values() for row in rows))
    mine: dict[str, list[MyCampaign]] = {}
    for profile_id, (locale, rows) in visible.items():
        # Each row: [campaign id, updatedAt, state, abTest]; no card for a reader waiting for a test's
        # decision (issue 26).
        served = ((found[cid].for_reader(locale, profile_id, test, routed=GUARDIAN_ROW in rest), state)
                  for cid, _, state, test, *rest in rows if cid in found)  # fmt: skip
        entries = [(entry, state) for entry, state in served if entry is not None]
        mine[profile_id] = [
            _with_state(card, state) for (_, card), state in sorted(entries, key=lambda e: _order_key(e[0]))
        ]
    return mine


def my_campaigns(
    graph: Graph, *, profile_id: str, include_tests: bool, policy: Policy, cards: CardCache | None = None
) -> MyCampaigns:
    """The caller's visible campaigns (pending self-tests first for an admin); writes nothing."""
    card_cache = cards if cards is not None else CardCache()

    def tx_fn(tx: Tx) -> tuple[list[MyCampaign], list[dict[str, Any]]]:
        mine = my_campaigns_of(tx, [profile_id], policy=policy, cards=card_cache).get(profile_id, [])
        tests = [r.data() for r in tx.run(query("my_tests"), profileId=profile_id)] if include_tests else []
        return mine, tests

    mine, tests = graph.read(tx_fn)
    out = [
        MyCampaign.model_validate({**json.loads(test["snapshot"]), "campaignId": test["campaignId"],
                                   "testId": test["testId"]})
        for test in tests
    ]  # fmt: skip
    return MyCampaigns(campaigns=[*out, *mine])


@cache
def _record_query(event: str) -> str:
    if event not in _EVENTS:  # the event name becomes part of the query text: closed set only
        raise ValueError(f"unknown event {event!r}")
    return policy_query("record_event").replace("{{EVENT}}", event)


# The content variant a reader saw, stamped on their state by its first event (the record statement
# named the state; the profile locks are held).
_STAMP_VARIANT = """
UNWIND $stamps AS stamp
MATCH ()-[s:CAMPAIGN_STATE]->()
WHERE elementId(s) = stamp.stateId
SET s.variantId = coalesce(s.variantId, stamp.variantId)
"""


@dataclass(frozen=True)
class EventCall:
    """One engagement event of one caller (never a self-test acknowledgement)."""

    profile_id: str
    campaign_id: str
    event: EventKind
    action_id: str | None = None


def _rounds(events: Iterable[tuple[int, EventCall]]) -> list[tuple[str, list[tuple[int, EventCall]]]]:
    """Statements to run, in order: one event kind each, and each (profile, campaign) at most once per
    statement (the n-th event of a pair goes in round n), so repeated events of a pair count one by one."""
    seen: Counter[tuple[str, str]] = Counter()
    rounds: dict[tuple[int, str], list[tuple[int, EventCall]]] = {}
    for index, call in events:
        pair = (call.profile_id, call.campaign_id)
        rounds.setdefault((seen[pair], call.event), []).append((index, call))
        seen[pair] += 1
    return [(kind, members) for (_, kind), members in sorted(rounds.items())]


def _variant_of(call: EventCall, wire_variants: str, ab_test: str | None) -> str | None:
    """The content variant ``call``'s reader is served (``domain/ab_variants.py:served_variant``; None
    while they wait for a test wave's decision)."""
    arms = json.loads(wire_variants)
    return served_variant(
        arms, TestWave.of(ab_test), campaign_id=call.campaign_id, profile_id=call.profile_id
    )


def record_events(
    graph: Graph, events: Sequence[EventCall], *, policy: Policy
) -> list[EventResult | NotFound]:
    """Records every event in one transaction under the sorted locks of all their profiles. An event
    whose caller may not record (no such live campaign, neither a member nor reached by it nor matched
    by its live segment, too young) gets ``NotFound``."""
    now = format_ts(policy.now)

    def tx_fn(tx: Tx) -> dict[int, EngagementState | None]:
        lock_profiles(tx, [call.profile_id for call in events])
        states: dict[int, EngagementState | None] = {}
        unstamped: dict[str, str] = {}  # state elementId -> the variant to stamp (issue 26)

        def record(indexed: Iterable[tuple[int, EventCall]], *, segment_matched: bool) -> None:
            for kind, members in _rounds(indexed):
                rows = [{"index": index, "profileId": call.profile_id, "campaignId": call.campaign_id,
                         "actionId": call.action_id, "segmentMatched": segment_matched}
                        for index, call in members]  # fmt: skip
                for found in tx.run(_record_query(kind), events=rows, now=now, **policy.params()):
                    index = int(found["index"])
                    state = dict(found["state"])
                    states[index] = EngagementState.from_rel(state)
                    if found["variants"] and state.get("variantId") is None:
                        variant = _variant_of(events[index], found["variants"], found["abTest"])
                        if variant is not None:  # a reader waiting for a test's decision is stamped later
                            unstamped[str(found["stateId"])] = variant

        record(enumerate(events), segment_matched=False)
        # Refused events wrote nothing (every event of a refused pair is refused alike): a live segment's
        # match who was never notified (an in-app-only campaign) is checked against the rule, and a
        # routed guardian against the routing (issue 27 item 3), and retried.
        refused = {i: (call.profile_id, call.campaign_id) for i, call in enumerate(events) if i not in states}
        if refused:
            pairs = set(refused.values())
            matched = matched_pairs(tx, pairs, policy=policy) | routed_pairs(tx, pairs, policy=policy)
            record([(i, events[i]) for i, pair in refused.items() if pair in matched], segment_matched=True)
        if unstamped:  # a reader's first events only: one statement for the whole batch
            stamps = [{"stateId": sid, "variantId": vid} for sid, vid in sorted(unstamped.items())]
            tx.run(_STAMP_VARIANT, stamps=stamps).consume()
        return states

    states = graph.write(tx_fn)
    return [
        EventResult(recorded=True, state=states[index])
        if index in states
        else NotFound(f"campaign '{call.campaign_id}' not found")
        for index, call in enumerate(events)
    ]


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
    if test_id is None:
        outcome = record_events(graph, [EventCall(profile_id, campaign_id, event, action_id)], policy=policy)[
            0
        ]
        if isinstance(outcome, NotFound):
            raise outcome
        return outcome

    def ack_fn(tx: Tx) -> EventResult:
        if not lock_profiles(tx, [profile_id]):
            raise NotFound(f"campaign '{campaign_id}' not found")
        record = tx.run(
            query("ack_test"), profileId=profile_id, campaignId=campaign_id, testId=test_id
        ).single()
        return EventResult(recorded=record is not None and int(record["removed"]) > 0)

    return graph.write(ack_fn)


class EngagementService:
    """The API's entry to engagement: concurrent calls in this process share one transaction.

    ``policy`` is read once per batch (its ``now`` is the batch's evaluation moment). Admin reads,
    which include private self-test snapshots, and test acknowledgements take the single-call path.
    """

    def __init__(self, graph: Graph, *, policy: Callable[[], Policy]) -> None:
        self._graph = graph
        self._policy = policy
        self._cards = CardCache()
        self._reads: Coalescer[str, list[MyCampaign]] = Coalescer(self._read_batch, name="my-campaigns")
        self._writes: Coalescer[EventCall, EventResult] = Coalescer(self._write_batch, name="record-event")
        self.profiles_read = 0  # batched reads issued, per profile: what refused calls must never add to

    def my_campaigns(self, *, profile_id: str, include_tests: bool) -> MyCampaigns:
        if include_tests:
            return my_campaigns(
                self._graph,
                profile_id=profile_id,
                include_tests=True,
                policy=self._policy(),
                cards=self._cards,
            )
        return MyCampaigns(campaigns=self._reads(profile_id))

    def record_event(
        self,
        *,
        profile_id: str,
        campaign_id: str,
        event: EventKind,
        action_id: str | None,
        test_id: str | None,
    ) -> EventResult:
        if test_id is not None:
            return record_event(self._graph, profile_id=profile_id, campaign_id=campaign_id, event=event,
                                action_id=action_id, test_id=test_id, policy=self._policy())  # fmt: skip
        return self._writes(EventCall(profile_id, campaign_id, event, action_id))

    async def my_campaigns_async(self, *, profile_id: str, include_tests: bool) -> MyCampaigns:
        """``my_campaigns`` for the event loop: waits for its batch without holding a thread."""
        if include_tests:
            return await asyncio.to_thread(self.my_campaigns, profile_id=profile_id, include_tests=True)
        return MyCampaigns(campaigns=await self._reads.submit(profile_id))

    async def record_event_async(
        self,
        *,
        profile_id: str,
        campaign_id: str,
        event: EventKind,
        action_id: str | None,
        test_id: str | None,
    ) -> EventResult:
        """``record_event`` for the event loop: waits for its batch without holding a thread."""
        if test_id is not None:
            return await asyncio.to_thread(self.record_event, profile_id=profile_id, campaign_id=campaign_id,
                                           event=event, action_id=action_id, test_id=test_id)  # fmt: skip
        return await self._writes.submit(EventCall(profile_id, campaign_id, event, action_id))

    def close(self) -> None:
        self._reads.close()
        self._writes.close()

    def _read_batch(self, profile_ids: list[str]) -> list[list[MyCampaign]]:
        self.profiles_read += len(profile_ids)  # only the one batch thread writes it
        with self._graph.autocommit_reads() as session:
            found = my_campaigns_of(
                session, sorted(set(profile_ids)), policy=self._policy(), cards=self._cards
            )
        return [found.get(profile_id, []) for profile_id in profile_ids]

    def _write_batch(self, calls: list[EventCall]) -> list[EventResult | NotFound]:
        return record_events(self._graph, calls, policy=self._policy())
