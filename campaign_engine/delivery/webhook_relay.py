"""The event-webhook relay: an endpoint's queued events POSTed in order, retried on schedule.

One relay job (``RelayJob``) serves one endpoint. It takes the endpoint's lease (one relay at a time, so
events leave in order), then runs rounds: read the oldest queued events, POST those of distinct
recipients concurrently (a recipient's later event never travels beside its earlier one, so each
recipient's events arrive in order) through the same signing poster and safe egress transport as
announcements, signed with the endpoint's live secrets (both during a rotation's overlap), with the
event id as ``webhook-id`` on every attempt. Each round's attempts (one node, its POSTs as lists), the
delivered events and the endpoint's failure state are written in one transaction under the lease.

A 2xx answer delivers an event; anything else (another status, no answer) fails the round: the endpoint
waits the Standard Webhooks schedule (``domain/webhook_events.py``), counted in failures in a row, is
probed with its oldest event alone until it answers again, and
is disabled, with its reason, once it has failed for ``DISABLE_AFTER_SECONDS``. A wait up to SQS's 900 s
is the next job's delay; a longer one is the endpoint's ``retryAt``, which the sweep enqueues once due
(``enqueue_due``), as it does for every endpoint with queued events and a free lease. At least once: an
event leaves the queue only after its 2xx was recorded; a crash between the two resends it with the
same ``webhook-id``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.delivery.notify.sender import Answered, Outgoing, PostResult, WebhookSender
from campaign_engine.delivery.relay_kick import RelayKick
from campaign_engine.domain.dispatch import RelayJob, job_json
from campaign_engine.domain.types import Clock, format_ts, parse_ts
from campaign_engine.domain.webhook_events import DISABLE_AFTER_SECONDS, retry_delay_after
from campaign_engine.domain.webhook_keys import RingUnreadable, SecretBox
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.queue.port import MAX_DELAY_SECONDS, Queue, QueueError

__all__ = ["RelayResult", "WebhookRelay", "enqueue_due"]

log = logging.getLogger(__name__)

_LEASE_SECONDS = 120


@dataclass(frozen=True)
class RelayResult:
    delivered: int = 0
    failed: bool = False
    more: bool = False
    """Events still queued and the endpoint due: send the next job now."""
    wait_seconds: int | None = None
    """After a failure: when to try again."""


class WebhookRelay:
    def __init__(
        self,
        *,
        graph: Graph,
        sender: WebhookSender,
        box: SecretBox | None,
        queue: Queue,
        clock: Clock,
        batch: int = 200,
        run_seconds: float = 20.0,
    ) -> None:
        self._graph = graph
        self._sender = sender
        self._box = box
        self._queue = queue
        self._clock = clock
        self._batch = batch
        self._run_seconds = run_seconds
        self._kick = RelayKick(graph=graph, queue=queue)

    def close(self) -> None:
        """Close the sender (its connections and loop): the relay owns the sender it was given."""
        close = getattr(self._sender, "close", None)
        if close is not None:
            close()

    def kick(self, committed: Collection[str] = ()) -> None:
        """Start the relay of the endpoints ``committed`` work queued events for, and of those this
        process touched outside any scope (``delivery/relay_kick.py``, shared with the API)."""
        self._kick.kick(committed)

    def handle(self, job: RelayJob) -> RelayResult:
        """One job: rounds until the queue is empty, a round fails or the run budget is spent; then the
        follow-up job (now, or after the wait) when there is more to do."""
        result = self.run(job.endpoint_id)
        delay = 0 if result.more else result.wait_seconds
        if delay is not None and delay <= MAX_DELAY_SECONDS:
            try:
                self._queue.send_batch([job_json(job)], delay_seconds=delay)
            except QueueError:  # the sweep enqueues it again within a minute
                log.warning("webhooks.enqueue_failed endpoint_id=%s", job.endpoint_id)
        return result

    def run(self, endpoint_id: str) -> RelayResult:
        now = self._clock()
        token = uuid.uuid4().hex
        lease = format_ts(now + timedelta(seconds=_LEASE_SECONDS))
        claim = self._graph.write(
            _claim, endpoint_id=endpoint_id, now=format_ts(now), lease=lease, token=token
        )
        if claim is None:
            return RelayResult()  # disabled, deleted, not yet due, or another relay holds it
        if self._box is None:
            log.error("webhooks.secrets_key_missing endpoint_id=%s", endpoint_id)
            self._release(endpoint_id, token)
            return RelayResult(failed=True)
        try:
            ring = self._box.open(claim["keys"])
        except RingUnreadable:
            log.error("webhooks.secret_unreadable endpoint_id=%s", endpoint_id)
            self._release(endpoint_id, token)
            return RelayResult(failed=True)
        state = {"failures": int(claim["failures"]), "failingSince": claim["failingSince"]}
        started = time.monotonic()
        delivered = 0
        while True:
            pending = self._graph.read(_pending, endpoint_id=endpoint_id, limit=self._batch)
            if not pending:
                self._release(endpoint_id, token)
                # A kick's job for events queued since that read found the lease held and did nothing:
                # looking again after letting go sends them now, not at the next sweep.
                more = bool(self._graph.read(_pending, endpoint_id=endpoint_id, limit=1))
                return RelayResult(delivered=delivered, more=more)
            seen: set[str] = set()
            round_ = []
            for row in pending:  # the first queued event of each recipient
                if row["recipientKey"] not in seen:
                    seen.add(row["recipientKey"])
                    round_.append(row)
            if state["failures"]:
                round_ = round_[:1]  # a failing endpoint is probed with its oldest event alone
            now = self._clock()
            secrets = ring.signing(int(now.timestamp()))
            url = claim["url"]
            outgoing = [
                Outgoing(url=url, body=row["body"].encode(), msg_id=row["eventId"], secrets=secrets)
                for row in round_
            ]
            began = time.perf_counter()
            answers = self._sender.post_all(outgoing)
            latency = int((time.perf_counter() - began) * 1000)
            ok = [row for row, answer in zip(round_, answers, strict=True) if _delivered(answer)]
            failed = len(ok) < len(round_)
            settled_at = self._clock()
            endpoint, retry_at = _endpoint_state(state, failed=failed, now=settled_at, answers=answers)
            attempts = _attempt_round(round_, answers, at=settled_at, latency=latency, retry_at=retry_at)
            out_of_time = time.monotonic() - started > self._run_seconds
            done = failed or out_of_time
            self._graph.write(
                _settle, endpoint_id=endpoint_id, token=token, endpoint=endpoint, release=done,
                delivered=_by_batch(ok), attempts=attempts, now=format_ts(settled_at),
            )  # fmt: skip
            delivered += len(ok)
            state = {"failures": endpoint["failures"], "failingSince": endpoint["failingSince"]}
            if failed:
                if endpoint.get("enabled") is False:
                    log.error("webhooks.endpoint_disabled endpoint_id=%s", endpoint_id)
                    return RelayResult(delivered=delivered, failed=True)
                wait = retry_delay_after(endpoint["failures"])
                log.warning(
                    "webhooks.failed endpoint_id=%s failures=%d wait=%d",
                    endpoint_id,
                    endpoint["failures"],
                    wait,
                )
                return RelayResult(delivered=delivered, failed=True, wait_seconds=wait)
            if out_of_time:
                return RelayResult(delivered=delivered, more=True)

    def _release(self, endpoint_id: str, token: str) -> None:
        self._graph.write(
            _settle, endpoint_id=endpoint_id, token=token, endpoint={}, release=True,
            delivered=[], attempts=None, now=format_ts(self._clock()),
        )  # fmt: skip


def _delivered(answer: PostResult) -> bool:
    return isinstance(answer, Answered) and 200 <= answer.status_code < 300


def _endpoint_state(
    state: dict[str, Any], *, failed: bool, now: datetime, answers: list[PostResult]
) -> tuple[dict[str, Any], str | None]:
    """The endpoint's new failure state after a round, and when it is retried (None: not failing)."""
    statuses = [a.status_code for a in answers if isinstance(a, Answered)]
    last_status = statuses[-1] if statuses else None
    common = {"lastStatus": last_status, "lastAttemptAt": format_ts(now)}
    if not failed:
        return {**common, "failures": 0, "failingSince": None, "retryAt": None}, None
    failures = int(state["failures"]) + 1
    since = state["failingSince"] or format_ts(now)
    retry_at = format_ts(now + timedelta(seconds=retry_delay_after(failures)))
    endpoint: dict[str, Any] = {**common, "failures": failures, "failingSince": since, "retryAt": retry_at}
    if (now - parse_ts(since)).total_seconds() >= DISABLE_AFTER_SECONDS:
        endpoint |= {
            "enabled": False,
            "retryAt": None,
            "disabledReason": f"failing since {since} ({failures} attempts in a row; last status"
            f" {last_status if last_status is not None else 'none: no answer'});"
            " update enabled=true to resume",
        }
    return endpoint, endpoint.get("retryAt")


