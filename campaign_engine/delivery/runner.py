"""The long-running worker of ``campaign-engine worker``: poll both queues, route by message type.

One thread polls the dispatch queue, ``delivery_threads`` threads poll the delivery queue (up to
``delivery_batch`` messages per receive: 10 on SQS, more on the local queue), and an
optional thread runs the sweeper every ``sweep_every`` seconds (single-machine deployments have no
scheduler). Routing is by the message ``type``, not by the queue it came from.

A message is deleted only after its work is done; a crash anywhere leaves it to be redelivered after
the visibility timeout. Uncertain deliveries are made visible again after an exponential back-off.
SIGTERM/SIGINT set a stop flag: threads finish the batch in hand and exit.

``python -m campaign_engine.delivery.runner`` runs it with settings from the environment.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from pydantic import ValidationError

from campaign_engine.delivery.email_worker import EmailWorker
from campaign_engine.delivery.notification_worker import NotificationWorker
from campaign_engine.delivery.page_worker import PageWorker
from campaign_engine.delivery.queue import MAX_DELAY_SECONDS, Queue, QueueError, ReceivedMessage
from campaign_engine.domain.dispatch import DeliveryJob, PageJob, parse_job

__all__ = ["Worker", "install_stop_signals", "retry_delay"]

log = logging.getLogger(__name__)


def retry_delay(base_seconds: int, receive_count: int) -> int:
    if base_seconds <= 0:
        return 0
    return int(min(MAX_DELAY_SECONDS, base_seconds * 2 ** min(max(receive_count - 1, 0), 16)))


class Worker:
    def __init__(
        self,
        *,
        page_worker: PageWorker,
        notification_worker: NotificationWorker,
        dispatch_queue: Queue,
        delivery_queue: Queue,
        delivery_threads: int = 4,
        delivery_batch: int = 10,
        retry_base_seconds: int = 30,
        sweeper: Callable[[], object] | None = None,
        sweep_every: float = 60.0,
        wait_seconds: float = 1.0,
        email_worker: EmailWorker | None = None,
    ) -> None:
        self._pages = page_worker
        self._email = email_worker
        self._notify = notification_worker
        self._dispatch_queue = dispatch_queue
        self._delivery_queue = delivery_queue
        self._delivery_threads = delivery_threads
        self._delivery_batch = delivery_batch
        self._retry_base = retry_base_seconds
        self._sweeper = sweeper
        self._sweep_every = sweep_every
        self._wait = wait_seconds

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set; returns after every thread finished its current batch."""
        threads = [threading.Thread(target=self._poll, args=(self._dispatch_queue, 10, stop), name="pages")]
        threads += [
            threading.Thread(
                target=self._poll,
                args=(self._delivery_queue, self._delivery_batch, stop),
                name=f"deliveries-{i}",
            )
            for i in range(self._delivery_threads)
        ]
        if self._sweeper is not None:
            threads.append(threading.Thread(target=self._sweep_loop, args=(stop,), name="sweeper"))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.close()

    def close(self) -> None:
        self._notify.close()
        if self._email is not None:
            self._email.close()

    def handle(self, queue: Queue, messages: Sequence[ReceivedMessage]) -> None:
        """Process one received batch from ``queue`` and settle each message on it."""
        deliveries: list[ReceivedMessage] = []
        for message in messages:
            try:
                job = parse_job(message.body)
            except ValidationError:
                log.warning("worker.invalid_message message_id=%s", message.message_id)
                queue.delete(message.receipt)
                continue
            if isinstance(job, DeliveryJob):
                deliveries.append(message)
            else:
                self._handle_page(queue, message, job)
        if deliveries:
            result = self._notify.handle_batch(deliveries)
            queue.delete_batch([message.receipt for message in result.done])
            for message in result.retry:
                # A receipt that expired meanwhile is fine: the message is visible again anyway.
                with contextlib.suppress(QueueError):
                    queue.change_visibility(
                        message.receipt, timeout_seconds=retry_delay(self._retry_base, message.receive_count)
                    )

    def _handle_page(self, queue: Queue, message: ReceivedMessage, job: PageJob) -> None:
        if job.channel == "email":
            self._handle_email_page(queue, message, job)
            return
        try:
            outcome = self._pages.handle_page(job)
        except QueueError:
            log.warning("worker.page_enqueue_failed dispatch_id=%s", job.dispatch_id)
            return  # not deleted: redelivered after the visibility timeout, cursor unchanged
        log.info(
            "worker.page dispatch_id=%s outcome=%s enqueued=%d",
            job.dispatch_id,
            outcome.outcome,
            outcome.enqueued,
        )
        queue.delete(message.receipt)

    def _handle_email_page(self, queue: Queue, message: ReceivedMessage, job: PageJob) -> None:
        if self._email is None:
            # Left on the queue (redelivered, then dead-lettered): a worker with email configured takes it.
            log.warning("worker.email_not_configured dispatch_id=%s", job.dispatch_id)
            return
        try:
            outcome = self._email.handle_page(job)
        except Exception:
            # Not deleted: redelivered after the visibility timeout. Claims already committed are found
            # by the retry and never sent again.
            log.exception("worker.email_page_failed dispatch_id=%s", job.dispatch_id)
            return
        log.info(
            "worker.email_page dispatch_id=%s outcome=%s emailed=%d",
            job.dispatch_id,
            outcome.outcome,
            outcome.emailed,
        )
        queue.delete(message.receipt)

    def _poll(self, queue: Queue, batch: int, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                messages = queue.receive(max_messages=batch, wait_seconds=self._wait)
                if messages:
                    self.handle(queue, messages)
            except Exception:  # a worker thread must survive one bad batch; its messages redeliver
                log.exception("worker.batch_failed")
                stop.wait(1.0)

    def _sweep_loop(self, stop: threading.Event) -> None:
        assert self._sweeper is not None
        while not stop.wait(self._sweep_every):
            try:
                self._sweeper()
            except Exception:
                log.exception("worker.sweep_failed")


def install_stop_signals(stop: threading.Event) -> None:
    def handler(signum: int, _frame: FrameType | None) -> None:
        log.info("worker.stopping signal=%d", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


if __name__ == "__main__":
    from campaign_engine.delivery.wiring import run_worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run_worker()
