"""Events arrive within seconds of the change that records them, whichever process records it: the API
kicks the relay after a request's commit, the worker after each batch of jobs (``delivery/relay_kick.py``).

Real components: the in-process API, the real worker polling the local queue in its own threads, loopback
receivers. No sweep runs here, so an event nobody kicked would never arrive. Latency is measured from
the API's answer (or the notification's arrival, for the worker's events) to the event's arrival."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from campaign_engine.delivery import webhook_relay
from campaign_engine.domain.dispatch import RelayJob
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_events
from campaign_engine.wiring.worker import build_webhook_relay
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok
from tests.support.concurrency import wait_for
from tests.support.delivery import (
    ScriptedQueue,
    ScriptedReceiver,
    ThreadServer,
    add_members,
    drain,
    make_campaign,
    start_dispatch,
)
from tests.support.event_webhooks import EventReceiver, Stack, _endpoint
from tests.support.trpc_wire import NEW_CAMPAIGN

_EVENTS = 20
_P95_SECONDS = 2.0
_ARRIVE_WITHIN = 30.0  # the bound of a wait, not the promise: a loaded 2-core machine


@contextmanager
def _worker_running(stack: Stack) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=stack.worker.run, args=(stop,), name="worker")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def _p95(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def _first_arrivals(receiver: EventReceiver, key: str) -> dict[str, float]:
    """When each event first arrived (at least once: a repeat counts from the first), by ``data[key]``."""
    with receiver.lock:
        arrivals: dict[str, float] = {}
        for r in receiver.received:
            arrivals.setdefault(r["event"]["data"][key], r["at"])
        return arrivals


def test_events_the_api_records_arrive_within_two_seconds_of_its_answer(stack: Stack, graph: Graph) -> None:
    """Twenty campaigns created back to back: a burst, so the kick's once-a-second bound is part of it."""
    receiver, other = EventReceiver(), EventReceiver()
    with (
        ThreadServer(receiver.app()) as endpoint,
        ThreadServer(other.app()) as others_endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch,
                   webhooks_queue=stack.queues.webhooks) as api,
        _worker_running(stack),
    ):  # fmt: skip
        created = ok(api.mutate("webhookEndpoints.create", {"url": f"{endpoint.url}/events",
                                "events": ["campaign.created"]}, as_=ADMIN_ID, admin=True))  # fmt: skip
        receiver.secrets.append(created["secret"])
        _, other_secret = _endpoint(stack, others_endpoint, tenant="other")  # hears nothing of ours
        other.secrets.append(other_secret)
        answered: dict[str, float] = {}
        for i in range(_EVENTS):
            campaign_id = f"soon{i:02d}"
            ok(api.mutate("campaigns.create", {**NEW_CAMPAIGN, "id": campaign_id}, as_=ADMIN_ID, admin=True))
            answered[campaign_id] = time.monotonic()
        wait_for(
            "every campaign.created event",
            lambda: len(_first_arrivals(receiver, "campaignId")) >= _EVENTS,
            timeout=_ARRIVE_WITHIN,
        )

        # A replay is kicked like new events: with no sweep here, they would otherwise never come again.
        # (Once every delivery is settled: an event still in flight is queued anyway, not queued again.)
        def settled() -> bool:
            endpoint_row = ok(api.query("webhookEndpoints.list", as_=ADMIN_ID, admin=True))["records"][0]
            return bool(endpoint_row["pending"] == 0)

        wait_for("every delivery settled", settled, timeout=_ARRIVE_WITHIN)
        first = min(r["event"]["occurredAt"] for r in receiver.received)
        replay = {"id": created["id"], "since": first}
        queued = ok(api.mutate("webhookEndpoints.replay", replay, as_=ADMIN_ID, admin=True))["queued"]
        assert queued == _EVENTS
        wait_for("the replayed events", lambda: len(receiver.received) >= 2 * _EVENTS, timeout=_ARRIVE_WITHIN)
    arrived = _first_arrivals(receiver, "campaignId")
    latencies = [arrived[campaign_id] - at for campaign_id, at in answered.items()]
    assert _p95(latencies) < _P95_SECONDS, sorted(round(s, 2) for s in latencies)
    assert other.received == []


