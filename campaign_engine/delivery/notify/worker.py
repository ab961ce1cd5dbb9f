"""The notification worker: a batch of deliveries -> recheck -> signed POSTs -> acknowledged storage.

Per batch (up to 10 SQS messages, or the local queue's larger receive batch):

1. Recheck every delivery in **one** query right before posting (campaign incarnation, live, window,
   notify channel, membership, age policy, push opt-out, not yet notified). Pause, delete or recreate
   therefore stop every delivery not yet posted; a POST already in flight may finish. A batch's POSTs
   can still wait for a free slot behind other batches, which is why the sender the worker is given
   asks its pause gate (``gate.SendGate``) right before each POST starts.
2. Hand the eligible ones to the injected ``WebhookSender`` (in production ``poster.WebhookPoster``:
   concurrent POSTs through the safe egress transport, signed in the Standard Webhooks form with
   ``webhook-id`` = delivery id, stable across retries). It answers one ``PostResult`` per item; the
   worker never sees a transport's exception types.
3. Classify each result with the acknowledgement grammar. Positives get ``notifiedAt`` in **one**
   transaction under ascending profile locks; counters move on the Dispatch in that same transaction.
   Negatives and egress-blocked destinations are counted as rejected and never retried. Uncertain
   answers are handed back for retry: the queue redelivers them and dead-letters after max receives.
   That write is ``outcomes.py``'s.

With a notify frequency cap configured (``CAMPAIGN_FREQUENCY_CAPS``), step 1 is a write: it takes the
profile locks (ascending) and reserves each recipient's slot or holds it back as ``capped`` (counted on
the Dispatch in that transaction, never retried by it); see ``delivery/frequency_cap.py``.

Test deliveries (``campaignTestId``) go through the same path but never write ``notifiedAt``.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from campaign_engine.delivery.frequency_cap import count_capped, notify_recheck_query
from campaign_engine.delivery.notify.formats import Formats, NoEngineDid
from campaign_engine.delivery.notify.lcn import lcn_body, learncard_did
from campaign_engine.delivery.notify.outcomes import write_outcomes
from campaign_engine.delivery.notify.sender import (
    Outgoing,
    WebhookSender,
)
from campaign_engine.delivery.notify.verdicts import Verdict, delivery_ids, metric_outcomes, verdict_of
from campaign_engine.domain.ab_variants import TestWave, served_variant
from campaign_engine.domain.dispatch import DeliveryJob
from campaign_engine.domain.frequency_cap import CapChannel, ChannelCap, cap_params, caps_channel
from campaign_engine.domain.guardian_copy import guardian_source
from campaign_engine.domain.notification import AnnouncementMetadata, AnnouncementPayload, payload_json
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.domain.variant_copy import wire_variant_copy
from campaign_engine.domain.variants import served_locale, wire_languages
from campaign_engine.domain.webhook_keys import RingUnreadable, SecretBox
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.observability import metrics
from campaign_engine.queue.port import Received, ReceivedMessage

__all__ = ["BatchResult", "NotificationWorker", "Verdict"]

log = logging.getLogger(__name__)


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
    secrets: tuple[str, ...] = ()
    variant_id: str | None = None
    learncard: bool = False


class _Recheck(NamedTuple):
    """One job's recheck: why it must not be sent (None = send), its webhook, sealed secrets and copy."""

    blocked: str | None
    webhook: str | None
    definition: str
    has_in_app: bool
    keys: str | None = None
    locale: str | None = None
    ab_test: str | None = None
    """The campaign's test wave (``abTest``): which variant this recipient is served."""
    tenant_id: str | None = None
    """The campaign's tenant, whose display name is the notification's ``sender``."""
    did: str | None = None
    """The profile's stored DID (LearnCard's format names the recipient by it)."""