def _attempt_round(
    round_: list[dict[str, Any]],
    answers: list[PostResult],
    *,
    at: datetime,
    latency: int,
    retry_at: str | None,
) -> dict[str, Any]:
    """A round's attempts as one node's properties: the POSTs as parallel lists (a status of 0 and an
    error of '' stand for none: a list property cannot hold null), what they share once. ``retryAt``
    belongs to the attempts that were not delivered (``list_attempts`` reads it so)."""
    stamp = format_ts(at)
    return {
        "at": stamp,
        "orderKey": f"{stamp}|{uuid.uuid4().hex}",
        "latencyMs": latency,
        "retryAt": retry_at,
        "eventIds": [row["eventId"] for row in round_],
        "types": [row["type"] for row in round_],
        # When each event occurred (its order key's first part): what a replay of it starts from.
        "occurredAts": [str(row["orderKey"]).partition("|")[0] for row in round_],
        "statusCodes": [a.status_code if isinstance(a, Answered) else 0 for a in answers],
        "errors": ["" if isinstance(a, Answered) else type(a).__name__ for a in answers],
    }


def _claim(tx: Tx, *, endpoint_id: str, now: str, lease: str, token: str) -> dict[str, Any] | None:
    record = tx.run(
        statement("webhook_relay_claim"), endpointId=endpoint_id, now=now, leaseUntil=lease, token=token
    )
    row = record.single()
    return None if row is None else row.data()


