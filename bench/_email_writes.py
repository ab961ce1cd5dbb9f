"""The email walk's bare graph writes: its two transactions per page, nothing else.

Each page is the worker's own claim transaction (guard, cooldown, read-lock-recheck-claim, through
``PageTransactions.claim``) followed by its record + cursor step (``record_and_advance``) with every
message accepted, one after the other on one thread: no rendering, no provider, no pipelining. That is
the rate the graph alone allows the walk, the second term of the shared ceiling
1 / (1/provider + 1/writes) that ``bench.email_send`` sets its end-to-end rate against.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_tx import PageTransactions
from campaign_engine.delivery.email.provider import SendResult
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue

__all__ = ["bare_write_rate"]


def bare_write_rate(
    settings: Settings, graph: Graph, work: Path, campaign_id: str, *, now: datetime
) -> float:
    """Emails/s of the walk's graph writes alone over ``campaign_id``'s whole audience; every member is
    claimed and recorded accepted, and the dispatch ends ``completed`` as a real one would."""
    queue = LocalQueue(work / "bare-writes.sqlite3", "dispatch", visibility_timeout=300)
    # acceptFallback: over --languages' locales a one-language campaign falls back
    dispatch(
        graph,
        queue,
        campaign_id=campaign_id,
        expected_token=None,
        now=now,
        settings=DispatchSettings(adult_age=18, max_recipients=10**7),
        accept_fallback=True,
    )
    [message] = queue.receive(max_messages=1)
    job = parse_job(message.body)
    assert isinstance(job, PageJob), job
    page_size = settings.campaign_email_page_size
    tx = PageTransactions(
        provider=settings.campaign_email_provider,
        page_size=page_size,
        adult_age=settings.campaign_adult_age,
        max_deferrals=settings.campaign_email_max_deferrals,
        frequency_caps={},
    )
    emailed = 0
    start = time.perf_counter()
    while True:
        clock = datetime.now(UTC)
        page = graph.write(tx.claim, job, after=job.cursor, claim_id=uuid.uuid4().hex, now=clock)
        blocked = page.skip or page.stop or page.cooldown_until
        assert blocked is None, f"the bare pass met {blocked}"
        results = [
            SendResult(c.profile_id, "accepted", provider_message_id=c.profile_id) for c in page.claimed
        ]
        done = page.read < page_size
        step = graph.write(
            tx.record_and_advance,
            page,
            results,
            cursor=page.last if page.read else job.cursor,
            last_error=None,
            done=done,
            next_page_at=None,
            now=format_ts(clock),
        )
        assert step.won, "nothing else walks this dispatch"
        emailed += len(results)
        if done:
            break
        job = job.model_copy(update={"cursor": page.last})
    seconds = time.perf_counter() - start
    queue.close()
    return emailed / seconds
