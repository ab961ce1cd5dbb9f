"""The job table decides every message's fate, for the local runner and the Lambda handlers alike.

A page job that no configured handler can serve (an email page on a worker without an email provider)
must stop its walk visibly, with the reason on the Dispatch: not loop through the dead-letter queue
while the sweeper re-arms it, and never end as a silent ``completed``.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.jobs import Dead, Done, Retry, retry_delay
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import ReceivedMessage
from campaign_engine.wiring import build_job_table, build_worker, run_sweep
from tests.support.delivery import NOW, StepClock, delivery_settings, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, make_email_campaign


def test_an_email_page_without_an_email_provider_fails_its_dispatch_visibly(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    settings = delivery_settings(base_settings)  # notify configured, CAMPAIGN_EMAIL_PROVIDER=none
    queues = local_queues(tmp_path / "q.sqlite3")
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["p1", "p2"])
    email_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]

    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()

    [record] = [d for d in list_dispatches(graph, "c1") if d.dispatch_id == email_id]
    assert record.status == "failed"
    assert record.last_error is not None and "not_configured" in record.last_error
    assert "CAMPAIGN_EMAIL_PROVIDER" in record.last_error
    assert record.emailed == 0
    assert queues.dispatch.depth() == 0 and queues.dispatch.dead_letters() == []
    # A failed walk is not stuck: the sweeper leaves it alone however late it runs.
    later = run_sweep(settings, graph, queues.dispatch, clock=lambda: NOW + timedelta(days=1))
    assert later.rearmed == [] and queues.dispatch.depth() == 0


def test_outcomes_per_message_in_input_order(base_settings: Settings, graph: Graph, tmp_path: Path) -> None:
    settings = delivery_settings(base_settings, campaign_delivery_retry_seconds=30)
    queues = local_queues(tmp_path / "q.sqlite3")
    table = build_job_table(settings, graph, queues, clock=StepClock())
    try:
        unreadable = ReceivedMessage(message_id="m1", receipt="r1", body="{not json", receive_count=1)
        stale_page = ReceivedMessage(
            message_id="m2",
            receipt="r2",
            body='{"type":"page","dispatchId":"gone","campaignId":"c1","campaignCreatedAt":"x"}',
            receive_count=1,
        )
        outcomes = table.handle([unreadable, stale_page])
    finally:
        table.close()
    assert outcomes == [Dead("invalid_message"), Done()]
    assert table.keys == frozenset({("page", "notify"), ("notify", "notify"), ("webhooks", "webhooks")})
    assert Retry(retry_delay(30, 3)) == Retry(120)
    assert retry_delay(30, 99) == 900 and retry_delay(0, 5) == 0
