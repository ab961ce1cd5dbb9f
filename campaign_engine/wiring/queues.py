"""Which queue backend this deployment runs (local SQLite or SQS) and the queues built from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from campaign_engine.config import ConfigError, Settings
from campaign_engine.domain.priority import LANE_RANK
from campaign_engine.queue.local import LocalQueue
from campaign_engine.queue.port import Queue

if TYPE_CHECKING:
    from campaign_engine.queue.sqs import SqsQueue

__all__ = ["Queues", "build_delivery_queue", "build_dispatch_queue", "build_queues", "build_webhooks_queue"]


DISPATCH_QUEUE = "dispatch"


DELIVERY_QUEUE = "delivery"


@dataclass(frozen=True)
class Queues:
    dispatch: Queue
    delivery: Queue
    webhooks_queue: Queue | None = None
    """Event-webhook relay jobs: on SQS their own queue (CAMPAIGN_WEBHOOK_QUEUE_URL, served by its own
    Lambda); otherwise the delivery queue, whose polling threads serve them beside announcements."""

    @property
    def webhooks(self) -> Queue:
        return self.webhooks_queue or self.delivery


def _local(settings: Settings, name: str) -> LocalQueue:
    return LocalQueue(
        settings.campaign_local_queue_path,
        name,
        visibility_timeout=settings.campaign_queue_visibility_seconds,
        max_receives=settings.campaign_queue_max_receives,
    )


def _sqs(settings: Settings, url: str | None, variable: str, *, kind: str | None = None) -> SqsQueue:
    """``kind``: ``dispatch`` or ``delivery``, whose lanes may have queues of their own (docs/lanes.md).

    boto3 is imported here, not at the top: a deployment on the local queue (``make dev``, one machine,
    every process the suite starts) never loads it: a fifth of the CPU of importing the wiring."""
    from campaign_engine.queue.sqs import SqsQueue, make_sqs_client

    if not url:
        raise ConfigError(f"{variable} must be set when CAMPAIGN_QUEUE_BACKEND=sqs")
    own = settings.campaign_lane_queue_urls.get(kind or "", {})
    unknown = sorted(set(settings.campaign_lane_queue_urls) - {"dispatch", "delivery"})
    unknown += sorted(set(own) - {"critical", "bulk"})
    if unknown:
        raise ConfigError(
            f"CAMPAIGN_LANE_QUEUE_URLS: unknown {unknown}; queues dispatch, delivery; lanes critical, bulk"
        )
    lanes = {LANE_RANK[lane]: u for lane, u in own.items() if u}
    return SqsQueue(make_sqs_client(settings.aws_endpoint_url_sqs, settings.aws_region), url, lane_urls=lanes)


def build_dispatch_queue(settings: Settings) -> Queue:
    """The page-job queue: the API writes the first page of a dispatch (``Services.dispatch_queue``)."""
    if settings.campaign_queue_backend == "sqs":
        return _sqs(
            settings, settings.campaign_dispatch_queue_url, "CAMPAIGN_DISPATCH_QUEUE_URL", kind="dispatch"
        )
    return _local(settings, DISPATCH_QUEUE)


def build_delivery_queue(settings: Settings) -> Queue:
    """The per-recipient queue: the API writes only an admin's notify self-test to it."""
    if settings.campaign_queue_backend == "sqs":
        return _sqs(
            settings, settings.campaign_delivery_queue_url, "CAMPAIGN_DELIVERY_QUEUE_URL", kind="delivery"
        )
    return _local(settings, DELIVERY_QUEUE)


def _own_webhooks_queue(settings: Settings) -> Queue | None:
    if settings.campaign_queue_backend == "sqs" and settings.campaign_webhook_queue_url:
        return _sqs(settings, settings.campaign_webhook_queue_url, "CAMPAIGN_WEBHOOK_QUEUE_URL")
    return None


def build_webhooks_queue(settings: Settings) -> Queue:
    """The relay's queue (``Queues.webhooks``): the API kicks the relay through it after a request that
    recorded events."""
    return _own_webhooks_queue(settings) or build_delivery_queue(settings)


def build_queues(settings: Settings) -> Queues:
    return Queues(
        dispatch=build_dispatch_queue(settings),
        delivery=build_delivery_queue(settings),
        webhooks_queue=_own_webhooks_queue(settings),
    )
