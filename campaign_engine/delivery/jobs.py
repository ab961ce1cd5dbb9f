"""The job table: which handler serves each queue message, and what then happens to the message.

Both entry points, the local runner (``runner.py``) and the Lambda SQS handlers (``aws.py``), only
receive messages, hand them to ``JobTable.handle`` and settle each one by its typed outcome:

- ``Done``: finished for good (sent, refused, stale, a duplicate): delete it.
- ``Retry(after_seconds)``: try again later; ``after_seconds`` is the back-off, applied as a
  per-message visibility change (``CAMPAIGN_DELIVERY_RETRY_SECONDS`` doubled per receive, at most
  900 s), so a page job that failed does not wait out the dispatch queue's long visibility timeout.
  A failed page job is counted on its Dispatch (``PageFailures``); the
  ``CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES``-th failure in a row fails the Dispatch (``lastError`` says
  what failed and how often) and the job is ``Dead``, so a page that can never succeed stops visibly.
- ``Dead(reason)``: can never be served (unreadable, or no handler is configured for it): delete it.
  A page job that no handler can serve is recorded on its Dispatch (status ``failed``, ``lastError``),
  so a walk that cannot run stops visibly instead of ending as a silent ``completed`` or looping
  through the dead-letter queue while the sweeper re-arms it.

Each body is parsed once, here. Handlers are keyed by (job type, channel) and take typed jobs: page
jobs one at a time, notify deliveries as one batch (one recheck query, one outcome write).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from structlog.contextvars import bound_contextvars

from campaign_engine.delivery.dispatch_cursor import record_failure, stop
from campaign_engine.delivery.email.walk_outcome import EmailPageOutcome
from campaign_engine.delivery.notify.page_walk import PageOutcome
from campaign_engine.delivery.notify.worker import NotificationWorker
from campaign_engine.delivery.webhook_relay import RelayResult
from campaign_engine.domain.dispatch import DeliveryJob, PageJob, RelayJob, parse_job
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.webhook_outbox import touched_scope
from campaign_engine.queue.port import MAX_DELAY_SECONDS, Received, ReceivedMessage

__all__ = [
    "Dead",
    "Done",
    "JobKey",
    "JobTable",
    "Outcome",
    "PageFailures",
    "Received",
    "Retry",
    "job_key",
    "retry_delay",
    "serve_deliveries",
    "serve_pages",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Done:
    """Finished for good: delete the message."""


@dataclass(frozen=True)
class Retry:
    """Leave the message on the queue; it becomes visible again after ``after_seconds``."""

    after_seconds: int


@dataclass(frozen=True)
class Dead:
    """Never servable: delete the message (its Dispatch, if any, says why)."""

    reason: str


Outcome = Done | Retry | Dead

JobKey = tuple[str, str]
"""(message ``type``, channel): ``("page", "notify")``, ``("page", "email")``, ``("notify", "notify")``,
``("webhooks", "webhooks")`` (the event-webhook relay)."""


PageHandler = Callable[[Received[PageJob]], Outcome]
DeliveryHandler = Callable[[Sequence[Received[DeliveryJob]]], list[Outcome]]
RelayHandler = Callable[[RelayJob], RelayResult]
Kick = Callable[[Collection[str]], None]


def job_key(job: PageJob | DeliveryJob) -> JobKey:
    return (job.type, job.channel) if isinstance(job, PageJob) else (job.type, "notify")


def retry_delay(base_seconds: int, receive_count: int) -> int:
    """Exponential back-off for uncertain work: ``base * 2^(receives-1)``, at most SQS's 900 s."""
    if base_seconds <= 0:
        return 0
    return int(min(MAX_DELAY_SECONDS, base_seconds * 2 ** min(max(receive_count - 1, 0), 16)))