def test_events_the_worker_records_arrive_within_two_seconds_of_the_change(
    stack: Stack, graph: Graph
) -> None:
    """A dispatch's ``recipient.notified``, each measured from its notification's arrival."""
    receiver = EventReceiver()
    inbox = ScriptedReceiver([(200, b'{"sent":true}', "application/json")])
    posted: dict[int, float] = {}
    inbox.on_post = lambda count: posted.setdefault(count, time.monotonic())
    members = [f"p{i:03d}" for i in range(_EVENTS)]
    with ThreadServer(receiver.app()) as endpoint, ThreadServer(inbox.app()) as notify:
        _, secret = _endpoint(stack, endpoint, events=["recipient.notified"])
        receiver.secrets.append(secret)
        make_campaign(graph, "c1")
        add_members(graph, "c1", members, webhook=f"{notify.url}/hook")
        with _worker_running(stack):
            start_dispatch(graph, stack.queues.dispatch)
            wait_for(
                "every recipient.notified event",
                lambda: len(_first_arrivals(receiver, "profileId")) >= _EVENTS,
                timeout=_ARRIVE_WITHIN,
            )
    with inbox.lock:
        notified = {
            json.loads(post["body"])["recipient"]: posted[count]
            for count, post in enumerate(inbox.received, start=1)
        }
    arrived = _first_arrivals(receiver, "profileId")
    latencies = [arrived[profile] - notified[profile] for profile in members]
    assert _p95(latencies) < _P95_SECONDS, sorted(round(s, 2) for s in latencies)


def test_a_kick_the_queue_refuses_fails_no_request_and_the_sweep_delivers(
    stack: Stack, graph: Graph, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer stands; the line says how many endpoints, never which (their ids are one tenant's)."""
    receiver = EventReceiver()
    refusing = ScriptedQueue(stack.queues.webhooks)
    refusing.fail = True
    with (
        ThreadServer(receiver.app()) as endpoint,
        api_client(stack.settings, graph, clock=stack.clock, dispatch_queue=stack.queues.dispatch,
                   webhooks_queue=refusing) as api,
    ):  # fmt: skip
        endpoint_id, secret = _endpoint(stack, endpoint, events=["campaign.created"])
        receiver.secrets.append(secret)
        with caplog.at_level(logging.WARNING):
            ok(api.mutate("campaigns.create", NEW_CAMPAIGN, as_=ADMIN_ID, admin=True))
        failed = [r for r in caplog.records if r.getMessage().startswith("webhooks.kick_failed")]
        assert [r.getMessage() for r in failed] == ["webhooks.kick_failed endpoints=1"]
        assert endpoint_id not in caplog.text and secret not in caplog.text
        assert stack.queues.webhooks.stats().visible + stack.queues.webhooks.stats().delayed == 0
        drain(stack.worker.handle, stack.queues, rounds=10)
        assert receiver.received == []  # nothing kicked: the sweep's to deliver
        stack.run()
    assert [r["event"]["data"]["campaignId"] for r in receiver.received] == ["c1"]


def test_events_queued_while_the_relay_lets_go_leave_at_once(
    stack: Stack, graph: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay found nothing queued; before it let go an event came and its kick's job found the lease
    held, so did nothing. The relay, letting go, looks again: the event leaves now, not at the sweep."""
    receiver = EventReceiver()
    relay = build_webhook_relay(stack.settings, graph, stack.queues, clock=stack.clock)
    read_pending = webhook_relay._pending
    in_the_gap: list[object] = []

    def pending(tx: Tx, *, endpoint_id: str, limit: int) -> list[dict[str, object]]:
        rows = read_pending(tx, endpoint_id=endpoint_id, limit=limit)
        if not rows and not in_the_gap:  # the relay's last read, still holding the lease
            event = Event.of("campaign.created", format_ts(stack.clock()), campaignId="late")
            graph.write(lambda w: record_events(w, graph, "default", [event]))
            in_the_gap.append(relay.run(endpoint_id))  # the kick's job: the lease is held
        return rows

    with ThreadServer(receiver.app()) as endpoint:
        endpoint_id, secret = _endpoint(stack, endpoint, events=["campaign.created"])
        receiver.secrets.append(secret)
        monkeypatch.setattr(webhook_relay, "_pending", pending)
        result = relay.handle(RelayJob(endpoint_id=endpoint_id))
        assert in_the_gap == [webhook_relay.RelayResult()]  # the job in the gap did nothing
        assert result.more
        drain(stack.worker.handle, stack.queues)  # no sweep: only the follow-up job can send it
        relay.close()
    assert [r["event"]["data"]["campaignId"] for r in receiver.received] == ["late"]
