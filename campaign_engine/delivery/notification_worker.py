"""The notification worker: a batch of deliveries -> recheck -> signed POSTs -> acknowledged storage.

Per batch (up to 10 queue messages):

1. Recheck every delivery in **one** query right before posting (campaign incarnation, live, window,
   notify channel, membership, age policy, push opt-out, not yet notified). Pause, delete or recreate
   therefore stop every delivery not yet posted; a POST already in flight may finish.
2. POST the eligible ones concurrently through the safe egress client, signed in the Standard Webhooks
   form with ``webhook-id`` = delivery id (stable across retries).
3. Classify each answer with the acknowledgement grammar. Positives get ``notifiedAt`` in **one**
   transaction under ascending profile locks; counters move on the Dispatch in that same transaction.
   Negatives and egress-blocked destinations are counted as rejected and never retried. Uncertain
   answers are handed back for retry: the queue redelivers them and dead-letters after max receives.

Test deliveries (``campaignTestId``) go through the same path but never write ``notifiedAt``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import ValidationError

from campaign_engine.delivery.queue import ReceivedMessage
from campaign_engine.delivery.safe_transport import EgressBlocked, ResponseTooLarge
from campaign_engine.domain.acknowledgement import classify_acknowledgement
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.domain.notification import AnnouncementMetadata, AnnouncementPayload, payload_json
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.policy import policy_params, policy_query

__all__ = ["BatchResult", "NotificationWorker", "Verdict"]

log = logging.getLogger(__name__)

Verdict = Literal["positive", "negative", "uncertain", "blocked", "suppressed", "invalid"]


@dataclass
class BatchResult:
    done: list[ReceivedMessage] = field(default_factory=list)
    """Finished for good (sent, refused, suppressed, malformed): delete from the queue."""
    retry: list[ReceivedMessage] = field(default_factory=list)
    """Uncertain: leave on the queue (Lambda: report as batch item failures)."""
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    """By delivery id (or message id when the body was unreadable), for logs and tests."""


@dataclass(frozen=True)
class _Send:
    message: ReceivedMessage
    job: DeliveryJob
    url: str
    body: bytes


_COUNT = """
UNWIND $counts AS k
MATCH (d:Dispatch {id: k.dispatchId})
SET d.acknowledged = d.acknowledged + k.acknowledged, d.rejected = d.rejected + k.rejected,
    d.suppressed = d.suppressed + k.suppressed
