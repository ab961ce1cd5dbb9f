"""The API's entry to ``getMyCampaigns`` and ``recordEvent``: the calls of one process, batched.

These are the hottest procedures (every app start), so the rules are written for many callers at once:
``cards.my_campaigns_of`` reads any number of profiles in one statement and ``events.record_events``
writes any number of events in one transaction. ``EngagementService`` feeds them the calls that arrive
together in one API process (``graph/coalesce.py``); the single-call functions are the same code with
one item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from campaign_engine.campaigns.engagement.cards import CardCache, Mine, my_campaigns, my_campaigns_of
from campaign_engine.campaigns.engagement.events import EventCall, record_event, record_events
from campaign_engine.campaigns.engagement.models import EventKind, EventResult, MyCampaigns
from campaign_engine.campaigns.engagement.own_tests import Viewer, visible_tests
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.coalesce import Coalescer
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy

__all__ = ["EngagementService"]

_ANYONE = Viewer()


def _shown(read: Mine, viewer: Viewer) -> MyCampaigns:
    return MyCampaigns(campaigns=[*visible_tests(read.tests, viewer), *read.cards])


class EngagementService:
    """The API's entry to engagement: concurrent calls in this process share one transaction.

    ``policy`` is read once per batch (its ``now`` is the batch's evaluation moment). Platform admin
    reads, which include every own self-test snapshot, and test acknowledgements take the single-call
    path; a batched read also fetches its callers' own tests, shown to a tenant author or publisher
    (``own_tests.py``).
    """

    def __init__(self, graph: Graph, *, policy: Callable[[], Policy]) -> None:
        self._graph = graph
        self._policy = policy
        self._cards = CardCache()
        self._reads: Coalescer[str, Mine] = Coalescer(self._read_batch, name="my-campaigns")
        self._writes: Coalescer[EventCall, EventResult] = Coalescer(self._write_batch, name="record-event")
        self.profiles_read = 0  # batched reads issued, per profile: what refused calls must never add to

    def my_campaigns(self, *, profile_id: str, viewer: Viewer = _ANYONE) -> MyCampaigns:
        if viewer.is_admin:
            return my_campaigns(
                self._graph,
                profile_id=profile_id,
                include_tests=True,
                policy=self._policy(),
                cards=self._cards,
            )
        return _shown(self._reads(profile_id), viewer)

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

    async def my_campaigns_async(self, *, profile_id: str, viewer: Viewer = _ANYONE) -> MyCampaigns:
        """``my_campaigns`` for the event loop: waits for its batch without holding a thread."""
        if viewer.is_admin:
            return await asyncio.to_thread(self.my_campaigns, profile_id=profile_id, viewer=viewer)
        return _shown(await self._reads.submit(profile_id), viewer)

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

    def _read_batch(self, profile_ids: list[str]) -> list[Mine]:
        self.profiles_read += len(profile_ids)  # only the one batch thread writes it
        with self._graph.autocommit_reads() as session:
            found = my_campaigns_of(
                session, sorted(set(profile_ids)), policy=self._policy(), cards=self._cards
            )
        return [found[profile_id] for profile_id in profile_ids]

    def _write_batch(self, calls: list[EventCall]) -> list[EventResult | NotFound]:
        return record_events(self._graph, calls, policy=self._policy())
