"""``dispatch.late`` on real components (Neo4j, the local queue, the worker, loopback receivers): a send
whose receivers answer after its deadline is announced once through event webhooks, counted by the
metric, and getDispatch says when it fell behind. Falling behind is made deterministic by the clock: the
receivers' answers are recorded a minute after a deadline ten seconds out. The page walks raise it at the
page where they find the send behind, without the sweep, and two of them racing raise it once."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from campaign_engine.campaigns.sending.deadline_watch import note_late
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.plan import Pace
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.observability import metrics
from campaign_engine.observability.metrics import MetricDef
from tests.support.delivery import NOW, ThreadServer, add_members, drain, inbox_server, make_campaign
from tests.support.event_webhooks import EventReceiver, Stack, _endpoint

SETTINGS = DispatchSettings(adult_age=18, max_recipients=1000, pace=Pace(page_size=500, wave_delay=0))


class Counted:
    def __init__(self) -> None:
        self.late: list[Mapping[str, str]] = []

    def add(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        if metric is metrics.DISPATCHES_LATE:
            self.late.append(dict(labels))


@contextmanager
def _sending_c1(stack: Stack, tmp_path: Path, events: list[str]) -> Iterator[tuple[EventReceiver, Counted]]:
    """An endpoint for ``events`` and its receiver, the metric recorded, and campaign c1 with 150 members
    on a real inbox."""
    receiver, counted = EventReceiver(), Counted()
    previous = metrics.record_to(counted)
    try:
        with ThreadServer(receiver.app()) as endpoint, inbox_server(tmp_path) as inbox:
            _, secret = _endpoint(stack, endpoint, events=events)
            receiver.secrets.append(secret)
            make_campaign(stack.graph, "c1")
            add_members(stack.graph, "c1", [f"p{i:03d}" for i in range(150)],
                        webhook=f"{inbox.url}/api/notifications/send")  # fmt: skip
            yield receiver, counted
    finally:
        metrics.record_to(previous)


def test_a_send_that_falls_behind_its_deadline_raises_dispatch_late_once(
    stack: Stack, tmp_path: Path
) -> None:
    with _sending_c1(stack, tmp_path, ["dispatch.late", "dispatch.completed"]) as (receiver, counted):
        by = NOW + timedelta(seconds=10)  # 150 at the configured 50/s: 3 s, feasible
        started = dispatch(stack.graph, stack.queues.dispatch, campaign_id="c1", expected_token=None,
                           now=NOW, settings=SETTINGS, deliver_by=by)  # fmt: skip
        stack.later(60)  # the receivers answer at +60 s
        stack.run()
        stack.later(60)
        stack.run()  # a later sweep raises nothing more
    events = receiver.unique()
    late = [e for e in events.values() if e["type"] == "dispatch.late"]
    assert len(late) == 1 and [e["type"] for e in events.values()].count("dispatch.completed") == 1
    assert late[0]["data"] == {
        "campaignId": "c1", "dispatchId": started.dispatch_id, "channel": "notify",
        "deliverBy": "2026-03-01 12:00 UTC", "latestAt": format_ts(by),
        "expectedFinishAt": format_ts(NOW + timedelta(seconds=60)), "behindSeconds": 50,
    }  # fmt: skip
    assert counted.late == [{"channel": "notify"}]
    got = get_dispatch(stack.graph, started.dispatch_id)
    assert got.acknowledged == 150 and got.deadline is not None
    assert got.deadline.late_at == format_ts(NOW + timedelta(seconds=60))


def test_a_send_on_time_raises_nothing(stack: Stack, tmp_path: Path) -> None:
    with _sending_c1(stack, tmp_path, ["dispatch.late", "dispatch.completed"]) as (receiver, _):
        started = dispatch(stack.graph, stack.queues.dispatch, campaign_id="c1", expected_token=None, now=NOW,
                           settings=SETTINGS, deliver_by=NOW + timedelta(seconds=10))  # fmt: skip
        stack.later(2)
        stack.run()
        stack.later(600)
        stack.run()
    assert [e["type"] for e in receiver.unique().values()] == ["dispatch.completed"]
    got = get_dispatch(stack.graph, started.dispatch_id).deadline
    assert got is not None and got.late_at is None


def _late_queued(graph: Graph) -> int:
    """dispatch.late events in the outbox (each endpoint's batches), whether or not relayed yet."""
    rows = graph.run("MATCH (b:WebhookBatch) UNWIND b.types AS t WITH t WHERE t = 'dispatch.late' "
                     "RETURN count(*) AS n")  # fmt: skip
    return int(rows[0]["n"])


def test_the_page_walk_raises_dispatch_late_at_the_page_it_finds_the_send_behind_without_the_sweep(
    stack: Stack, tmp_path: Path
) -> None:
    with _sending_c1(stack, tmp_path, ["dispatch.late"]) as (receiver, counted):
        started = dispatch(stack.graph, stack.queues.dispatch, campaign_id="c1", expected_token=None,
                           now=NOW, settings=SETTINGS, deliver_by=NOW + timedelta(seconds=10))  # fmt: skip
        stack.later(60)  # the first page opens at +60 s, 50 s past the deadline, nobody sent yet
        drain(stack.worker.handle, stack.queues, rounds=2000)  # the worker alone: no sweep ran
        got = get_dispatch(stack.graph, started.dispatch_id).deadline
        assert got is not None and got.late_at == format_ts(NOW + timedelta(seconds=60))
        assert _late_queued(stack.graph) == 1 and counted.late == [{"channel": "notify"}]
        stack.run()  # the sweep relays it and raises nothing more
    assert [e["type"] for e in receiver.unique().values()] == ["dispatch.late"]
    assert counted.late == [{"channel": "notify"}]


def test_two_workers_finding_the_same_send_behind_raise_dispatch_late_once(stack: Stack) -> None:
    # Each Dispatch is judged by two threads at once, from the same read (both see it unmarked): the
    # lock taken before lateAt is read lets exactly one of them mark it and queue the event.
    with ThreadServer(EventReceiver().app()) as endpoint:
        _endpoint(stack, endpoint, events=["dispatch.late"])
        make_campaign(stack.graph, "c1")
        ids = [f"d{i:02d}" for i in range(12)]
        stack.graph.run(
            "MATCH (c:Campaign {id: 'c1'}) UNWIND $ids AS id CREATE (c)<-[:DISPATCH_OF]-(:Dispatch {id: id,"
            " campaignId: 'c1', channel: 'notify', status: 'sending', startedAt: $start, planRecipients: 100,"
            " planFinishesAt: $plan, planRate: 50.0, planRateSource: 'configured', deliverByAt: $by,"
            " acknowledged: 0})",
            ids=ids, start=format_ts(NOW), plan=format_ts(NOW + timedelta(seconds=2)),
            by=format_ts(NOW + timedelta(seconds=10)),
        )  # fmt: skip
        nodes = {r["d"]["id"]: dict(r["d"]) for r in stack.graph.run(
            "MATCH (d:Dispatch) WHERE d.id IN $ids RETURN d {.*} AS d", ids=ids)}  # fmt: skip
        won: list[str] = []
        for node in nodes.values():
            gate = threading.Barrier(2)

            def judge(node: Mapping[str, object] = node, gate: threading.Barrier = gate) -> None:
                gate.wait()
                if note_late(stack.graph, node, NOW + timedelta(minutes=1)):
                    won.append(str(node["id"]))

            threads = [threading.Thread(target=judge) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    assert sorted(won) == ids  # each once
    assert _late_queued(stack.graph) == len(ids)
