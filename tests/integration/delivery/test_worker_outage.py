"""A graph outage longer than the queue's dead-letter limit dead-letters nothing: the worker holds.

The worker's graph goes through a loopback proxy (``tests/support/bolt_cut.py``) that is taken down
and brought back; the test's own graph, the queue file and the inbox stay up throughout.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.wiring import build_worker
from tests.support.bolt_cut import bolt_cutter
from tests.support.concurrency import wait_for
from tests.support.delivery import (
    StepClock,
    add_members,
    delivery_settings,
    inbox_server,
    local_queues,
    make_campaign,
    notified,
    start_dispatch,
)

VISIBILITY = 1
MAX_RECEIVES = 3


def test_an_outage_of_many_visibility_timeouts_dead_letters_nothing(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3", visibility=VISIBILITY, max_receives=MAX_RECEIVES)
    members = [f"p{i:02d}" for i in range(30)]
    with inbox_server(tmp_path) as inbox, bolt_cutter(base_settings.neo4j_uri) as cutter:
        make_campaign(graph, "c1")
        add_members(graph, "c1", members, webhook=f"{inbox.url}/api/notifications/send")
        dispatch_id = start_dispatch(graph, queues.dispatch).dispatch_id
        settings = delivery_settings(
            base_settings,
            neo4j_uri=cutter.uri,
            neo4j_unavailable_wait_seconds=1,  # a handler gives its message back after 1 s
            campaign_dispatch_page_size=10,
        )
        worker_graph = open_graph(settings)
        worker = build_worker(
            settings, worker_graph, queues=queues, clock=StepClock(), sweep_every=None, wait_seconds=0.2
        )
        stop = threading.Event()
        thread = threading.Thread(target=worker.run, args=(stop,), name="worker")
        cutter.go_down()
        thread.start()
        try:
            # Eight visibility timeouts: a worker that kept receiving would have dead-lettered the
            # page job (3 receives) within about three.
            time.sleep(8 * VISIBILITY)
            assert queues.dispatch.dead_letters() == []
            assert queues.dispatch.depth() == 1
            assert get_dispatch(graph, dispatch_id).pages == 0
            cutter.come_back()
            wait_for("every member notified", lambda: notified(graph, "c1") == members, timeout=30)
            wait_for(
                "the walk to complete",
                lambda: get_dispatch(graph, dispatch_id).status == "completed",
                timeout=30,
            )
        finally:
            stop.set()
            thread.join(timeout=30)
            worker_graph.close()
    assert queues.dispatch.dead_letters() == [] and queues.delivery.dead_letters() == []
    record = get_dispatch(graph, dispatch_id)
    assert (record.enqueued, record.acknowledged) == (30, 30)