def _pending(tx: Tx, *, endpoint_id: str, limit: int) -> list[dict[str, Any]]:
    """The oldest ``limit`` unsent events, each with its batch's key and its index in the batch; batches
    are read lazily, so a queue of long batches costs the round what it sends."""
    events: list[dict[str, Any]] = []
    for batch in tx.run(statement("webhook_relay_pending"), endpointId=endpoint_id, limit=limit):
        lists = (batch["idx"], batch["eventIds"], batch["types"], batch["bodies"], batch["recipientKeys"],
                 batch["orderKeys"])  # fmt: skip
        for index, event_id, type_, body, recipient, order_key in zip(*lists, strict=True):
            events.append({"batchKey": batch["batchKey"], "index": index, "eventId": event_id, "type": type_,
                           "body": body, "recipientKey": recipient, "orderKey": order_key})  # fmt: skip
        if len(events) >= limit:
            break
    return events[:limit]


def _by_batch(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Delivered events as the settle statement marks them: per batch key, the events' indexes."""
    grouped: dict[str, list[int]] = {}
    for row in rows:
        grouped.setdefault(row["batchKey"], []).append(int(row["index"]))
    return [{"key": key, "idx": idx} for key, idx in grouped.items()]


def _settle(tx: Tx, *, endpoint_id: str, token: str, endpoint: dict[str, Any], release: bool,
            delivered: list[dict[str, Any]], attempts: dict[str, Any] | None, now: str) -> None:  # fmt: skip
    tx.run(
        statement("webhook_relay_settle"), endpointId=endpoint_id, token=token, endpoint=endpoint,
        release=release, delivered=delivered, attempts=attempts, now=now,
    ).consume()  # fmt: skip


_DUE = "webhook_relay_due"  # cypher/delivery/webhook_relay_due.cypher


def enqueue_due(graph: Graph, queue: Queue, *, now: datetime) -> list[str]:
    """The sweep's share: a relay job for every enabled endpoint with queued events that is due and free
    (its first attempt, or its retry after a wait longer than the queue can hold). Returns their ids."""
    ids = graph.read(lambda tx: [str(r["id"]) for r in tx.run(statement(_DUE), now=format_ts(now))])
    if ids:
        try:
            for start in range(0, len(ids), 10):
                queue.send_batch([job_json(RelayJob(endpoint_id=i)) for i in ids[start : start + 10]])
        except QueueError:
            log.warning("webhooks.sweep_enqueue_failed endpoints=%d", len(ids))
    return ids
