"""A dispatch through the real worker and a pipelining relay that cuts the connection mid-page.

Real components: the worker routing, the claim and record transactions on real Neo4j, the local
queue, the pooled pipelined SMTP provider and the loopback sink (``tests/support/smtp_sink.py``). The
relay drops the connection at a different step on each pass of the page; the throttled rest comes
back after each back-off (an injected clock and the sweeper, no sleeping). Whatever happens, nobody
is stored twice, everyone the relay did not take unseen gets exactly one email, and the two whose
fate the provider cannot know stay claimed as uncertain.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker, run_sweep
from tests.support.delivery import StepClock, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, email_settings, email_states, make_email_campaign
from tests.support.smtp_sink import Cut, SinkState, running_sink

MEMBERS = [f"m{i:02d}" for i in range(40)]


def _first_page(graph: Graph) -> PageJob:
    [record] = [d for d in list_dispatches(graph, "c1") if d.channel == "email"]
    return PageJob.model_validate(
        {
            "dispatchId": record.dispatch_id,
            "campaignId": "c1",
            "campaignCreatedAt": record.campaign_created_at,
            "channel": "email",
            "cursor": None,
        }
    )


def test_cuts_at_every_step_of_a_pipelined_page_never_email_anyone_twice(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    cuts: dict[str, Cut] = {
        "m05@example.com": "rcpt",
        "m12@example.com": "dot",
        "m20@example.com": "body",
        "m27@example.com": "data",
    }
    with running_sink(SinkState(cuts=dict(cuts))) as sink:
        settings = email_settings(
            base_settings,
            "http://unused.invalid",
            "unused",
            campaign_email_provider="smtp",
            smtp_host="127.0.0.1",
            smtp_port=sink.port,
            smtp_max_connections=1,
        )
        queues = local_queues(tmp_path / "q.sqlite3")
        clock = StepClock()
        make_email_campaign(graph)
        add_email_members(graph, "c1", MEMBERS)
        start_dispatch(graph, queues.dispatch, max_recipients=100)
        first = _first_page(graph)
        worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
        try:
            drain(worker.handle, queues)
            for _ in range(6):  # back-off periods: the throttled rest of the page comes back each time
                clock.now += timedelta(seconds=61)
                run_sweep(settings, graph, queues.dispatch, clock=clock)
                queues.dispatch.send_batch([job_json(first)])  # and a redelivered first page, too
                drain(worker.handle, queues)
        finally:
            worker.close()
        stored = Counter(sink.state.received)
        assert sink.state.cuts == {}  # every cut happened
        assert sink.state.max_commands_per_read >= 3  # the relay saw pipelined groups
    assert max(stored.values()) == 1
    states = email_states(graph, "c1")
    uncertain = {p for p, s in states.items() if s["emailOutcome"] == "uncertain"}
    assert uncertain == {"m12", "m20"}  # text sent, no answer: claims kept, never sent again
    assert set(stored) == {f"{p}@example.com" for p in MEMBERS} - {"m20@example.com"}
    assert all(states[p].get("emailedAt") for p in MEMBERS if p not in uncertain)
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.uncertain) == ("completed", 38, 2)
