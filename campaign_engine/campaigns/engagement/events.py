"""What a signed-in user records: ``recordEvent``, for any number of events in one transaction.

Every write takes the caller's profile lock first (docs/architecture.md), which is what makes 20 devices
recording at once produce one CAMPAIGN_STATE relationship with exact counts. ``record_events`` writes
any number of events in one transaction, for the batching service (``service.py``); ``record_event``
is the same code with one event, plus the self-test acknowledgement.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from campaign_engine.campaigns.engagement.guardian_cards import routed_pairs
from campaign_engine.campaigns.engagement.models import EngagementState, EventKind, EventResult
from campaign_engine.campaigns.engagement.segment_reach import matched_pairs
from campaign_engine.domain.ab_variants import TestWave, served_variant
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.rules.policy import Policy

__all__ = ["EventCall", "record_event", "record_events", "statement_variants"]

_EVENTS: frozenset[str] = frozenset({"shown", "clicked", "dismissed"})


@cache
def _record_query(event: str) -> str:
    if event not in _EVENTS:  # the event name becomes part of the query text: closed set only
        raise ValueError(f"unknown event {event!r}")
    return statement("record_event", EVENT=event)


def statement_variants(samples: Sequence[object]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills, one per event (tests EXPLAIN them all)."""
    for event in sorted(_EVENTS):
        yield "record_event", _record_query(event)


# The content variant a reader saw, stamped on their state by its first event (the record statement
# named the state; the profile locks are held).
_STAMP_VARIANT = "record_event_variant"  # cypher/engagement/record_event_variant.cypher


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
    now, params = format_ts(policy.now), policy.params()

    def tx_fn(tx: Tx) -> dict[int, EngagementState | None]:
        states: dict[int, EngagementState | None] = {}
        unstamped: dict[str, str] = {}  # state elementId -> the variant to stamp
        # The first record statement takes every profile's lock before it reads an event (the order of
        # graph/locks.py); the locks are held to the commit, so later statements pass none.
        lock_ids = sorted({call.profile_id for call in events})

        def record(indexed: Iterable[tuple[int, EventCall]], *, segment_matched: bool) -> None:
            nonlocal lock_ids
            for kind, members in _rounds(indexed):
                rows = [{"index": index, "profileId": call.profile_id, "campaignId": call.campaign_id,
                         "actionId": call.action_id, "segmentMatched": segment_matched}
                        for index, call in members]  # fmt: skip
                result = tx.run(_record_query(kind), events=rows, lockIds=lock_ids, now=now, **params)
                lock_ids = []
                for found in result:
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
        # routed guardian against the routing, and retried.
        refused = {i: (call.profile_id, call.campaign_id) for i, call in enumerate(events) if i not in states}
        if refused:
            pairs = set(refused.values())
            matched = matched_pairs(tx, pairs, policy=policy) | routed_pairs(tx, pairs, policy=policy)
            record([(i, events[i]) for i, pair in refused.items() if pair in matched], segment_matched=True)
        if unstamped:  # a reader's first events only: one statement for the whole batch
            stamps = [{"stateId": sid, "variantId": vid} for sid, vid in sorted(unstamped.items())]
            tx.run(statement(_STAMP_VARIANT), stamps=stamps).consume()
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
            statement("ack_test"), profileId=profile_id, campaignId=campaign_id, testId=test_id
        ).single()
        return EventResult(recorded=record is not None and int(record["removed"]) > 0)

    return graph.write(ack_fn)
