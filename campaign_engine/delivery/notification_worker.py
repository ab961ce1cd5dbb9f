"""The notification worker: a batch of deliveries -> recheck -> signed POSTs -> acknowledged storage.

Per batch (up to 10 SQS messages, or the local queue's larger receive batch):

1. Recheck every delivery in **one** query right before posting (campaign incarnation, live, window,
   notify channel, membership, age policy, push opt-out, not yet notified). Pause, delete or recreate
   therefore stop every delivery not yet posted; a POST already in flight may finish. A batch's POSTs
   can wait for a free slot behind other batches, so right before each POST starts the poster also
   asks the ``SendGate`` (campaign incarnation still live with the notify channel, re-read at most
   every ``GATE_TTL_SECONDS``): a pause stops every POST that starts more than that after it commits.
2. POST the eligible ones concurrently through the safe egress client, signed in the Standard Webhooks
   form with ``webhook-id`` = delivery id (stable across retries). The POSTs run on one private event
   loop (``WebhookPoster``) shared by every polling thread: a thread pool spent most of its CPU on GIL
   hand-offs, an event loop spends it on the requests. The whole batch is in flight at once (up to the
   concurrency bound), so nothing waits long between its recheck and its POST.
3. Classify each answer with the acknowledgement grammar. Positives get ``notifiedAt`` in **one**
   transaction under ascending profile locks; counters move on the Dispatch in that same transaction.
   Negatives and egress-blocked destinations are counted as rejected and never retried. Uncertain
   answers are handed back for retry: the queue redelivers them and dead-letters after max receives.

Test deliveries (``campaignTestId``) go through the same path but never write ``notifiedAt``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import httpx
from pydantic import ValidationError

from campaign_engine.delivery.queue import ReceivedMessage
from campaign_engine.delivery.safe_transport import AsyncSafeTransport, EgressBlocked
from campaign_engine.domain.acknowledgement import classify_acknowledgement
from campaign_engine.domain.dispatch import DeliveryJob, parse_job
from campaign_engine.domain.notification import AnnouncementMetadata, AnnouncementPayload, payload_json
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.graph.cypher import query
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.policy import policy_params, policy_query

__all__ = [
    "GATE_TTL_SECONDS",
    "Answer",
    "BatchResult",
    "NotificationWorker",
    "Outgoing",
    "SendGate",
    "Skipped",
    "Verdict",
    "WebhookPoster",
    "record_notified",
]

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


class _Recheck(NamedTuple):
    """One job's recheck: why it must not be sent (None = send), its own webhook, its campaign's copy."""

    blocked: str | None
    webhook: str | None
    definition: str
    has_in_app: bool


@dataclass(frozen=True)
class Outgoing:
    """One webhook POST: ``body`` is sent unchanged and signed with ``msg_id`` as ``webhook-id``.

    ``campaign`` is the (id, createdAt) incarnation the poster's gate checks right before sending;
    None (self-tests, benchmarks) sends without asking."""

    url: str
    body: bytes
    msg_id: str
    campaign: tuple[str, str] | None = None


@dataclass(frozen=True)
class Skipped:
    """Not posted: the gate said no (``retry`` False: the campaign stopped) or could not tell (True)."""

    retry: bool


GATE_TTL_SECONDS = 0.2

# replan=skip here and in _COUNT: a unique-key seek, as in cypher/notify_recheck.cypher.
_GATE = """
CYPHER replan=skip
MATCH (c:Campaign {id: $campaignId})
RETURN c.createdAt = $createdAt AND c.status = 'live' AND 'notify' IN coalesce(c.channels, []) AS open
"""


class SendGate:
    """Whether a campaign incarnation may still be posted to; each answer is reused for ``ttl`` seconds.

    Used only from the poster's event loop (no locks needed): one read per campaign and ``ttl`` however
    many POSTs ask, run in a worker thread so the loop keeps sending meanwhile. The per-batch recheck
    stays the full eligibility rule; this only catches a pause (or delete, or the notify channel going)
    that lands while a rechecked POST waits for its slot.
    """

    def __init__(
        self, graph: Graph, *, ttl: float = GATE_TTL_SECONDS, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._graph = graph
        self._ttl = ttl
        self._monotonic = monotonic
        self._answers: dict[tuple[str, str], tuple[float, bool]] = {}
        self._reading: dict[tuple[str, str], asyncio.Future[bool]] = {}

    async def allows(self, campaign: tuple[str, str]) -> bool:
        """Raises when the graph cannot answer (the caller treats that as "try later")."""
        answer = self._answers.get(campaign)
        if answer is not None and self._monotonic() - answer[0] < self._ttl:
            return answer[1]
        reading = self._reading.get(campaign)
        if reading is None:
            reading = asyncio.get_running_loop().run_in_executor(None, self._read, campaign)
            self._reading[campaign] = reading
            try:
                is_open = await reading
            finally:
                del self._reading[campaign]
            self._answers[campaign] = (self._monotonic(), is_open)
            return is_open
        return await asyncio.shield(reading)

    def _read(self, campaign: tuple[str, str]) -> bool:
        campaign_id, created_at = campaign
        rows = self._graph.read(
            lambda tx: [r["open"] for r in tx.run(_GATE, campaignId=campaign_id, createdAt=created_at)]
        )
        return bool(rows and rows[0])


@dataclass(frozen=True)
class Answer:
    status_code: int
    body: bytes
    content_type: str | None


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:  # uvloop ships with uvicorn[standard]; the POST loop is pure overhead otherwise
        import uvloop
    except ImportError:  # pragma: no cover - a platform without uvloop
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class WebhookPoster:
    """Signed webhook POSTs, callable from any thread, run concurrently on one private event loop.

    At most ``concurrency`` POSTs are in flight across all callers. Each request is signed right before
    it is sent (fresh ``webhook-timestamp`` per attempt) and goes through ``AsyncSafeTransport.post``
    (the safe transport without the httpx client layers; ``timeout`` bounds connect and answer).
    Transport failures (``httpx.HTTPError``, which includes ``EgressBlocked`` and ``ResponseTooLarge``)
    come back as values; anything else is a bug and raises in the caller after the batch's other POSTs
    are cancelled. The poster owns the transport and closes it.
    """

    def __init__(
        self,
        transport: AsyncSafeTransport,
        *,
        secret: str,
        concurrency: int,
        timeout: float,
        wall_clock: Callable[[], float] = time.time,
        gate: SendGate | None = None,
    ) -> None:
        self._transport = transport
        self._gate = gate
        self._timeout = timeout
        self._secret = secret
        self._wall_clock = wall_clock
        self._loop = _new_event_loop()
        self._semaphore = asyncio.Semaphore(max(1, concurrency))
        self._thread = threading.Thread(target=self._loop.run_forever, name="webhook-loop", daemon=True)
        self._thread.start()
        self._closed = False

    def post_all(self, items: Sequence[Outgoing]) -> list[Answer | Skipped | httpx.HTTPError]:
        """POST every item concurrently; answers in the order of ``items``."""
        if not items:
            return []
        return asyncio.run_coroutine_threadsafe(self._post_all(items), self._loop).result()

    def close(self) -> None:
        """Close the transport's connections and stop the loop; idempotent."""
        if self._closed:
            return
        self._closed = True
        asyncio.run_coroutine_threadsafe(self._transport.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _post_all(self, items: Sequence[Outgoing]) -> list[Answer | Skipped | httpx.HTTPError]:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._post(item)) for item in items]
        return [task.result() for task in tasks]

    async def _post(self, item: Outgoing) -> Answer | Skipped | httpx.HTTPError:
        async with self._semaphore:
            if self._gate is not None and item.campaign is not None:
                try:
                    if not await self._gate.allows(item.campaign):
                        return Skipped(retry=False)
                except Exception:  # the graph cannot say: do not post now, the queue retries it
                    log.warning("notify.gate_unavailable delivery_id=%s", item.msg_id)
                    return Skipped(retry=True)
            headers = signed_headers(
                self._secret, msg_id=item.msg_id, body=item.body, now=int(self._wall_clock())
            )
            headers["content-type"] = "application/json"
            try:
                # The whole (capped) answer is read before this returns: nothing is streamed.
                status, answer_headers, body = await self._transport.post(
                    item.url, item.body, list(headers.items()), timeout=self._timeout
                )
            except httpx.HTTPError as exc:
                return exc
            content_type = next(
                (v.decode("latin-1") for k, v in answer_headers if k.lower() == b"content-type"), None
            )
            return Answer(status, body, content_type)