class NotificationWorker:
    """Handles delivery batches; posts through the ``sender`` it is given and owns it (``close``)."""

    def __init__(
        self,
        *,
        graph: Graph,
        sender: WebhookSender,
        clock: Clock,
        sender_name: str,
        default_webhook: str | None,
        adult_age: int,
        frequency_caps: Mapping[str, Mapping[CapChannel, ChannelCap]] | None = None,
        secret_box: SecretBox | None = None,
        tenant_names: Mapping[str, str] | None = None,
        formats: Formats | None = None,
        expect_tenant: Callable[[str], object] = lambda tenant: None,
    ) -> None:
        # The ANNOUNCEMENT's ``sender`` is the campaign tenant's name (``tenant_names``, a live view of the
        # records), else ``sender_name`` (NOTIFICATIONS_SENDER); ``sender`` is the port POSTs go through.
        self._graph = graph
        self._clock = clock
        self._webhooks = sender
        self._sender_name = sender_name
        self._default_webhook = default_webhook
        self._adult_age = adult_age
        self._box = secret_box  # opens the receivers' own secrets (CAMPAIGN_SECRETS_KEY)
        # Every outcome write bumps its Dispatch node's counters, so the writes of one dispatch take
        # turns on that node's lock in Neo4j whatever we do; letting this process's threads queue here
        # instead of inside Neo4j's lock manager (which spins before it parks) saves the database that
        # CPU. (Without this lock bench.dispatch was no faster, within its noise.)
        self._write_turn = threading.Lock()
        # Tenant caps (a live view of the tenant records in production): read once per batch.
        self._caps = frequency_caps if frequency_caps is not None else {}
        self._tenant_names = tenant_names if tenant_names is not None else {}
        self._formats = formats if formats is not None else Formats()
        self._expect_tenant = expect_tenant  # TenantDirectory.expect: a tenant made a moment ago is read

    def close(self) -> None:
        """Close the sender (its connections and event loop): the worker owns the sender it was given."""
        self._webhooks.close()

    def handle_batch(self, items: Sequence[Received[DeliveryJob]]) -> BatchResult:
        """One batch of parsed deliveries (the job table parsed each body once)."""
        result = BatchResult()
        jobs: dict[str, tuple[ReceivedMessage, DeliveryJob]] = {}
        for message, job in ((item.message, item.job) for item in items):
            if job.delivery_id in jobs:  # a duplicate inside this batch: the first one stands for it
                result.done.append(message)
                result.verdicts.setdefault(job.delivery_id, "invalid")
                continue
            jobs[job.delivery_id] = (message, job)
        if not jobs:
            return result

        now = self._clock()
        caps = dict(self._caps)  # one answer per batch, so its statement and parameters agree
        capped = caps_channel(caps, "notify")
        recheck = self._graph.write if capped else self._graph.read
        rows = recheck(
            self._read_recheck, [job for _, job in jobs.values()], now=now, caps=caps if capped else None
        )
        for tenant in {row.tenant_id for row in rows.values() if row.tenant_id}:  # outside the recheck's
            self._expect_tenant(tenant)  # transaction, before names and formats are copied below
        sends: list[_Send] = []
        copies: dict[str, Any] = {}  # one parse of a campaign's definition per batch, not per recipient
        names = dict(self._tenant_names)  # the senders, read once per batch like the caps
        formats = self._formats.now()  # and the tenants' notification formats
        for delivery_id, (message, job) in jobs.items():
            try:
                send = self._prepare(message, job, rows.get(delivery_id), copies, now=now, names=names,
                                     formats=formats)  # fmt: skip
            except NoEngineDid:  # retried, dead-lettered until the worker has CAMPAIGN_DID_KEY
                log.error("notify.engine_did_missing", extra=delivery_ids(job))
                result.verdicts[delivery_id] = "uncertain"
                continue
            except RingUnreadable:
                # Never the default secret instead: that is what would let one receiver sign for others.
                log.error("notify.receiver_secret_unreadable", extra=delivery_ids(job))
                result.verdicts[delivery_id] = "uncertain"  # retried, dead-lettered if the key stays wrong
                continue
            if send is None:
                row = rows.get(delivery_id)
                blocked = None if row is None else row.blocked
                result.verdicts[delivery_id] = _HELD.get(blocked or "", "suppressed")
            else:
                sends.append(send)

        answers = self._webhooks.post_all(
            [
                Outgoing(
                    url=s.url,
                    body=s.body,
                    msg_id=s.job.delivery_id,
                    # Self-tests ignore status: only ordinary deliveries ask the pause gate.
                    campaign=None
                    if s.job.campaign_test_id is not None
                    else (s.job.campaign_id, s.job.campaign_created_at),
                    secrets=s.secrets,
                    learncard=s.learncard,
                )
                for s in sends
            ]
        )
        for send, answer in zip(sends, answers, strict=True):
            result.verdicts[send.job.delivery_id] = verdict_of(send.job, answer)

        # Only this process knows what the receivers answered: a commit cut off is re-run, not given up.
        with self._write_turn:
            acknowledged = self._graph.write_idempotent(
                write_outcomes,
                [job for _, job in jobs.values()],
                result.verdicts,
                batch=uuid.uuid4().hex,
                now=format_ts(self._clock()),
                variant_ids={s.job.delivery_id: s.variant_id for s in sends},
                graph=self._graph,
            )
        metrics.deliveries(
            "notify", metric_outcomes([j for _, j in jobs.values()], result.verdicts, acknowledged)
        )
        for delivery_id, (message, _) in jobs.items():
            (result.retry if result.verdicts[delivery_id] == "uncertain" else result.done).append(message)
        return result

    # --- steps -----------------------------------------------------------------------------------

    def _read_recheck(
        self,
        tx: Tx,
        jobs: list[DeliveryJob],
        *,
        now: Any,
        caps: Mapping[str, Mapping[CapChannel, ChannelCap]] | None,
    ) -> dict[str, _Recheck]:
        # Sorted by profileId: with a cap the statement locks the profiles in this order (§5).
        params = [
            {
                "deliveryId": j.delivery_id,
                "campaignId": j.campaign_id,
                "campaignCreatedAt": j.campaign_created_at,
                "profileId": j.profile_id,
                "testId": j.campaign_test_id,
                "dispatchId": j.dispatch_id,
                "pagedMember": bool(j.paged_member),
                "routedFrom": j.routed_from,
            }
            for j in sorted(jobs, key=lambda j: j.profile_id)
        ]
        cap = cap_params(caps, "notify", now=now) if caps is not None else {}
        record = tx.run(
            notify_recheck_query(caps is not None, any(j.routed_from for j in jobs)),
            jobs=params,
            now=format_ts(now),
            **cap,
            **policy_params(now, self._adult_age),
        ).single(strict=True)
        count_capped(tx, record["capped"])  # capped ones were marked by this statement, counted here
        copies = {row[0]: (row[1], row[2], row[3], row[4]) for row in record["campaigns"]}
        by_id = {j.delivery_id: j for j in jobs}
        rows: dict[str, _Recheck] = {}
        columns = (record["deliveryIds"], record["blocked"], record["webhooks"], record["webhookKeys"],
                   record["locales"], record["dids"])  # fmt: skip
        for delivery_id, blocked, webhook, keys, locale, did in zip(*columns, strict=True):
            campaign = copies.get(by_id[delivery_id].campaign_id, ("", False, None, None))
            definition, has_in_app, ab_test, tenant_id = campaign
            row = _Recheck(blocked or None, webhook or None, definition, has_in_app, keys or None,
                           locale or None, ab_test, tenant_id, did or None)  # fmt: skip
            rows[delivery_id] = row
        return rows

    def _prepare(
        self,
        message: ReceivedMessage,
        job: DeliveryJob,
        row: _Recheck | None,
        copies: dict[str, Any],
        *,
        now: datetime,
        names: Mapping[str, str],
        formats: Formats,
    ) -> _Send | None:
        """The POST for one job, signed for its own receiver; None if it must not be sent. Raises
        ``RingUnreadable`` (the receiver's secrets do not open) or ``NoEngineDid`` (formats.py)."""
        if row is None or row.blocked is not None:
            log.info("notify.suppressed", extra={**delivery_ids(job), "reason": row and row.blocked})
            return None
        url = row.webhook or self._default_webhook
        learncard = formats.learncard(row.tenant_id)
        secrets = () if learncard else self._receiver_secrets(row, now)
        if row.definition not in copies:
            copies[row.definition] = json.loads(row.definition)
        definition = copies[row.definition]
        # A routed guardian reads the guardian copy where it has one, in their own locale's language.
        source, own = guardian_source(definition, "notification") if job.routed_from else (definition, False)
        locale = served_locale(wire_languages(source, "notification"), row.locale)
        variants = definition.get("variants")
        wave = None if job.campaign_test_id is not None else TestWave.of(row.ab_test)  # a self-test: own arm
        variant_id = None
        if not own:
            ids = {"campaign_id": job.campaign_id, "profile_id": job.profile_id}
            variant_id = served_variant(variants, wave, **ids)
        if variants and variant_id is None and not own:
            # Outside an undecided test wave: not served yet; the rest phase's walk sends it.
            log.info("notify.suppressed", extra={**delivery_ids(job), "reason": "awaiting_test_decision"})
            return None
        copy = wire_variant_copy(source, "notification", locale, variant_id)
        if not url or not copy:
            log.info("notify.suppressed", extra={**delivery_ids(job), "reason": "no_destination_or_copy"})
            return None
        metadata = AnnouncementMetadata(
            campaign_id=job.campaign_id,
            campaign_created_at=job.campaign_created_at,
            dispatch_id=job.dispatch_id,
            delivery_id=job.delivery_id,
            campaign_has_in_app=row.has_in_app and job.campaign_test_id is None,
            campaign_test_id=job.campaign_test_id,
            locale=locale,
            variant_id=variant_id,
            audience="guardian" if job.routed_from else None,
        )
        if learncard:  # LearnCard's LCNNotification (lcn.py)
            did = row.did or learncard_did(job.profile_id, formats.domain)
            body = lcn_body(profile_id=job.profile_id, did=did, sender_did=formats.did, title=copy["title"],
                            body=copy["body"], metadata=metadata, sent=format_ts(now))  # fmt: skip
        else:
            sender = names.get(row.tenant_id or "") or self._sender_name
            payload = AnnouncementPayload(recipient=job.profile_id, sender=sender, title=copy["title"],
                                          body=copy["body"], metadata=metadata)  # fmt: skip
            body = payload_json(payload)
        return _Send(message=message, job=job, url=url, body=body, secrets=secrets, variant_id=variant_id,
                     learncard=learncard)  # fmt: skip

    def _receiver_secrets(self, row: _Recheck, now: datetime) -> tuple[str, ...]:
        """A profile's own webhook signs with its own live secrets; the default inbox (and a webhook set
        before receivers had their own secrets, until its secret is rotated) with the poster's default
        (empty)."""
        if row.webhook is None or row.keys is None:
            return ()
        if self._box is None:
            raise RingUnreadable("CAMPAIGN_SECRETS_KEY is not set")
        return self._box.open(row.keys).signing(int(now.timestamp()))


# Held back at the recheck: by the frequency cap, or acknowledged for this dispatch already (a redelivery,
# counted by its first delivery: counting it suppressed too would count it twice); else a suppression.
_HELD: dict[str, Verdict] = {"capped": "capped", "duplicate": "duplicate"}