class JobTable:
    """Routes parsed messages to the configured handlers; one outcome per message, in input order."""

    def __init__(
        self,
        *,
        graph: Graph,
        clock: Clock,
        pages: Mapping[str, PageHandler],
        deliveries: DeliveryHandler | None,
        relay: RelayHandler | None = None,
        kick: Kick | None = None,
        closers: Sequence[Callable[[], None]] = (),
    ) -> None:
        self._graph = graph
        self._clock = clock
        self._pages = dict(pages)
        self._deliveries = deliveries
        self._relay = relay
        self._kick = kick  # after each batch: start the relay of endpoints it queued events for
        self._closers = tuple(closers)

    def close(self) -> None:
        """Close the handlers' adapters (the webhook loop, email provider connections)."""
        for close in self._closers:
            close()

    @property
    def keys(self) -> frozenset[JobKey]:
        """The (type, channel) pairs this table serves."""
        served = {("page", channel) for channel in self._pages}
        served |= {("notify", "notify")} if self._deliveries else set()
        return frozenset(served | ({("webhooks", "webhooks")} if self._relay else set()))

    def handle(self, messages: Sequence[ReceivedMessage]) -> list[Outcome]:
        """The batch's outcomes; then the relay's kick for the endpoints its commits queued events for."""
        with touched_scope() as touched:
            outcomes = self._handle(messages)
        if self._kick is not None:
            self._kick(touched)
        return outcomes

    def _handle(self, messages: Sequence[ReceivedMessage]) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        deliveries: list[tuple[int, Received[DeliveryJob]]] = []
        for index, message in enumerate(messages):
            try:
                job = parse_job(message.body)
            except ValidationError:
                log.warning("jobs.invalid_message message_id=%s", message.message_id)
                outcomes[index] = Dead("invalid_message")
                continue
            if isinstance(job, RelayJob):
                outcomes[index] = self._serve_relay(job)
            elif isinstance(job, DeliveryJob) and self._deliveries is not None:
                deliveries.append((index, Received(message, job)))
            elif isinstance(job, PageJob) and job.channel in self._pages:
                outcomes[index] = self._pages[job.channel](Received(message, job))
            else:
                outcomes[index] = self._unserved(job)
        if deliveries and self._deliveries is not None:
            results = self._deliveries([item for _, item in deliveries])
            outcomes.update(zip((index for index, _ in deliveries), results, strict=True))
        return [outcomes[index] for index in range(len(messages))]

    def _serve_relay(self, job: RelayJob) -> Outcome:
        """The relay enqueues its own follow-up (now, or after its wait), so its message is done; one that
        raised (the graph away) comes back after a while, and the sweep re-enqueues it regardless."""
        if self._relay is None:
            log.error("jobs.unserved type=webhooks endpoint_id=%s", job.endpoint_id)
            return Dead("not_configured: this deployment has no event-webhook relay")
        try:
            self._relay(job)
        except Exception:
            log.exception("jobs.relay_failed endpoint_id=%s", job.endpoint_id)
            return Retry(30)
        return Done()

    def _unserved(self, job: PageJob | DeliveryJob) -> Dead:
        kind, channel = job_key(job)
        reason = f"not_configured: this deployment has no handler for {channel} {kind} jobs"
        if channel == "email":
            reason += " (set CAMPAIGN_EMAIL_PROVIDER and the email settings on the worker)"
        log.error("jobs.unserved type=%s channel=%s dispatch_id=%s", kind, channel, job.dispatch_id)
        if isinstance(job, PageJob):
            # Only the holder of the cursor may stop the walk; a stale duplicate changes nothing.
            stamp = format_ts(self._clock())
            self._graph.write(stop, job, status="failed", reason=reason, now=stamp, graph=self._graph)
        return Dead(reason)


# --- the handlers the wiring puts in the table ---------------------------------------------------------


@dataclass(frozen=True)
class PageFailures:
    """Where the page handlers count a failed attempt, and the bound on failures in a row."""

    graph: Graph
    clock: Clock
    max_failures: int
    retry_base_seconds: int

    def settle(self, item: Received[PageJob], error: str) -> Outcome:
        """Count the failure (only if the job still holds the cursor): ``Dead`` once the Dispatch has
        failed for good, else ``Retry`` with back-off. The cursor does not move: a retry redoes the page."""
        verdict = self.graph.write(
            record_failure,
            item.job,
            error=error,
            max_failures=self.max_failures,
            now=format_ts(self.clock()),
            graph=self.graph,
        )
        if verdict is not None and verdict.failed:
            log.error(
                "jobs.page_failed_for_good dispatch_id=%s failures=%d", item.job.dispatch_id, verdict.failures
            )
            return Dead(verdict.reason or "page_failures")
        return Retry(retry_delay(self.retry_base_seconds, item.message.receive_count))


def serve_pages(
    handle_page: Callable[[PageJob], PageOutcome | EmailPageOutcome], *, failures: PageFailures
) -> PageHandler:
    """A page walk (notify or email) as a table handler. Any failure is counted and retried: the
    cursor has not moved, so the retry redoes the page (notify deliveries are deduplicated by
    receivers; email claims already committed are found and never sent again)."""

    def serve(item: Received[PageJob]) -> Outcome:
        job = item.job
        # Every line of this page (the walk, the provider, the failure count) names its dispatch.
        with bound_contextvars(campaignId=job.campaign_id, dispatchId=job.dispatch_id, channel=job.channel):
            try:
                outcome = handle_page(job.received_in(item.message.message_id))
            except Exception as exc:
                log.exception("jobs.page_failed")
                return failures.settle(item, type(exc).__name__)
            log.info("jobs.page", extra={"outcome": outcome.outcome, "reason": outcome.reason})
            return Done()

    return serve


def serve_deliveries(worker: NotificationWorker, *, retry_base_seconds: int) -> DeliveryHandler:
    def serve(items: Sequence[Received[DeliveryJob]]) -> list[Outcome]:
        retry = worker.handle_batch(items).retry
        again = {message.receipt for message in retry}
        return [
            Retry(retry_delay(retry_base_seconds, item.message.receive_count))
            if item.message.receipt in again
            else Done()
            for item in items
        ]

    return serve