_COUNT = """
CYPHER replan=skip
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
        transport: AsyncSafeTransport,
        clock: Clock,
        secret: str,
        sender: str,
        default_webhook: str | None,
        adult_age: int,
        concurrency: int,
        timeout: float,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        # ``clock`` decides eligibility (injectable in tests); the signature timestamp is wall time
        # because receivers check it against their own clocks.
        self._graph = graph
        self._clock = clock
        self._sender = sender
        self._default_webhook = default_webhook
        self._adult_age = adult_age
        self._poster = WebhookPoster(
            transport,
            secret=secret,
            concurrency=concurrency,
            timeout=timeout,
            wall_clock=wall_clock,
            gate=SendGate(graph),
        )
        # Every outcome write bumps its Dispatch node's counters, so the writes of one dispatch take
        # turns on that node's lock in Neo4j whatever we do; letting this process's threads queue here
        # instead of inside Neo4j's lock manager (which spins before it parks) saves the database that
        # CPU. (Without this lock bench.dispatch was no faster, within its noise.)
        self._write_turn = threading.Lock()
        self._recheck = policy_query("notify_recheck")

    def close(self) -> None:
        """Stop the POST loop and close the transport (the worker owns the transport it was given)."""
        self._poster.close()

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
        copies: dict[str, Any] = {}  # one parse of a campaign's definition per batch, not per recipient
        for delivery_id, (message, job) in jobs.items():
            send = self._prepare(message, job, rows.get(delivery_id), copies)
            if send is None:
                result.verdicts[delivery_id] = "suppressed"
            else:
                sends.append(send)

        answers = self._poster.post_all(
            [
                Outgoing(
                    url=s.url,
                    body=s.body,
                    msg_id=s.job.delivery_id,
                    # Self-tests ignore status: only ordinary deliveries ask the pause gate.
                    campaign=None
                    if s.job.campaign_test_id is not None
                    else (s.job.campaign_id, s.job.campaign_created_at),
                )
                for s in sends
            ]
        )
        for send, answer in zip(sends, answers, strict=True):
            result.verdicts[send.job.delivery_id] = _verdict(send.job.delivery_id, answer)

        with self._write_turn:
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

    def _read_recheck(self, tx: Tx, jobs: list[DeliveryJob], *, now: Any) -> dict[str, _Recheck]:
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
        record = tx.run(
            self._recheck, jobs=params, now=format_ts(now), **policy_params(now.date(), self._adult_age)
        ).single(strict=True)
        copies = {campaign: (definition, in_app) for campaign, definition, in_app in record["campaigns"]}
        rows: dict[str, _Recheck] = {}
        columns = (record["deliveryIds"], record["blocked"], record["webhooks"])
        for job, delivery_id, blocked, webhook in zip(jobs, *columns, strict=True):
            definition, has_in_app = copies.get(job.campaign_id, ("", False))
            rows[delivery_id] = _Recheck(blocked or None, webhook or None, definition, has_in_app)
        return rows

    def _prepare(
        self,
        message: ReceivedMessage,
        job: DeliveryJob,
        row: _Recheck | None,
        copies: dict[str, Any],
    ) -> _Send | None:
        if row is None or row.blocked is not None:
            log.info("notify.suppressed delivery_id=%s reason=%s", job.delivery_id, row and row.blocked)
            return None
        url = row.webhook or self._default_webhook
        definition = row.definition
        if definition not in copies:
            copies[definition] = json.loads(definition).get("notification")
        copy = copies[definition]
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
                campaign_has_in_app=row.has_in_app and job.campaign_test_id is None,
                campaign_test_id=job.campaign_test_id,
            ),
        )
        return _Send(message=message, job=job, url=url, body=payload_json(payload))

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

        def bump(dispatch_id: str | None, key: str, by: int = 1) -> None:
            if dispatch_id is not None:
                entry = counts.setdefault(
                    dispatch_id,
                    {"dispatchId": dispatch_id, "acknowledged": 0, "rejected": 0, "suppressed": 0},
                )
                entry[key] += by

        for dispatch_id, firsts in record_notified(tx, acks, now=now).items():
            bump(dispatch_id, "acknowledged", firsts)
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


def record_notified(tx: Tx, acks: list[dict[str, Any]], *, now: str) -> dict[str | None, int]:
    """Sets ``notifiedAt`` for acknowledged deliveries under their profile locks (taken by the statement
    itself, ascending); returns, by dispatch id, how many of them were the profile's first
    acknowledgement. A (profile, campaign) acknowledged twice in one batch (two dispatches) is written
    once: the statement must see each pair once, and only one of them can be first anyway."""
    unique = {(a["profileId"], a["campaignId"]): a for a in reversed(acks)}  # reversed: the first wins
    ordered = sorted(unique.values(), key=lambda a: str(a["profileId"]))
    if not ordered:
        return {}
    result = tx.run(query("notify_record"), acks=ordered, now=now)
    return {record["dispatchId"]: record["firsts"] for record in result}


def _verdict(delivery_id: str, answer: Answer | Skipped | httpx.HTTPError) -> Verdict:
    if isinstance(answer, Skipped):
        log.info("notify.not_posted delivery_id=%s retry=%s", delivery_id, answer.retry)
        return "uncertain" if answer.retry else "suppressed"
    if isinstance(answer, EgressBlocked):
        log.warning("notify.blocked delivery_id=%s reason=%s", delivery_id, answer.reason)
        return "blocked"
    if isinstance(answer, httpx.HTTPError):  # includes ResponseTooLarge: an unreadable answer
        log.info("notify.uncertain delivery_id=%s error=%s", delivery_id, type(answer).__name__)
        return "uncertain"
    verdict = classify_acknowledgement(answer.status_code, answer.body, answer.content_type)
    # Positives are recorded as notifiedAt (and counted on the Dispatch): logging each one too costs
    # a formatted line per recipient on the hot path. Everything else stays visible at INFO.
    log.log(
        logging.DEBUG if verdict == "positive" else logging.INFO,
        "notify.answer delivery_id=%s http_status=%s verdict=%s",
        delivery_id,
        answer.status_code,
        verdict,
    )
    return verdict


def _parse(message: ReceivedMessage) -> DeliveryJob | None:
    try:
        job = parse_job(message.body)
    except ValidationError:
        log.warning("notify.invalid_message message_id=%s", message.message_id)
        return None
    return job if isinstance(job, DeliveryJob) else None
