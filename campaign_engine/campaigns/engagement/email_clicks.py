"""First-party email clicks: recording a recipient's click on a campaign's CTA.

A click arrives at ``GET /c/go`` (``api/clicks.py``) with a verified click token naming the recipient's
durable ``campaignUnsubscribeId`` and the campaign incarnation. The redirect never waits for the graph:
the route hands the click to this process's ``ClickRecorder`` and answers at once. The recorder writes
what is pending in batches on its own thread, one transaction per batch (``record_clicks``: the profile
locks in ascending order, one UNWIND, the webhook events in the same transaction), so a burst of clicks
costs one transaction per batch rather than one per click.

While the graph is unreachable the recorder keeps its clicks and tries again (0.5 s, doubling to 10 s)
for ``give_up_after`` seconds (10 minutes) from each click; then, or when ``max_pending`` clicks (10,000)
already wait, a click is dropped with a ``email_click.dropped`` log line: a click is a signal, not a
commitment, and the reader was redirected either way. A process that ends keeps what it could not write
(``close`` waits a few seconds). On Lambda the thread runs while the container does, so clicks wait for
the container's next invocation or are lost with it.

A click token counts once: a replay of a token this process holds (pending, being written, or among
the last ``2 * max_pending`` it wrote) takes no buffer space and counts nothing, so replaying one link
cannot fill the buffer and crowd out other readers' clicks.

Recording is once per recipient and campaign: ``emailClickedAt`` on ``CAMPAIGN_STATE`` is the earliest
click (whatever order batches commit in), ``emailClickCount`` every recorded click (a token once);
``getStats``'s ``emailClicked`` counts distinct recipients, so a repeated click never counts twice. The
first click is a ``recipient.email_clicked`` event. A batch is written with ``Graph.write_idempotent``
and carries an id the states remember, so a commit cut off after it landed is re-run without counting twice.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.webhook_outbox import record_events

__all__ = ["ClickHit", "ClickRecorder", "record_clicks"]

log = logging.getLogger(__name__)

_PROFILES = "email_click_profiles"  # cypher/engagement/email_click_profiles.cypher


@dataclass(frozen=True)
class ClickHit:
    """One confirmed click: who (the durable id), which campaign incarnation, when (the one format)."""

    unsubscribe_id: str
    campaign_id: str
    campaign_created_at: str
    at: str


def record_clicks(graph: Graph, clicks: Sequence[ClickHit], *, batch_id: str | None = None) -> int:
    """Record ``clicks`` in one transaction; returns how many were a recipient's first click of their
    campaign. A click whose recipient or campaign incarnation has no state is ignored."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for hit in clicks:
        key = (hit.unsubscribe_id, hit.campaign_id, hit.campaign_created_at)
        row = rows.get(key)
        if row is None:
            rows[key] = {"unsubscribeId": key[0], "campaignId": key[1], "campaignCreatedAt": key[2],
                         "at": hit.at, "count": 1}  # fmt: skip
        else:
            row["at"], row["count"] = min(row["at"], hit.at), row["count"] + 1
    ordered = sorted(rows.values(), key=lambda r: (r["unsubscribeId"], r["campaignId"]))
    batch = batch_id or uuid.uuid4().hex

    def tx_fn(tx: Tx) -> int:
        profile_ids = [
            r["profileId"] for r in tx.run(statement(_PROFILES), unsubscribeIds=sorted({r[0] for r in rows}))
        ]
        if not lock_profiles(tx, profile_ids):
            return 0
        firsts = 0
        for row in tx.run(statement("email_click_record"), clicks=ordered, batchId=batch):
            if not row["first"]:
                continue
            firsts += 1
            ids = {k: row[k] for k in ("campaignId", "dispatchId", "profileId")}
            event = Event.of("recipient.email_clicked", row["clickedAt"], **ids, channel="email")
            record_events(tx, graph, row["tenantId"], [event])
        return firsts

    return graph.write_idempotent(tx_fn) if rows else 0


_Key = tuple[str, str, str]  # a click token's recipient and campaign incarnation


def _key(hit: ClickHit) -> _Key:
    return hit.unsubscribe_id, hit.campaign_id, hit.campaign_created_at


