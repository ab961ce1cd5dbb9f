"""The email page worker: claim durably, then send once; never send twice to one recipient.

Order of a page, each step load-bearing (docs/architecture.md "Email is at most one attempt", "Back-pressure
is not failure"):

1. Guard: the Dispatch is ``sending`` at this job's cursor and the campaign is the same incarnation,
   live, in window, with the email channel. Otherwise the dispatch stops (``page_opening.py``, as
   the notify walk opens).
2. Resolve the tenant's CTA origin and branding. A misconfigured tenant fails the dispatch here,
   *before* any claim, so no claim is burnt on a message that cannot be built.
3. ONE transaction (``page_tx.py``, as step 5): the guard again, the provider's cooldown (open: defer
   the page to its end without claiming), then ``cypher/delivery/email/email_page.cypher`` reads the
   members after the cursor from the membership index, locks their profiles (ascending), rechecks every
   recipient rule, sets ``emailClaimedAt`` (and ``campaignUnsubscribeId`` for a profile that still has
   none: profiles normally get it at creation). It commits before any provider I/O, so a crash after it
   can only lose an email, never duplicate one (the sweeper counts such claims ``uncertain``).
4. Render and send the claimed messages in one provider batch, through ``send_each``: one outcome per
   message whatever the adapter does; an exception is never read as "nothing went out".
5. ONE transaction (``page_settle.py``): record each outcome against this attempt's claim
   (accepted -> ``emailedAt``; throttled -> release the claim; rejected / uncertain -> keep it, with
   the reason), then
   compare-and-set the cursor. Throttled: the cursor moves only over the contiguous prefix before the
   first throttled recipient, the provider-wide cooldown opens for the longest Retry-After (or the
   back-off), and the rest waits for it; ``CAMPAIGN_EMAIL_MAX_DEFERRALS`` deferrals in a row fail the
   Dispatch. Otherwise a full page schedules the next wave; a short page completes.

With no wave delay a job walks on for up to ``run_seconds``: page n+1 is claimed while page n is with
the provider, and page n's record + CAS runs on its own thread and connection while page n+1 is sent
and page n+2 is claimed (the two transactions touch disjoint profiles; the claim accepts page n's
cursor as this walk's own until that CAS commits). A page claimed ahead commits on a third thread
while the walk goes on, so page n+2's claim overlaps page n+1's commit; it is sent only once that
commit succeeded, and the claims of one walk commit in order: a claim after one that failed to commit
is rolled back, and the walk ends at the page that failed (a successor claims it again). Page n+1 is
sent only once page n's answer showed no back-pressure; if page n was throttled, its outcome is
recorded inline and page n+1's claims are released (the cursor stays before them) without a send.

Over 350 lines on purpose: that overlap is one protocol across three threads (send, settle, commit),
and its ordering rules only read as a whole; the transactions (``page_tx.py``, ``page_settle.py``) and
the opening (``page_opening.py``) are already apart.
"""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from campaign_engine.delivery.approval_reach import OverReach, pause_over_reach
from campaign_engine.delivery.dispatch_cursor import stop
from campaign_engine.delivery.email.compose import EmailVariants, compose_email, email_variants_for
from campaign_engine.delivery.email.page_settle import PageSettler
from campaign_engine.delivery.email.page_tx import Claimed, ClaimedPage, PageTransactions
from campaign_engine.delivery.email.provider import EmailProvider, SendResult, send_each
from campaign_engine.delivery.email.render import EmailConfigError
from campaign_engine.delivery.email.walk_outcome import EmailPageOutcome, Outcome, WalkTotals
from campaign_engine.delivery.health_guard import HealthGuard, pause, paused, system_audit
from campaign_engine.delivery.page_opening import ClosedPage, PageWatch, open_page
from campaign_engine.delivery.readiness import page_delay
from campaign_engine.domain.campaign import campaign_from_node
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.frequency_cap import CapChannel, ChannelCap
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.graph.graph import Graph, PendingWrite
from campaign_engine.observability import metrics
from campaign_engine.queue.lanes import send_pages
from campaign_engine.queue.port import Queue
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = ["EmailPageOutcome", "EmailWorker"]

