"""The notify part of ``sendTestToMe``: one delivery job for the calling admin on the delivery queue.

The test travels the exact path of a real send (queue, notification worker, safe transport, signed
POST, acknowledgement grammar) so an admin sees what recipients will see, and a broken receiver shows
up before the dispatch. The job carries a fresh ``campaignTestId``; the worker therefore skips the
audience checks, never writes ``notifiedAt`` or counters, and sends ``campaignHasInApp`` false. The
delivery id includes the test id, so retries of one test reuse it and a new test is a new message
for receivers that deduplicate.
"""

from __future__ import annotations

import logging

from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.domain.dispatch import DeliveryJob, delivery_id, job_json
from campaign_engine.domain.errors import NotFound, ServiceUnavailable
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.queue.port import Queue, QueueError

__all__ = ["NotifySelfTester"]

log = logging.getLogger(__name__)


def _profile_exists(tx: Tx, profile_id: str) -> bool:
    return tx.run("MATCH (p:Profile {profileId: $id}) RETURN 1", id=profile_id).single() is not None


class NotifySelfTester:
    """A ``ChannelTester`` for ``notify``: enqueues the admin's test delivery; the worker posts it."""

    def __init__(self, *, graph: Graph, delivery_queue: Queue) -> None:
        self._graph = graph
        self._queue = delivery_queue

    def __call__(self, *, admin_id: str, campaign: CampaignPublic, test_id: str) -> None:
        # The worker would drop a job for a missing profile silently; say so to the admin instead.
        if not self._graph.read(_profile_exists, admin_id):
            raise NotFound("your profile is not in the graph; upsert it before sending yourself a test")
        job = DeliveryJob(
            delivery_id=delivery_id(
                campaign_id=campaign.id,
                campaign_created_at=campaign.created_at,
                profile_id=admin_id,
                test_id=test_id,
            ),
            campaign_id=campaign.id,
            campaign_created_at=campaign.created_at,
            profile_id=admin_id,
            campaign_test_id=test_id,
        )
        try:
            self._queue.send_batch([job_json(job)])
        except QueueError as exc:
            log.warning("self_test.notify_enqueue_failed campaign_id=%s", campaign.id)
            raise ServiceUnavailable("the delivery queue is unavailable; try the test again") from exc
        log.info("self_test.notify_enqueued campaign_id=%s delivery_id=%s", campaign.id, job.delivery_id)
