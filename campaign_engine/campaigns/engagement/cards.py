"""What a signed-in user sees: ``getMyCampaigns``' cards, read for any number of profiles at once.

Reads consume nothing: showing a campaign is recorded only when the client says so (``events.py``).
``my_campaigns_of`` reads any number of profiles in one statement (memberships, routed guardians, own
self-tests and the live segment campaigns in one round trip), for the batching service (``service.py``);
``my_campaigns`` is the same code with one profile. Cards are cached per process by (campaign id,
version): the updatedAt of the revision shown (under an approval policy the approved one,
``sending/approval_publish.py``); a definition never changes without a new updatedAt, so a cached card
is never stale, and the hot read need not load or parse definitions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, NamedTuple

from campaign_engine.campaigns.engagement.guardian_cards import GUARDIAN_ROW, visible_as_guardian
from campaign_engine.campaigns.engagement.models import CampaignCard, EngagementState, MyCampaign, MyCampaigns
from campaign_engine.campaigns.engagement.own_tests import Viewer, tests_by_profile, visible_tests
from campaign_engine.campaigns.engagement.segment_reach import visible_by_segment
from campaign_engine.domain.ab_variants import Assignment, TestWave, assigned_variant
from campaign_engine.domain.guardian_copy import guardian_source
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.variant_copy import wire_variant_copy
from campaign_engine.domain.variants import served_locale, wire_languages
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Statements
from campaign_engine.graph.rules.policy import Policy
from campaign_engine.graph.rules.routing import ROUTED_GUARDIAN

__all__ = ["CardCache", "Mine", "card_from_node", "my_campaigns", "my_campaigns_of", "statement_variants"]


@cache
def _read() -> str:
    return statement("my_campaigns", ROUTED_GUARDIAN=ROUTED_GUARDIAN)


def statement_variants(samples: Sequence[object]) -> Iterator[tuple[str, str]]:
    """The one statement this module fills (tests EXPLAIN it)."""
    yield "my_campaigns", _read()


class Mine(NamedTuple):
    """A reader's campaign cards in display order, and their own pending self-test rows (``own_tests.py``
    decides which of those a viewer sees)."""

    cards: list[MyCampaign]
    tests: list[dict[str, Any]]


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
        message=wire_variant_copy(definition, "message", tag, variant_id),
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
    """The guardian copy's message card by language (empty: guardians read the
    campaign's own cards, as anyone)."""

    def for_reader(
        self, locale: str | None, profile_id: str, ab_test: str | None = None, *, routed: bool = False
    ) -> tuple[int, MyCampaign] | None:
        """The reader's card; None while they wait outside an undecided test wave (no card
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
            for record in tx.run(statement("campaign_cards"), campaignIds=missing):
                node = dict(record["campaign"])
                definition = json.loads(node["definition"] or "{}")
                if "message" not in definition:  # an approved revision without the message added since
                    continue
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
) -> dict[str, Mine]:
    """Each profile's visible campaigns, in display order and its own language, and its own self-tests,
    read in one statement (more only for a live segment's rule or cards not cached yet); writes nothing.
    A campaign deleted between that statement and the card read is simply left out."""
    (read,) = tx.run(_read(), profileIds=list(profile_ids), now=format_ts(policy.now), **policy.params())
    visible: dict[str, list[Any]] = dict(read["members"])
    for profile_id, reached in visible_by_segment(
        tx, read["segmentCampaigns"], profile_ids, policy=policy
    ).items():
        visible.setdefault(profile_id, []).extend(reached)  # members are never in both
    for profile_id, reached in visible_as_guardian(read["guardians"]).items():
        visible.setdefault(profile_id, []).extend(reached)  # a routed guardian is no member
    found = cards.fetch(tx, ((row[0], row[1]) for rows in visible.values() for row in rows))
    tests = tests_by_profile(read["tests"])
    mine: dict[str, Mine] = {}
    for profile_id in profile_ids:
        # Each row: [campaign id, version, state, abTest, locale]: the locale is the campaign tenant's
        # view of the reader over the shared one, so a person two tenants hold reads each in its own
        # language. No card for a reader waiting for a test's decision.
        rows = visible.get(profile_id, [])
        served = ((found[cid].for_reader(locale, profile_id, test, routed=GUARDIAN_ROW in rest), state)
                  for cid, _, state, test, locale, *rest in rows if cid in found)  # fmt: skip
        entries = [(entry, state) for entry, state in served if entry is not None]
        shown = [
            _with_state(card, state) for (_, card), state in sorted(entries, key=lambda e: _order_key(e[0]))
        ]
        mine[profile_id] = Mine(shown, tests.get(profile_id, []))
    return mine


def my_campaigns(
    graph: Graph, *, profile_id: str, include_tests: bool, policy: Policy, cards: CardCache | None = None
) -> MyCampaigns:
    """The caller's visible campaigns (every pending self-test of theirs first for an admin); writes
    nothing."""
    card_cache = cards if cards is not None else CardCache()
    found = graph.read(lambda tx: my_campaigns_of(tx, [profile_id], policy=policy, cards=card_cache))
    mine = found[profile_id]
    tests = visible_tests(mine.tests, Viewer(is_admin=True)) if include_tests else []
    return MyCampaigns(campaigns=[*tests, *mine.cards])
