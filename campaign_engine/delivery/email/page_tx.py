"""The email walk's two transactions: claim a page before any provider I/O, then record its outcomes
with the cursor step. ``EmailWorker`` (``page_walk.py``) runs them through ``Graph.write``, so each
is a transaction function: it touches only the graph and is safe to re-run.

docs/architecture.md "Email is at most one attempt": the claim commits before the send, so a crash
after it can only lose an email, never duplicate one; the record matches this attempt's claim id, never
someone else's. One module past 350 lines on purpose: the claim and the record read and write the
same claim fields under the same lock order, and they are reviewed as one protocol.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from typing import Any

from campaign_engine.delivery.approval_reach import OverReach, over_reach
from campaign_engine.delivery.dispatch_cursor import defer, gate, guard_reason
from campaign_engine.delivery.email.provider import SendResult
from campaign_engine.delivery.frequency_cap import count_capped, email_cap_slot, email_page_query
from campaign_engine.delivery.health_guard import HealthGuard
from campaign_engine.delivery.readiness import PageTally, PassStep, advance_pass, readiness_params, tally_page
from campaign_engine.delivery.test_wave_page import WaveFilter, chosen_claim_query, page_ids_query
from campaign_engine.domain.dispatch import PageJob
from campaign_engine.domain.dispatch_health import Breach
from campaign_engine.domain.frequency_cap import CapChannel, ChannelCap, cap_params, caps_channel
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_events import Event, EventType
from campaign_engine.graph.cypher import fragment, statement
from campaign_engine.graph.feedback_marks import link_pending
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.routing import routed_query
from campaign_engine.graph.rules.segment import CompiledSegment, SegmentCache
from campaign_engine.graph.webhook_outbox import record_events, subscribers_for

__all__ = ["Claimed", "ClaimedPage", "PageTransactions", "counters"]

# replan=skip: three unique-key seeks, run by every claim (as dispatch_cursor's per-page statements).
_GUARD = "email_page_guard"  # cypher/delivery/email/email_page_guard.cypher

# The final outcomes an event webhook hears of (throttled ones are given back, uncertain ones unknown).
_EVENT_OF: dict[str, EventType] = {"accepted": "recipient.emailed", "rejected": "recipient.email_rejected"}

# The longest wait wins: a shorter Retry-After heard later never shortens the provider's cooldown.
_COOLDOWN = "email_cooldown"  # cypher/delivery/email/email_cooldown.cypher


@dataclass(frozen=True)
class Claimed:
    profile_id: str
    address: str
    unsubscribe_id: str
    state_id: str
    """The elementId of the CAMPAIGN_STATE this claim wrote: where the outcome record finds it again."""
    locale: str | None = None
    """The profile's locale: which language variant of the email this recipient gets."""
    variant_id: str | None = None
    """The A/B content variant this recipient gets, set by the walk after the claim
    (``EmailVariants.assigned``); recorded on the CAMPAIGN_STATE with the outcome."""
    routed_from: tuple[str, ...] | None = None
    """A guardian claimed for these members of the page (the age policy excludes them),
    who reads the guardian copy; None for a member."""


@dataclass(frozen=True)
class ClaimedPage:
    """What one claim transaction did: nothing (``skip`` / ``stop`` / ``cooldown``) or a claimed page."""

    job: PageJob
    """The job holding the cursor this page starts from (its ``cursor`` is the CAS's expected value)."""
    claim_id: str
    read: int = 0
    last: str | None = None
    claimed: list[Claimed] = field(default_factory=list)
    skip: str | None = None
    stop: str | None = None
    cooldown_until: str | None = None
    tally: PageTally = field(default_factory=PageTally)
    """Members read but not yet ready: neither claimed nor sent; a later pass takes them."""
    tenant_id: str | None = None
    campaign_ref: str | None = None
    """The campaign's tenant and the id it knows it by: what the page's event-webhook events name."""
    pause: Breach | None = None
    """The health guard's verdict before this page: nothing claimed, the walk pauses."""
    campaign: Mapping[str, Any] | None = None
    """The campaign node, with ``pause`` only: the pause's audit entry names it."""
    ab_test: str | None = None
    """The campaign's test wave as this claim read it: which variant each claim is served."""
    hold_until: str | None = None
    """An undecided test wave's decision time: the end of this pass waits for it (``test_wave_page``)."""
    wave_delay: int | None = None
    """The Dispatch's pause between waves paced to its deadline (``readiness.page_delay``)."""