log = logging.getLogger(__name__)


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
        max_deferrals: int = 30,
        run_seconds: float = 0.0,
        frequency_caps: Mapping[str, Mapping[CapChannel, ChannelCap]] | None = None,
        guard: HealthGuard | None = None,
        watch: PageWatch | None = None,
    ) -> None:
        self._watch = watch  # told each Dispatch a page opens on (page_opening.py)
        self._graph = graph
        self._provider = provider
        self._tokens = tokens
        self._pages = dispatch_queue
        self._clock = clock
        self._page_size = page_size
        self._delay = delay_seconds
        self._adult_age = adult_age
        self._domain = domain_name
        # Kept as given, never copied: the tenant directory's live views (graph/tenant_directory.py),
        # so a tenants.update reaches the next page without a worker restart.
        self._origins = app_origins
        self._tenants = tenants
        self._default_tenant = default_tenant
        self._run_seconds = run_seconds if delay_seconds == 0 else 0.0
        self._tx = PageTransactions(
            provider=provider.name,
            page_size=page_size,
            adult_age=adult_age,
            max_deferrals=max_deferrals,
            frequency_caps=frequency_caps or {},
            graph=graph,
            guard=guard,
        )
        self._settler = PageSettler(
            graph=graph,
            tx=self._tx,
            dispatch_queue=dispatch_queue,
            clock=clock,
            page_size=page_size,
            delay_seconds=delay_seconds,
            throttle_backoff_seconds=throttle_backoff_seconds,
            max_deferrals=max_deferrals,
        )
        # Provider calls run here so the graph work of the next page overlaps them.
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="email-send")
        # A page's record + CAS runs here while the walk claims the page after next (the second core).
        self._settle_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="email-settle")
        # A claim claimed ahead commits here, in claim order, while the walk claims the page after it.
        self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="email-commit")

    def close(self) -> None:
        self._sender.shutdown(wait=True)
        self._settle_pool.shutdown(wait=True)
        self._committer.shutdown(wait=True)
        self._provider.close()

    def handle_page(self, job: PageJob) -> EmailPageOutcome:
        """Process one email page job (and, with no wave delay, the pages after it for a while).

        Raises (message redelivered) only before anything is claimed; once a claim committed, every
        message of it gets an outcome recorded, whatever the provider does."""
        opened = open_page(self._graph, job, clock=self._clock, dispatch_queue=self._pages,
                           wave_delay=self._delay, watch=self._watch)  # fmt: skip
        if isinstance(opened, ClosedPage):
            if opened.outcome == "stopped":
                reason = opened.reason.split(":")[0]
                log.info("email.dispatch_stopped dispatch_id=%s reason=%s", job.dispatch_id, reason)
            return EmailPageOutcome(opened.outcome, reason=opened.reason)
        campaign_node, stamp = opened.campaign, opened.stamp
        try:
            content = email_variants_for(
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
        return self._walk(job, content)

    # --- the pipeline ------------------------------------------------------------------------------

    def _walk(self, job: PageJob, content: EmailVariants) -> EmailPageOutcome:
        deadline = time.monotonic() + self._run_seconds
        totals = WalkTotals()
        started = time.perf_counter()
        try:
            page = content.assigned(self._claim_page(job, after=job.cursor))
        except OverReach as over:  # an approval covers the reach it showed: pause, nothing claimed
            return self._pause_over_reach(job, over)
        totals.claim_s += time.perf_counter() - started
        if page.skip is not None:
            return EmailPageOutcome("waiting" if page.skip == "wave_not_due" else "stale", reason=page.skip)
        if page.stop is not None:
            return self._stop(job, "stopped", page.stop, format_ts(self._clock()))
        if page.pause is not None:
            return self._pause(page)
        if page.cooldown_until is not None:
            return self._settler.wait_for_cooldown(job, page.cooldown_until)
        sending = self._submit(page, content)
        walk_on = self._run_seconds > 0
        # The record + CAS of the page before ``page``, running on its own connection while this
        # thread claims the next page: the two transactions touch disjoint profiles.
        settling: Future[Outcome] | None = None
        settling_from: str | None = None
        committed: Future[None] | None = None  # the commit of the last page claimed ahead
        settling_claims = 0  # the claims of the page whose record + CAS is ``settling``
        before: Outcome | None = None  # the verdict of the record + CAS of the page before ``page``
        while True:
            ahead: ClaimedPage | None = None
            if walk_on and page.read >= self._page_size and time.monotonic() < deadline:
                started = time.perf_counter()
                in_flight = len(page.claimed) + (settling_claims if settling is not None else 0)
                try:  # overlaps this page's send, the previous page's record and this page's commit
                    ahead, committed = self._claim_ahead(
                        page.job, after=page.last, settling_from=settling_from, after_commit=committed,
                        in_flight=in_flight,
                    )  # fmt: skip
                    ahead = content.assigned(ahead)
                except OverReach:  # rolled back: the successor job asks again, with nothing in flight
                    pass
                except Exception:  # rolled back, nothing claimed: record this page, the successor retries
                    log.warning("email.claim_ahead_failed dispatch_id=%s", job.dispatch_id, exc_info=True)
                totals.claim_s += time.perf_counter() - started
            started = time.perf_counter()
            sent = sending.result()
            totals.wait_s += time.perf_counter() - started
            if settling is not None:
                started = time.perf_counter()
                before, settling, settling_from = settling.result(), None, None
                totals.settle_s += time.perf_counter() - started
                if before != "next":
                    walk_on = False  # lost the cursor: finish the pages in hand, leave the walk to its holder
            if sent is None:  # this page's claim did not commit: nothing of it was sent
                return self._uncommitted(page, before, committed, totals)
            results = sent
            throttled = any(r.outcome == "throttled" for r in results)
            next_job = page.job.model_copy(update={"cursor": page.last})
            if ahead is not None and (ahead.skip or ahead.stop or ahead.cooldown_until or ahead.pause):
                ahead = None  # the successor job meets the same condition and acts on it
            if ahead is not None:
                ahead = replace(ahead, job=next_job)  # its CAS expects this page's end
                if not throttled:
                    sending = self._submit(ahead, content, committed)  # overlaps this page's record and CAS
            totals.add(results)
            if ahead is not None and not throttled:
                settling_from, settling_claims = page.job.cursor or "", len(page.claimed)
                settling = self._settle_pool.submit(
                    contextvars.copy_context().run, self._settler.settle, page, results
                )
                page = ahead
                continue
            started = time.perf_counter()
            verdict = self._settler.settle(page, results)
            totals.settle_s += time.perf_counter() - started
            if ahead is None:
                if committed is not None:
                    wait((committed,))  # a claim ahead that found nothing to do: its commit ends it
                if verdict == "next":  # if this send fails the job's retry sends it again (see notify)
                    delay = page_delay(self._delay, sent=len(page.claimed), paced=page.wave_delay)
                    send_pages(self._pages, [next_job], delay_seconds=delay)
                return totals.outcome(verdict, retry_in_seconds=self._settler.retry_in(results))
            if verdict in ("throttled", "failed"):
                # Claimed but never sent into back-pressure; the cursor stays before these claims.
                self._settler.release(ahead, committed)
                return totals.outcome(verdict, retry_in_seconds=self._settler.retry_in(results))
            # Throttled, yet another chain took the cursor and may walk past these claims: they are
            # ours alone, so they are sent rather than released, and nobody is skipped.
            sending = self._submit(ahead, content, committed)
            walk_on = False  # finish the page in hand, then leave the walk to its holder
            page, before = ahead, verdict

    def _uncommitted(
        self, page: ClaimedPage, before: Outcome | None, committed: Future[None] | None, totals: WalkTotals
    ) -> EmailPageOutcome:
        """``page``'s claim did not commit (or is not known to have), so nothing of it was sent, and the
        page claimed after it was rolled back (``_commit_after``). The record + CAS of the page before
        it moved the cursor to its start (``before``: "next"): a successor claims it again."""
        if committed is not None:
            wait((committed,))  # the rollback of the page claimed after it
        if before == "next":  # if this send fails the job's retry sends it again (resend_lost_successor)
            send_pages(self._pages, [page.job], delay_seconds=0)
        return totals.outcome(before or "lost_race")

    def _submit(
        self, page: ClaimedPage, content: EmailVariants, committed: Future[None] | None = None
    ) -> Future[list[SendResult] | None]:
        """Compose and send ``page`` on the sender thread, once its claim ``committed`` (None: it has);
        the future's None means that commit failed and nothing was sent."""
        job = page.job
        # In this page's log context: the provider's lines name the campaign and dispatch too.
        run = contextvars.copy_context().run
        return self._sender.submit(run, self._send_once_claimed, page.claimed, content, job, committed)

    def _send_once_claimed(
        self, claimed: Sequence[Claimed], content: EmailVariants, job: PageJob, committed: Future[None] | None
    ) -> list[SendResult] | None:
        failure = None if committed is None else committed.exception()
        if failure is not None:
            log.warning("email.claim_commit_failed dispatch_id=%s", job.dispatch_id, exc_info=failure)
            return None  # not claimed (or not known to be): never sent
        return self._compose_and_send(claimed, content, job)

    def _compose_and_send(
        self, claimed: Sequence[Claimed], content: EmailVariants, job: PageJob
    ) -> list[SendResult]:
        metadata = {"campaignId": job.campaign_id, "dispatchId": job.dispatch_id}
        routed = {**metadata, "audience": "guardian"}  # A guardian's email says so
        messages = [
            compose_email(
                content.for_reader(c.locale, c.variant_id, guardian=c.routed_from is not None),
                key=c.profile_id,
                to=c.address,
                unsubscribe_id=c.unsubscribe_id,
                tokens=self._tokens,
                domain_name=self._domain,
                metadata=metadata if c.routed_from is None else routed,
            )
            for c in claimed
        ]
        started = time.perf_counter()
        results = send_each(self._provider, messages)
        seconds = time.perf_counter() - started
        metrics.email_provider_call(self._provider.name, (r.outcome for r in results), seconds)
        return results

    def _stop(self, job: PageJob, status: str, reason: str, stamp: str) -> EmailPageOutcome:
        self._graph.write(stop, job, status=status, reason=reason, now=stamp, graph=self._graph)
        log.info("email.dispatch_%s dispatch_id=%s reason=%s", status, job.dispatch_id, reason.split(":")[0])
        return EmailPageOutcome("failed" if status == "failed" else "stopped", reason=reason)

    def _pause(self, page: ClaimedPage) -> EmailPageOutcome:
        """The health guard found a rate over its limit before this page: pause, nothing claimed."""
        assert page.pause is not None
        assert page.campaign is not None
        stamp = format_ts(self._clock())
        audit = system_audit(page.job, page.campaign, at=stamp)  # drawn outside: a re-run writes the same
        done = self._graph.write(
            pause, page.job, page.pause, audit=audit, campaign=page.campaign, now=stamp, graph=self._graph
        )
        if done:
            paused(page.job, page.pause)
        return EmailPageOutcome("paused" if done else "lost_race", reason=page.pause.message)

    def _pause_over_reach(self, job: PageJob, over: OverReach) -> EmailPageOutcome:
        stamp = format_ts(self._clock())
        done = pause_over_reach(
            self._graph, job, dispatch=over.dispatch, campaign=over.campaign, reach=over.reach, now=stamp
        )
        return EmailPageOutcome("paused" if done else "lost_race", reason="approval_exceeded")

    def _claim_page(
        self, job: PageJob, *, after: str | None, settling_from: str | None = None
    ) -> ClaimedPage:
        claim_id = uuid.uuid4().hex  # drawn outside the transaction function: a re-run keeps it
        now = self._clock()
        return self._graph.write(
            self._tx.claim, job, after=after, claim_id=claim_id, now=now, settling_from=settling_from
        )

    def _claim_ahead(
        self,
        job: PageJob,
        *,
        after: str | None,
        settling_from: str | None,
        after_commit: Future[None] | None,
        in_flight: int,
    ) -> tuple[ClaimedPage, Future[None]]:
        """Claim the page after ``after`` up to its commit, and commit it on the committer thread: the
        commit (~40% of a claim) overlaps the walk's next steps, the claim of the page after included.
        The claims of one walk are disjoint and commit in order; ``after_commit`` is the previous
        claim's commit, and if it failed this one is rolled back, so a walk never holds claims past
        recipients it did not claim."""
        claim_id = uuid.uuid4().hex  # drawn outside the transaction function: a re-run keeps it
        now = self._clock()
        pending = self._graph.write_pending(
            self._tx.claim, job, after=after, claim_id=claim_id, now=now, settling_from=settling_from,
            in_flight=in_flight,
        )  # fmt: skip
        return pending.result, self._committer.submit(_commit_after, after_commit, pending)


def _commit_after(previous: Future[None] | None, pending: PendingWrite[ClaimedPage]) -> None:
    """Commit ``pending`` if the claim before it committed (its future ran on this same thread, so it
    is done); else roll it back and raise."""
    if previous is not None and previous.exception() is not None:
        pending.rollback()
        raise ClaimNotCommitted("the page claimed before this one did not commit")
    pending.commit()


class ClaimNotCommitted(Exception):
    """A claim rolled back because the claim before it in the walk did not commit."""
