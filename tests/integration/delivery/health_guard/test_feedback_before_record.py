"""Feedback that outruns the record of its send still counts, once: the provider (here the Postmark
stand-in, holding its answer) has accepted a wave and a bounce webhook arrives before the walk's record
transaction wrote the message ids. Before the fix the address was suppressed but the Dispatch never
counted the bounce, so the guard let the next wave go (2 of 3 acceptance runs through make dev). And a
webhook naming an SMTP ``Message-ID`` with or without its angle brackets finds the send."""

from __future__ import annotations

import threading
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.delivery.runner import Worker as LocalWorker
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker
from tests.conftest import free_port
from tests.support.api import TrpcClient
from tests.support.concurrency import wait_for
from tests.support.delivery import StepClock, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, make_email_campaign
from tests.support.health_guard import (
    BOUNCE,
    COMPLAINT,
    PAGE,
    _events,
    _feedback,
    _members,
    _pages,
    _subscribe,
)
from tests.support.postmark_standin import PostmarkStandin


def _pending(graph: Graph) -> int:
    return int(graph.run("MATCH (f:PendingFeedback) RETURN count(f) AS n")[0]["n"])


def test_bounces_posted_before_the_wave_is_recorded_count_once_and_pause_the_next_page(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    api: TrpcClient,
    worker: LocalWorker,
) -> None:
    _subscribe(graph, settings)
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(3 * PAGE))
    dispatch_id = start_dispatch(graph, queues.dispatch, max_recipients=10_000).dispatch_ids["email"]
    gate = postmark.hold_next()  # accepted at the provider, not yet known to the walk
    walking = threading.Thread(target=_pages, args=(worker, queues, 1))
    walking.start()
    try:
        wait_for("the first wave at the provider", lambda: len(postmark.accepted) == PAGE, timeout=60)
        wave = list(postmark.accepted)
        _feedback(api, BOUNCE, wave[:3], first_id=5000)  # 3% of the wave, before its record
        _feedback(api, BOUNCE, wave[:1], first_id=6000)  # another record about the same message
        _feedback(api, COMPLAINT, wave[3:4], first_id=7000)
        assert get_dispatch(graph, dispatch_id).hard_bounces == 0  # nothing to count yet
        assert _pending(graph) > 0
    finally:
        gate.set()
        walking.join(timeout=60)
    counted = get_dispatch(graph, dispatch_id)
    assert (counted.hard_bounces, counted.complaints) == (3, 1)
    assert _pending(graph) == 0
    assert len(_events(graph, "recipient.bounced")) == 3
    assert len(_events(graph, "recipient.complained")) == 1
    _feedback(api, BOUNCE, wave[1:2], first_id=8000)  # after the record: the send is already marked
    assert get_dispatch(graph, dispatch_id).hard_bounces == 3

    _pages(worker, queues, 1)  # the guard holds the next wave
    paused = get_dispatch(graph, dispatch_id)
    assert paused.status == "paused"
    assert paused.pause_reason is not None and paused.pause_reason.rate == "hardBounce"
    assert paused.pause_reason.message == "hard_bounce_rate 0.03 > 0.02 (over 100)"
    assert len(postmark.accepted) == PAGE


def test_an_smtp_message_id_is_found_with_or_without_its_angle_brackets(
    settings: Settings, graph: Graph, api: TrpcClient, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", _members(4))
    port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", port, tmp_path / "mail")
    try:
        smtp = settings.model_copy(
            update={"campaign_email_provider": "smtp", "smtp_host": "127.0.0.1", "smtp_port": port}
        )
        queues = local_queues(tmp_path / "q.sqlite3")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_ids["email"]
        worker = build_worker(smtp, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
    finally:
        catcher.stop()
    sent = []
    for mail in sorted((tmp_path / "mail").glob("*.eml")):
        headers = dict(
            line.split(": ", 1) for line in mail.read_text().split("\n\n")[0].splitlines() if ": " in line
        )
        sent.append({"MessageID": headers["Message-ID"].strip(), "To": headers["To"].strip()})
    assert len(sent) == 4 and all(m["MessageID"].startswith("<") for m in sent)
    bare = [{**m, "MessageID": m["MessageID"].strip("<>")} for m in sent[:2]]
    _feedback(api, BOUNCE, bare + sent[2:3], first_id=9000)
    assert get_dispatch(graph, dispatch_id).hard_bounces == 3