class PageTransactions:
    """The claim and record transactions of one provider's email walk, with the settings they read."""

    def __init__(
        self,
        *,
        provider: str,
        page_size: int,
        adult_age: int,
        max_deferrals: int,
        frequency_caps: Mapping[str, Mapping[CapChannel, ChannelCap]],
        graph: Graph | None = None,
        guard: HealthGuard | None = None,
    ) -> None:
        self._graph = graph  # whose event-webhook endpoints hear of each outcome (None: nobody's)
        self._guard = guard  # the health guard, asked before every page claimed (None: no guard)
        self._provider = provider  # the provider's name: its cooldown node
        self._page_size = page_size
        self._adult_age = adult_age
        self._max_deferrals = max_deferrals
        # The tenants' caps (a live view of the tenant records in production), applied inside the claim.
        self._caps = frequency_caps
        self._record_query = statement("email_record")
        self._segments = SegmentCache()  # a live segment compiles once per walk

    def claim(
        self,
        tx: Tx,
        job: PageJob,
        *,
        after: str | None,
        claim_id: str,
        now: datetime,
        settling_from: str | None = None,
        in_flight: int = 0,
    ) -> ClaimedPage:
        """Guard, cooldown, then read-lock-recheck-claim the page: all or nothing, before any provider I/O.

        ``job`` holds the cursor (its ``cursor`` must still be the Dispatch's); the page starts after
        ``after`` (the same, or the end of the page this job is still sending). ``settling_from``: the
        cursor of this walk's page whose record + CAS runs alongside this claim; until it commits the
        Dispatch still shows that cursor, which is then this walk's too. ``in_flight``: the claims of
        this walk not yet recorded, for the reach cap (raises ``OverReach``: the claim rolls back)."""
        stamp = format_ts(now)
        record = tx.run(
            statement(_GUARD), dispatchId=job.dispatch_id, campaignId=job.campaign_id, provider=self._provider
        ).single()
        assert record is not None
        dispatch = None if record["dispatch"] is None else dict(record["dispatch"])
        campaign = None if record["campaign"] is None else dict(record["campaign"])
        held = job
        if settling_from is not None and ((dispatch or {}).get("cursor") or "") == settling_from:
            held = job.model_copy(update={"cursor": settling_from})
        skip = gate(dispatch, held, now=stamp)
        if skip is not None:
            return ClaimedPage(job, claim_id, skip=skip)
        assert dispatch is not None
        # The campaign guard again, inside the claim: a pause, archive or delete committed since the
        # page guard stops this page here.
        reason = guard_reason(dispatch, campaign, job, now=stamp)
        if reason is not None:
            return ClaimedPage(job, claim_id, stop=reason)
        # The health guard, before every page (claimed ahead too): the counters are on the node read.
        breach = None if self._guard is None else self._guard.breach(dispatch, campaign)
        if breach is not None:
            return ClaimedPage(job, claim_id, pause=breach, campaign=campaign)
        until = record["cooldownUntil"]
        if until is not None and until > stamp:
            return ClaimedPage(job, claim_id, cooldown_until=str(until))
        assert campaign is not None
        readiness = readiness_params(dispatch, campaign, now=now)
        caps = dict(self._caps)  # one answer per claim, so its statement and parameters agree
        segment = self._segments.get(tx, dispatch_id=job.dispatch_id, campaign=campaign)
        params: dict[str, Any] = {
            "campaignId": job.campaign_id, "campaignCreatedAt": job.campaign_created_at,
            "cursor": after or "", "limit": self._page_size, "claimId": claim_id,
            "dispatchId": job.dispatch_id, "now": stamp,
            **readiness, **cap_params(caps, "email", now=now), **policy_params(now, self._adult_age),
            **(segment.params(now) if segment else {}),
        }  # fmt: skip
        wave = WaveFilter.of(campaign)
        # A campaign routing minors to guardians first reads the page's guardians and
        # locks members and guardians together in profileId order; any other claims as it always did.
        # (An experiment is refused on such a campaign: campaigns/sending/test_wave.py.)
        routed = _route(tx, segment, params) if campaign.get("minors") == "guardians" and wave is None else {}
        if wave is None:
            row = tx.run(email_page_query(caps_channel(caps, "email"), segment), **params).single(strict=True)
        else:  # an undecided test wave: the page's ids, then the claim of its test members only
            ids = sorted(tx.run(page_ids_query(segment), **params).single(strict=True)["ids"])
            chosen, waiting = wave.split(ids)
            row = tx.run(chosen_claim_query(caps_channel(caps, "email")), chosen=chosen, **params).single(
                strict=True
            )
        capped = int(row["capped"])
        claimed = _with_unsubscribe_ids(tx, row["claimed"])
        tally = PageTally(deferred=int(row["deferred"]), missed=int(row["missed"]), ready_at=row["readyAt"])
        if routed:
            extra = tx.run(
                _guardian_claim_query(caps_channel(caps, "email")),
                **params,
                routed=[[pid, list(via)] for pid, via in sorted(routed.items())],
            ).single(strict=True)
            capped += int(extra["capped"])
            guardians = [replace(c, routed_from=routed[c.profile_id])
                         for c in _with_unsubscribe_ids(tx, extra["claimed"])]  # fmt: skip
            if guardians:
                marks = [{"profileId": c.profile_id, "campaignId": job.campaign_id} for c in guardians]
                tx.run(statement("guardian_mark"), marks=marks, channel="email").consume()
            claimed = sorted(claimed + guardians, key=lambda c: c.profile_id)
            tally = tally.plus(deferred=int(extra["deferred"]), missed=int(extra["missed"]),
                               ready_at=extra["readyAt"])  # fmt: skip
        reach = over_reach(dispatch, len(claimed), in_flight=in_flight)  # the reach the approval showed
        if reach is not None:
            raise OverReach(reach, dispatch, campaign)
        count_capped(tx, [job.dispatch_id] * capped)  # marked by the claims, counted with them
        read, last = int(row["read"]), row["last"]
        if wave is not None:
            read, last, tally = len(ids), (ids[-1] if ids else None), wave.tally(tally, waiting)
        return ClaimedPage(
            job, claim_id, read=read, last=last, claimed=claimed, tally=tally,
            tenant_id=campaign.get("tenantId"), campaign_ref=campaign.get("ref") or campaign.get("id"),
            ab_test=campaign.get("abTest"), hold_until=None if wave is None else wave.decide_at,
            wave_delay=dispatch.get("waveDelaySeconds"),
        )  # fmt: skip

    def record(self, tx: Tx, page: ClaimedPage, results: Sequence[SendResult], *, now: str) -> int:
        """Outcomes against this attempt's claim; how many of them the sweeper had counted uncertain."""
        # Sorted by profileId: the statement takes each row's profile lock in this order, as the claim did.
        # Every result is of a claimed message (send_each), so each has the state its claim wrote.
        states = {c.profile_id: c.state_id for c in page.claimed}
        variants = {c.profile_id: c.variant_id for c in page.claimed}
        rows = [
            {
                "stateId": states[r.key],
                "outcome": r.outcome,
                "reason": r.reason,
                "messageId": r.provider_message_id,
                "variantId": variants[r.key],
            }
            for r in sorted(results, key=lambda r: r.key)
        ]
        record = tx.run(
            self._record_query,
            rows=rows,
            campaignId=page.job.campaign_id,
            campaignCreatedAt=page.job.campaign_created_at,
            claimId=page.claim_id,
            now=now,
        ).single()
        self._record_events(tx, page, results, now=now)
        sent = [r.provider_message_id for r in results if r.outcome == "accepted" and r.provider_message_id]
        link_pending(tx, self._graph, sent, now=now)  # feedback that outran this record counts now
        return 0 if record is None else int(record["late"])

    def _record_events(self, tx: Tx, page: ClaimedPage, results: Sequence[SendResult], *, now: str) -> None:
        """``recipient.emailed`` / ``recipient.email_rejected`` for the final outcomes, in the record's
        transaction (a claim is sent once, so each is recorded once); throttled ones go back, uncertain
        ones are not known yet."""
        if self._graph is None:
            return
        view = subscribers_for(self._graph)
        if not any(view.wants(page.tenant_id, t, tx) for t in _EVENT_OF.values()):
            return  # nobody listens: not even the events are built
        job = page.job
        events = [
            Event.of(_EVENT_OF[r.outcome], now, campaignId=page.campaign_ref, dispatchId=job.dispatch_id,
                     profileId=r.key)
            for r in results
            if r.outcome in _EVENT_OF
        ]  # fmt: skip
        record_events(tx, self._graph, page.tenant_id, events)

    def record_and_advance(
        self,
        tx: Tx,
        page: ClaimedPage,
        results: list[SendResult],
        *,
        cursor: str | None,
        last_error: str | None,
        done: bool,
        next_page_at: str | None,
        now: str,
        pause: int = 0,
    ) -> PassStep:
        late = self.record(tx, page, results, now=now) if results else 0
        return advance_pass(
            tx,
            page.job,
            tally=page.tally,
            cursor=cursor,
            enqueued=len(results),
            counters=counters(results, late=late),
            last_error=last_error,
            done=done,
            now=now,
            next_page_at=next_page_at,
            graph=self._graph,
            pause=pause,
        )

    def record_and_defer(
        self,
        tx: Tx,
        page: ClaimedPage,
        results: list[SendResult],
        *,
        cursor: str | None,
        retry_at: str,
        reason: str,
        last_error: str | None,
        now: str,
    ) -> Any:
        late = self.record(tx, page, results, now=now)
        tally_page(tx, page.job, page.tally, now=now)  # re-read members count again: more passes, never fewer
        tx.run(
            statement(_COOLDOWN), provider=self._provider, until=retry_at, reason=reason, now=now
        ).consume()
        return defer(
            tx,
            page.job,
            cursor=cursor,
            retry_at=retry_at,
            reason=reason,
            max_deferrals=self._max_deferrals,
            now=now,
            enqueued=len(results),
            counters=counters(results, late=late),
            last_error=last_error,
        )


