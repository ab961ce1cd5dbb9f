"""The long-running worker of ``campaign-engine worker``: poll both queues, settle by the job table.

One thread polls the dispatch queue one page job at a time (the queue chooses the next by lane and
fair share, ``queue/local_lanes.py``: a batch of ten taken at once would make a critical page that
arrives meanwhile wait for all ten), ``delivery_threads`` threads poll the delivery queue (up to
``delivery_batch`` messages per receive: 10 on SQS, more on the local queue), and an optional thread
runs the sweeper every ``sweep_every`` seconds (single-machine deployments have no scheduler). What a
message means is the job table's business (``jobs.py``); this loop only receives, hands the batch to
the table and settles each message by its outcome, exactly as the Lambda handlers do.

A message is deleted only after its work is done; a crash anywhere leaves it to be redelivered after
the visibility timeout. ``Retry`` outcomes are made visible again after their back-off.
SIGTERM/SIGINT set a stop flag: threads finish the batch in hand and exit.

While ``hold`` says so (the wiring's: the graph is unreachable and a probe did not reach it), no
thread receives: a message taken then could only wait in hand or go back, and every receive counts
towards its dead-letter limit (``CAMPAIGN_QUEUE_MAX_RECEIVES``, 5), so an outage of five visibility
timeouts would dead-letter every message the threads kept taking. Handlers already holding work
wait the outage out as before (``graph/graph.py``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from campaign_engine.delivery.jobs import JobTable, Retry
from campaign_engine.queue.port import Queue, QueueError, ReceivedMessage

__all__ = ["Worker", "install_stop_signals", "settle"]

log = logging.getLogger(__name__)


def settle(
    table: JobTable, queue: Queue, messages: Sequence[ReceivedMessage], *, delete_finished: bool = True
) -> list[ReceivedMessage]:
    """Run ``messages`` through the table; delete the finished ones, back off the ``Retry`` ones.

    Returns the messages left on the queue. Lambda deletes the messages its handler does not report
    as batch item failures itself, so the Lambda handlers pass ``delete_finished=False``.
    """
    outcomes = table.handle(messages)
    finished = [m.receipt for m, o in zip(messages, outcomes, strict=True) if not isinstance(o, Retry)]
    if finished and delete_finished:
        queue.delete_batch(finished)
    kept: list[ReceivedMessage] = []
    for message, outcome in zip(messages, outcomes, strict=True):
        if isinstance(outcome, Retry):
            kept.append(message)
            # A receipt that expired meanwhile is fine: the message is visible again anyway.
            with contextlib.suppress(QueueError):
                queue.change_visibility(message.receipt, timeout_seconds=outcome.after_seconds)
    return kept


class Worker:
    def __init__(
        self,
        *,
        table: JobTable,
        dispatch_queue: Queue,
        delivery_queue: Queue,
        delivery_threads: int = 4,
        delivery_batch: int = 10,
        sweeper: Callable[[], object] | None = None,
        sweep_every: float = 60.0,
        wait_seconds: float = 1.0,
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self._table = table
        self._dispatch_queue = dispatch_queue
        self._delivery_queue = delivery_queue
        self._delivery_threads = delivery_threads
        self._delivery_batch = delivery_batch
        self._sweeper = sweeper
        self._sweep_every = sweep_every
        self._wait = wait_seconds
        self._hold = hold
        self._held = False
        self._held_lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set; returns after every thread finished its current batch."""
        threads = [threading.Thread(target=self._poll, args=(self._dispatch_queue, 1, stop), name="pages")]
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
        """Close the table's adapters (webhook loop, email provider connections)."""
        self._table.close()

    def handle(self, queue: Queue, messages: Sequence[ReceivedMessage]) -> None:
        """Process one received batch from ``queue`` and settle each message on it."""
        settle(self._table, queue, messages)

    def _poll(self, queue: Queue, batch: int, stop: threading.Event) -> None:
        while not stop.is_set():
            if self._holding():
                stop.wait(self._wait)
                continue
            try:
                messages = queue.receive(max_messages=batch, wait_seconds=self._wait)
                if messages:
                    self.handle(queue, messages)
            except Exception:  # a worker thread must survive one bad batch; its messages redeliver
                log.exception("worker.batch_failed")
                stop.wait(1.0)

    def _holding(self) -> bool:
        """Ask ``hold``; log when the worker starts and stops holding (once, not per thread)."""
        held = self._hold is not None and self._hold()
        with self._held_lock:
            changed, self._held = held != self._held, held
        if changed and held:
            log.warning("worker.holding reason=graph_unreachable: no messages are taken until it answers")
        elif changed:
            log.info("worker.resumed: the graph answers again")
        return held

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
