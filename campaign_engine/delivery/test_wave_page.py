"""A page walk while a test wave is undecided (docs/architecture.md "A/B test wave").

The walks need one thing from the test wave: which members of a page are sent now. The draw is a keyed
hash in Python (``domain/ab_variants.py:in_test_wave``), so it sits between the page read and the send:

- notify: the page statement already returns its eligible ids; the ones outside the test wave are
  dropped before any delivery is enqueued;
- email: the read and the claim are one statement, so an undecided wave splits it in two inside the
  claim's transaction: the page's ids (``cypher/delivery/test_wave_page.cypher``: the same audience page, ids
  only), then the claim over the chosen ids only (``email_page.cypher`` with its audience page replaced
  by a seek of those ids, so every rule of the claim is its own), in ascending order as its locks need.

Members outside the wave are counted ``deferred`` with the decision time as their instant, so the end of
the pass wraps (``readiness.advance_pass``) to a next pass at ``decideAt``: the Dispatch then waits
``sending`` with ``nextPageAt`` = the decision time, and the job woken then (by the queue's delay, or the
sweeper's due waves past 900 s; locally and on Lambda alike) decides (``graph/test_wave.py``) and walks
the rest pass, where test members are skipped by their own state (notified, claimed) like any member
already reached. One pass over the audience per phase; a pass that deferred nobody still waits for the
decision (``hold_until``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from campaign_engine.delivery.frequency_cap import email_cap_slot
from campaign_engine.delivery.readiness import PageTally
from campaign_engine.domain.ab_variants import TestWave, in_test_wave
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.cypher import fragment, statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.segment import CompiledSegment
from campaign_engine.graph.rules.segment_statements import segment_query
from campaign_engine.graph.test_wave import SYSTEM_ACTOR, decide, decision_due

__all__ = ["WaveFilter", "chosen_claim_query", "decide_on_time", "page_ids_query", "statement_variants"]


@dataclass(frozen=True)
class WaveFilter:
    """An undecided test wave, as one page applies it."""

    campaign_id: str
    share: float
    decide_at: str

    @classmethod
    def of(cls, campaign: Mapping[str, Any]) -> WaveFilter | None:
        """From the campaign node the page read (None: no test, or decided)."""
        stored = campaign.get("abTest")
        wave = TestWave.of(stored)
        if wave is None or wave.winner is not None:
            return None
        return cls(str(campaign["id"]), wave.share, str(json.loads(str(stored))["decideAt"]))

    def split(self, ids: Iterable[str]) -> tuple[list[str], int]:
        """(the test members among ``ids``, in order; how many others wait for the decision)."""
        chosen, waiting = [], 0
        for profile_id in ids:
            if in_test_wave(self.campaign_id, profile_id, self.share):
                chosen.append(profile_id)
            else:
                waiting += 1
        return chosen, waiting

    def tally(self, tally: PageTally, waiting: int) -> PageTally:
        """``tally`` with the waiting members deferred to the decision time."""
        if not waiting:
            return tally
        at = self.decide_at if tally.ready_at is None else min(tally.ready_at, self.decide_at)
        return PageTally(deferred=tally.deferred + waiting, missed=tally.missed, ready_at=at)


def page_ids_query(segment: CompiledSegment | None) -> str:
    return statement("test_wave_page") if segment is None else segment_query("test_wave_page", segment)


@cache
def chosen_claim_query(capped: bool) -> str:
    """``email_page.cypher`` over the chosen ids (``$chosen``) instead of an audience page: its head
    (``fragments/test_wave_chosen_head.cypher``) reads each chosen profile, sorted, by its unique key,
    with the campaign; the claim's own rules follow unchanged."""
    return statement(
        "email_page", AUDIENCE_PAGE=fragment("test_wave_chosen_head"), EMAIL_CAP=email_cap_slot(capped)
    )


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    for segment in samples:
        yield "test_wave_page", page_ids_query(segment)
    for capped in (False, True):
        yield "email_page", chosen_claim_query(capped)


def decide_on_time(graph: Graph, *, dispatch_id: str, campaign: Mapping[str, Any], now: str) -> bool:
    """Decide the campaign's test wave if its time has come (a page job woken at ``decideAt``); True when
    the campaign node must be read again. The decision is a CAS: another channel's walk, a duplicate
    job or an admin may have decided first, and then this writes nothing."""
    if not decision_due(campaign, now=now):
        return False
    audit = AuditContext(
        actor=SYSTEM_ACTOR, procedure="delivery.testWave", request_id=dispatch_id, at=now,
        tenant_id=str(campaign.get("tenantId") or ""),
    )  # fmt: skip  # drawn outside the transaction: a re-run writes the same entry
    graph.write(decide, campaign_id=str(campaign["id"]), now=now, audit=audit)
    return True