class ClickRecorder:
    """Clicks handed over by the redirect route, written in batches on one thread; never blocks a caller."""

    def __init__(
        self,
        graph: Graph,
        *,
        max_pending: int = 10_000,
        batch_size: int = 500,
        give_up_after: float = 600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._graph = graph
        self._max_pending = max_pending
        self._batch_size = batch_size
        self._give_up_after = give_up_after
        self._monotonic = monotonic
        self._pending: OrderedDict[_Key, tuple[float, ClickHit]] = OrderedDict()
        self._held: OrderedDict[_Key, None] = OrderedDict()  # tokens pending, being written or written
        self._changed = threading.Condition()
        self._busy = False  # a batch is being written
        self._closing = False
        self._thread: threading.Thread | None = None
        self.recorded = 0
        """Batches' clicks written (first clicks or repeats), for tests and logs."""
        self.dropped = 0

    def record(self, hit: ClickHit) -> bool:
        """Queue ``hit``; False when it was dropped (the buffer is full or the recorder closed)."""
        key = _key(hit)
        with self._changed:
            if key in self._held and not self._closing:  # a replay: counted once, no buffer space
                return True
            if self._closing or len(self._pending) >= self._max_pending:
                self.dropped += 1
                if self.dropped % 1000 == 1:  # one line per thousand: a full buffer must not flood the log
                    reason = "closed" if self._closing else "full"
                    log.warning("email_click.dropped count=1 total=%d reason=%s", self.dropped, reason)
                return False
            self._pending[key] = (self._monotonic(), hit)
            self._held[key] = None
            while len(self._held) > 2 * self._max_pending:  # bounded: the oldest were written long ago
                self._held.popitem(last=False)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="email-clicks", daemon=True)
                self._thread.start()
            self._changed.notify_all()
            return True

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every click handed over so far is written or dropped; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is pending for up to ``timeout`` seconds, then stop (what is left is dropped)."""
        self.flush(timeout)
        with self._changed:
            self._closing = True
            left = len(self._pending)
            self._pending.clear()
            self._held.clear()
            self._changed.notify_all()
            thread = self._thread
        if left:
            self.dropped += left
            log.warning("email_click.dropped count=%d reason=closed", left)
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        delay = 0.0
        batch: list[tuple[float, ClickHit]] = []
        batch_id = ""
        while True:
            with self._changed:
                while not batch and not self._pending and not self._closing:
                    self._busy = False
                    self._changed.notify_all()
                    self._changed.wait()
                if self._closing:
                    if batch:
                        self.dropped += len(batch)
                        log.warning("email_click.dropped count=%d reason=closed", len(batch))
                    self._busy = False
                    self._changed.notify_all()
                    return
                if not batch:  # a failed batch is retried as it was: its id makes a landed commit count once
                    while self._pending and len(batch) < self._batch_size:
                        batch.append(self._pending.popitem(last=False)[1])
                    batch_id = uuid.uuid4().hex
                self._busy = True
            try:
                record_clicks(self._graph, [hit for _, hit in batch], batch_id=batch_id)
            except ServiceUnavailable:
                batch = self._expired(batch)
                delay = min(max(delay * 2, 0.5), 10.0)
                log.warning("email_click.graph_unavailable pending=%d retry_in=%.1f", len(batch), delay)
                with self._changed:
                    self._changed.wait_for(lambda: self._closing, timeout=delay)
                continue
            except Exception:  # a bug must not spin: this batch is lost, the next ones are tried
                log.exception("email_click.record_failed count=%d", len(batch))
                self.dropped += len(batch)
                self._release(batch)
            else:
                self.recorded += len(batch)
            batch, delay = [], 0.0

    def _expired(self, batch: list[tuple[float, ClickHit]]) -> list[tuple[float, ClickHit]]:
        """``batch`` without the clicks older than ``give_up_after``, which are dropped."""
        now = self._monotonic()
        kept = [entry for entry in batch if now - entry[0] < self._give_up_after]
        self._release([entry for entry in batch if entry not in kept])
        if len(kept) < len(batch):
            self.dropped += len(batch) - len(kept)
            log.warning("email_click.dropped count=%d reason=graph_unavailable", len(batch) - len(kept))
        return kept

    def _release(self, lost: list[tuple[float, ClickHit]]) -> None:
        """Clicks dropped unwritten: their tokens count again when clicked again."""
        with self._changed:
            for _, hit in lost:
                self._held.pop(_key(hit), None)
