"""The email page worker: claim durably, then send once; never send twice to one recipient.

Order of a page, each step load-bearing (docs/architecture.md "Email is at most one attempt", "Back-pressure
is not failure"):

1. Guard: the Dispatch is ``sending`` at this job's cursor and the campaign is the same incarnation,
   live, in window, with the email channel. Otherwise the dispatch stops.
2. Resolve the tenant's CTA origin and branding. A misconfigured tenant fails the dispatch here,
   *before* any claim, so no claim is burnt on a message that cannot be built.
3. Read the page: members after the cursor that pass opt-out, age and contact (filtered before the
   LIMIT).
4. ONE transaction: lock the page's profiles (ascending), recheck the guard and every recipient rule,
   set ``emailClaimedAt`` and allocate ``campaignUnsubscribeId``. It commits before any provider I/O,
   so a crash after it can only lose an email, never duplicate one.
5. Render and send the claimed messages in one provider batch.
6. Record each outcome against this attempt's claim: accepted -> ``emailedAt``; throttled -> release
   the claim; rejected / uncertain -> keep it, with the reason (uncertain is counted for an operator).
7. Compare-and-set the cursor. Throttled: the cursor moves only over the contiguous prefix before the
   first throttled recipient and the rest is rescheduled after Retry-After (or a back-off), not
   counted as an error. Otherwise a full page schedules the next wave; a short page completes.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from campaign_engine.delivery.dispatch_cursor import advance, gate, guard_reason, read_guard, stop
from campaign_engine.delivery.email.compose import compose_email, email_content_for
from campaign_engine.delivery.email.provider import EmailProvider, OutgoingEmail, SendResult
from campaign_engine.delivery.email.render import EmailConfigError
from campaign_engine.delivery.queue.port import MAX_DELAY_SECONDS, Queue, QueueError
from campaign_engine.domain.campaign import campaign_from_node
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles
from campaign_engine.graph.policy import policy_params, policy_query
from campaign_engine.unsubscribe.optout import ensure_unsubscribe_ids
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = ["EmailPageOutcome", "EmailWorker"]

log = logging.getLogger(__name__)

Outcome = Literal["next", "completed", "stopped", "failed", "stale", "lost_race", "waiting", "throttled"]


@dataclass(frozen=True)
class EmailPageOutcome:
    outcome: Outcome
    claimed: int = 0
    emailed: int = 0
    throttled: int = 0
    rejected: int = 0
    uncertain: int = 0
    retry_in_seconds: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class _Claimed:
    profile_id: str
    address: str
    unsubscribe_id: str


class EmailWorker:
    def __init__(
        self,
        *,
        graph: Graph,
        provider: EmailProvider,
        tokens: UnsubscribeTokens,
        dispatch_queue: Queue,
        clock: Clock,
        page_size: int,
        delay_seconds: int,
        adult_age: int,
        domain_name: str,
        app_origins: Mapping[str, Any],
        tenants: Mapping[str, Any],
        default_tenant: str,
        throttle_backoff_seconds: int = 30,
    ) -> None:
        self._graph = graph
        self._provider = provider
        self._tokens = tokens
        self._pages = dispatch_queue
        self._clock = clock
        self._page_size = page_size
        self._delay = delay_seconds
        self._adult_age = adult_age
        self._domain = domain_name
        self._origins = dict(app_origins)
        self._tenants = dict(tenants)
        self._default_tenant = default_tenant
        self._backoff = throttle_backoff_seconds
        self._page_query = policy_query("email_page")
        self._claim_query = policy_query("email_claim")
        self._record_query = policy_query("email_record")

    def close(self) -> None:
        self._provider.close()

    def handle_page(self, job: PageJob) -> EmailPageOutcome:
        """Process one email page job. Raises (message redelivered) only when nothing was claimed."""
        now = self._clock()
        stamp = format_ts(now)
        dispatch, campaign_node = self._graph.read(read_guard, job)
        skip = gate(dispatch, job, now=stamp)
        if skip is not None:
            return EmailPageOutcome("waiting" if skip == "wave_not_due" else "stale", reason=skip)
        assert dispatch is not None
        reason = guard_reason(dispatch, campaign_node, job, now=stamp)
        if reason is not None:
            return self._stop(job, "stopped", reason, stamp)
        assert campaign_node is not None
        try:
            content = email_content_for(
                campaign_from_node(campaign_node),
                origins=self._origins,
                tenants=self._tenants,
                default_tenant=self._default_tenant,
            )
        except EmailConfigError as exc:
            log.error("email.config_invalid dispatch_id=%s error=%s", job.dispatch_id, exc)
            return self._stop(job, "failed", f"email_config: {exc}", stamp)
        # Checked before the claim too: a provider that must not be used (transactional stream, bad
        # token) or cannot be reached makes this raise with nothing claimed; the job is redelivered.
        self._provider.verify()

        page_ids = self._graph.read(self._read_page, job, now=now)
        claim_id = uuid.uuid4().hex
        claimed, guard = self._graph.write(self._claim, job, page_ids, claim_id=claim_id, now=now)
        if guard is not None:
            return self._stop(job, "stopped", guard, stamp)

        messages = [
            compose_email(
                content,
                key=c.profile_id,
                to=c.address,
                unsubscribe_id=c.unsubscribe_id,
                tokens=self._tokens,
                domain_name=self._domain,
                metadata={"campaignId": job.campaign_id, "dispatchId": job.dispatch_id},
            )
            for c in claimed
        ]
        results = self._send(messages)
        return self._settle(job, page_ids, results, claim_id=claim_id, now=now)

    # --- steps -------------------------------------------------------------------------------------

    def _send(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        if not messages:
            return []
        try:
            return self._provider.send_batch(messages)
        except Exception as exc:  # the port raises only when it sent nothing: safe to release
            log.warning("email.provider_refused_batch error=%s count=%d", type(exc).__name__, len(messages))
            return [SendResult(m.key, "throttled", reason=f"provider:{type(exc).__name__}") for m in messages]

    def _settle(
        self,
        job: PageJob,
        page_ids: list[str],
        results: list[SendResult],
        *,
        claim_id: str,
        now: datetime,
    ) -> EmailPageOutcome:
        stamp = format_ts(now)
        counts = {
            o: sum(1 for r in results if r.outcome == o)
            for o in ("accepted", "throttled", "rejected", "uncertain")
        }
        throttled = [r for r in results if r.outcome == "throttled"]
        if results:
            self._graph.write(self._record, job, results, claim_id=claim_id, now=stamp)
        problems = [r for r in results if r.outcome in ("uncertain", "rejected")]
        last_error = f"{problems[-1].outcome}: {problems[-1].reason}" if problems else None

        full = len(page_ids) >= self._page_size
        retry_in: int | None = None
        if throttled:
            first = min(r.key for r in throttled)
            before = [pid for pid in page_ids if pid < first]
            cursor = before[-1] if before else job.cursor
            hint = next((r.retry_after_seconds for r in throttled if r.retry_after_seconds is not None), None)
            retry_in = math.ceil(hint) if hint is not None else self._backoff
            delay, done = retry_in, False
        else:
            cursor = page_ids[-1] if page_ids else job.cursor
            delay, done = self._delay, not full
        long_gap = not done and delay > MAX_DELAY_SECONDS
        next_at = format_ts(now + timedelta(seconds=delay)) if long_gap else None
        won = self._graph.write(
            advance,
            job,
            cursor=cursor,
            enqueued=len(results),
            counters={
                "emailed": counts["accepted"],
                "rejected": counts["rejected"],
                "uncertain": counts["uncertain"],
                "throttled": counts["throttled"],
            },
            last_error=last_error,
            done=done,
            now=stamp,
            next_page_at=next_at,
        )
        base = EmailPageOutcome(
            "next",
            claimed=len(results),
            emailed=counts["accepted"],
            throttled=counts["throttled"],
            rejected=counts["rejected"],
            uncertain=counts["uncertain"],
            retry_in_seconds=retry_in,
        )
        log.info(
            "email.page dispatch_id=%s claimed=%d emailed=%d throttled=%d rejected=%d uncertain=%d",
            job.dispatch_id,
            base.claimed,
            base.emailed,
            base.throttled,
            base.rejected,
            base.uncertain,
        )
        if not won:
            return replace(base, outcome="lost_race")
        if done:
            return replace(base, outcome="completed")
        if not long_gap:
            successor = job.model_copy(update={"cursor": cursor})
            try:  # the cursor is committed: if this fails the sweeper re-arms the dispatch
                self._pages.send_batch([job_json(successor)], delay_seconds=delay)
            except QueueError:
                log.warning("email.successor_enqueue_failed dispatch_id=%s", job.dispatch_id)
        return replace(base, outcome="throttled" if throttled else "next")

    def _stop(self, job: PageJob, status: str, reason: str, stamp: str) -> EmailPageOutcome:
        self._graph.write(stop, job, status=status, reason=reason, now=stamp)
        log.info("email.dispatch_%s dispatch_id=%s reason=%s", status, job.dispatch_id, reason.split(":")[0])
        return EmailPageOutcome("failed" if status == "failed" else "stopped", reason=reason)

    # --- transactions --------------------------------------------------------------------------------

    def _read_page(self, tx: Tx, job: PageJob, *, now: datetime) -> list[str]:
        result = tx.run(
            self._page_query,
            campaignId=job.campaign_id,
            cursor=job.cursor or "",
            limit=self._page_size,
            **policy_params(now, self._adult_age),
        )
        return [record["profileId"] for record in result]

    def _claim(
        self, tx: Tx, job: PageJob, page_ids: list[str], *, claim_id: str, now: datetime
    ) -> tuple[list[_Claimed], str | None]:
        """Lock, recheck, claim, allocate unsubscribe ids: all or nothing, before any provider I/O."""
        if not page_ids:
            return [], None
        lock_profiles(tx, page_ids)
        stamp = format_ts(now)
        # The campaign guard again, inside the claim: a pause, archive or delete committed since the
        # page guard stops this page here.
        dispatch, campaign = read_guard(tx, job)
        if dispatch is None or dispatch.get("status") != "sending":
            return [], "not_sending"
        reason = guard_reason(dispatch, campaign, job, now=stamp)
        if reason is not None:
            return [], reason
        rows = tx.run(
            self._claim_query,
            profileIds=sorted(page_ids),
            campaignId=job.campaign_id,
            campaignCreatedAt=job.campaign_created_at,
            claimId=claim_id,
            dispatchId=job.dispatch_id,
            now=stamp,
            **policy_params(now, self._adult_age),
        ).data()
        eligible = [(row["profileId"], row["address"]) for row in rows if row["blocked"] is None]
        ids = ensure_unsubscribe_ids(tx, [pid for pid, _ in eligible])
        return [_Claimed(pid, address, ids[pid]) for pid, address in eligible], None

    def _record(self, tx: Tx, job: PageJob, results: list[SendResult], *, claim_id: str, now: str) -> None:
        lock_profiles(tx, [r.key for r in results])
        rows = [
            {"profileId": r.key, "outcome": r.outcome, "reason": r.reason, "messageId": r.provider_message_id}
            for r in results
        ]
        tx.run(
            self._record_query,
            rows=rows,
            campaignId=job.campaign_id,
            campaignCreatedAt=job.campaign_created_at,
            claimId=claim_id,
            now=now,
        ).consume()