def _route(tx: Tx, segment: CompiledSegment | None, params: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The guardians this page routes for email (guardian id -> the page's members routed to them), with
    every profile lock of the page taken, members and guardians in ascending order
    (``cypher/delivery/email/guardian_lock.cypher``); empty for an empty page."""
    row = tx.run(routed_query("guardian_lock", segment), **params).single()
    if row is None:
        return {}
    return {str(pid): tuple(str(v) for v in via) for pid, via in row["routed"]}


@cache
def _guardian_claim_query(capped: bool) -> str:
    """The email claim (``email_page.cypher``, every rule as for members) over a page's routed guardians
    instead of its members: its head (``fragments/guardian_claim_head.cypher``) reads each guardian the
    routing named by its key, still linked with consent granted to a child it was routed for (read
    under the lock the routing statement took)."""
    return statement(
        "email_page", AUDIENCE_PAGE=fragment("guardian_claim_head"), EMAIL_CAP=email_cap_slot(capped)
    )


def statement_variants(samples: Sequence[CompiledSegment | None]) -> Iterator[tuple[str, str]]:
    """Every statement this module fills (tests EXPLAIN them all)."""
    for capped in (False, True):
        yield "email_page", _guardian_claim_query(capped)


def _with_unsubscribe_ids(tx: Tx, rows: Sequence[Sequence[Any]]) -> list[Claimed]:
    """The claimed ``[profileId, address, unsubscribeId, stateId, locale]`` rows, allocating the ids still
    missing (a profile made before ids existed and not yet backfilled) in the claim's transaction, under
    its locks."""
    missing = [str(pid) for pid, _, uid, _, _ in rows if uid is None]
    allocated: dict[str, str] = {}
    if missing:
        result = tx.run(statement("email_unsubscribe_ids"), profileIds=missing)
        allocated = {str(r["profileId"]): str(r["unsubscribeId"]) for r in result}
    return [
        Claimed(str(pid), str(address), str(uid or allocated[str(pid)]), str(state), locale)
        for pid, address, uid, state, locale in rows
    ]


def counters(results: Sequence[SendResult], *, late: int) -> dict[str, int]:
    """The Dispatch counters of one page's outcomes; ``late`` of its uncertain ones were already counted
    by the sweeper as abandoned claims, so they are not counted twice."""
    counts = Counter(r.outcome for r in results)
    return {
        "emailed": counts["accepted"],
        "rejected": counts["rejected"],
        "uncertain": counts["uncertain"] - late,
        "throttled": counts["throttled"],
    }