"""


class NotificationWorker:
    def __init__(
        self,
        *,
        graph: Graph,
        client: httpx.Client,
        clock: Clock,
        secret: str,
        sender: str,
        default_webhook: str | None,
        adult_age: int,
        concurrency: int,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        # ``clock`` decides eligibility (injectable in tests); the signature timestamp is wall time
        # because receivers check it against their own clocks.
        self._graph = graph
        self._client = client
        self._clock = clock
        self._secret = secret
        self._sender = sender
        self._default_webhook = default_webhook
        self._adult_age = adult_age
        self._wall_clock = wall_clock
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="webhook")
        self._recheck = policy_query("notify_recheck")
        self._record = query("notify_record")

    def close(self) -> None:
        """Stop the POST pool and close the client (the worker owns the client it was given)."""
        self._pool.shutdown(wait=True)
        self._client.close()

    def handle_batch(self, messages: Sequence[ReceivedMessage]) -> BatchResult:
        result = BatchResult()
        jobs: dict[str, tuple[ReceivedMessage, DeliveryJob]] = {}
        for message in messages:
            job = _parse(message)
            if job is None or job.delivery_id in jobs:  # unreadable, or a duplicate inside this batch
                result.done.append(message)
                result.verdicts.setdefault(job.delivery_id if job else message.message_id, "invalid")
                continue
            jobs[job.delivery_id] = (message, job)
        if not jobs:
            return result

        now = self._clock()
        rows = self._graph.read(self._read_recheck, [job for _, job in jobs.values()], now=now)
        sends: list[_Send] = []
        for delivery_id, (message, job) in jobs.items():
            send = self._prepare(message, job, rows.get(delivery_id))
            if send is None:
                result.verdicts[delivery_id] = "suppressed"
            else:
                sends.append(send)

        for send, verdict in zip(sends, self._pool.map(self._post, sends), strict=True):
            result.verdicts[send.job.delivery_id] = verdict

        self._graph.write(
            self._write_outcomes,
            [job for _, job in jobs.values()],
            result.verdicts,
            now=format_ts(self._clock()),
        )
        for delivery_id, (message, _) in jobs.items():
            (result.retry if result.verdicts[delivery_id] == "uncertain" else result.done).append(message)
        return result

    # --- steps -----------------------------------------------------------------------------------

    def _read_recheck(self, tx: Tx, jobs: list[DeliveryJob], *, now: Any) -> dict[str, dict[str, Any]]:
        params = [
            {
                "deliveryId": j.delivery_id,
                "campaignId": j.campaign_id,
                "campaignCreatedAt": j.campaign_created_at,
                "profileId": j.profile_id,
                "testId": j.campaign_test_id,
            }
            for j in jobs
        ]
        result = tx.run(
            self._recheck, jobs=params, now=format_ts(now), **policy_params(now.date(), self._adult_age)
        )
        return {record["deliveryId"]: record.data() for record in result}

    def _prepare(
        self, message: ReceivedMessage, job: DeliveryJob, row: dict[str, Any] | None
    ) -> _Send | None:
        if row is None or row["blocked"] is not None:
            log.info("notify.suppressed delivery_id=%s reason=%s", job.delivery_id, row and row["blocked"])
            return None
        url = row["webhook"] or self._default_webhook
        copy = json.loads(row["definition"]).get("notification")
        if not url or not copy:
            log.info("notify.suppressed delivery_id=%s reason=no_destination_or_copy", job.delivery_id)
            return None
        payload = AnnouncementPayload(
            recipient=job.profile_id,
            sender=self._sender,
            title=copy["title"],
            body=copy["body"],
            metadata=AnnouncementMetadata(
                campaign_id=job.campaign_id,
                campaign_created_at=job.campaign_created_at,
                dispatch_id=job.dispatch_id,
                delivery_id=job.delivery_id,
                campaign_has_in_app=bool(row["hasInApp"]) and job.campaign_test_id is None,
                campaign_test_id=job.campaign_test_id,
            ),
        )
        return _Send(message=message, job=job, url=url, body=payload_json(payload))

    def _post(self, send: _Send) -> Verdict:
        headers = signed_headers(
            self._secret, msg_id=send.job.delivery_id, body=send.body, now=int(self._wall_clock())
        )
        headers["content-type"] = "application/json"
        try:
            with self._client.stream("POST", send.url, content=send.body, headers=headers) as response:
                answer = response.read()
        except EgressBlocked as exc:
            log.warning("notify.blocked delivery_id=%s reason=%s", send.job.delivery_id, exc.reason)
            return "blocked"
        except (ResponseTooLarge, httpx.HTTPError) as exc:
            log.info("notify.uncertain delivery_id=%s error=%s", send.job.delivery_id, type(exc).__name__)
            return "uncertain"
        verdict = classify_acknowledgement(response.status_code, answer, response.headers.get("content-type"))
        # Positives are recorded as notifiedAt (and counted on the Dispatch): logging each one too costs
        # a formatted line per recipient on the hot path. Everything else stays visible at INFO.
        log.log(
            logging.DEBUG if verdict == "positive" else logging.INFO,
            "notify.answer delivery_id=%s http_status=%s verdict=%s",
            send.job.delivery_id,
            response.status_code,
            verdict,
        )
        return verdict

    def _write_outcomes(
        self, tx: Tx, jobs: list[DeliveryJob], verdicts: dict[str, Verdict], *, now: str
    ) -> None:
        acks = [
            {
                "profileId": j.profile_id,
                "campaignId": j.campaign_id,
                "campaignCreatedAt": j.campaign_created_at,
                "dispatchId": j.dispatch_id,
            }
            for j in jobs
            if verdicts[j.delivery_id] == "positive" and j.campaign_test_id is None
        ]
        counts: dict[str, dict[str, Any]] = {}

        def bump(dispatch_id: str | None, key: str) -> None:
            if dispatch_id is not None:
                entry = counts.setdefault(
                    dispatch_id,
                    {"dispatchId": dispatch_id, "acknowledged": 0, "rejected": 0, "suppressed": 0},
                )
                entry[key] += 1

        if acks:
            lock_profiles(tx, [str(a["profileId"]) for a in acks])  # ascending: no deadlocks between batches
            acks.sort(key=lambda a: str(a["profileId"]))
            for record in tx.run(self._record, acks=acks, now=now):
                if record["first"]:
                    bump(record["dispatchId"], "acknowledged")
        for job in jobs:
            if job.campaign_test_id is not None:
                continue
            verdict = verdicts[job.delivery_id]
            if verdict in ("negative", "blocked"):
                bump(job.dispatch_id, "rejected")
            elif verdict == "suppressed":
                bump(job.dispatch_id, "suppressed")
        if counts:
            tx.run(_COUNT, counts=[counts[k] for k in sorted(counts)]).consume()


def _parse(message: ReceivedMessage) -> DeliveryJob | None:
    try:
        job = parse_job(message.body)
    except ValidationError:
        log.warning("notify.invalid_message message_id=%s", message.message_id)
        return None
    return job if isinstance(job, DeliveryJob) else None
