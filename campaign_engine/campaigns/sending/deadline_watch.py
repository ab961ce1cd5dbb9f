"""While sending: a Dispatch whose live estimate finishes after its deadline raises ``dispatch.late``.

The page walks ask first (``note_late``, given to them by the wiring as ``page_opening.py``'s watch):
each page opens on the Dispatch it read, which holds the progress the live estimate is computed from,
so the check is one comparison per page and a write only for a send that just fell behind. The sweep
is the backstop (a send whose last page is walked, whose receivers still answer):
each sweep reads the Dispatches with a ``deliverBy`` of the last ``WATCH_DAYS`` not yet late, sending or
with a completed walk whose receivers are still answering, and judges each by its live estimate
(``plan_live.py``: the rate so far and the recipients left; never before now while some are left).
One behind is marked ``lateAt`` under the Dispatch's write lock, taken before ``lateAt`` is read
(``cypher/sending/deadline_late.cypher``), so two workers and a sweeper mark it once; in that transaction
the ``dispatch.late`` event goes to the outbox (event webhooks deliver it), so it is raised once per
Dispatch whatever the sweepers; the metric ``campaign_engine_dispatches_late_total`` counts it after
the commit. ``getDispatch`` then says when it fell behind and by how much (``dispatch_reads.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.campaigns.sending.plan_live import live_plan
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_dispatch_events
from campaign_engine.observability import metrics

__all__ = ["behind", "note_late", "raise_late"]

log = logging.getLogger(__name__)

_BATCH = 500
WATCH_DAYS = 2  # a deadline further back is history: its send was judged, or its receivers never answered


def behind(node: Mapping[str, Any], *, now: datetime | None = None) -> tuple[datetime, float] | None:
    """(the estimated finish, seconds past the deadline) of a sending Dispatch with one; None without."""
    live = live_plan(node)
    if live is None or not node.get("deliverByAt"):
        return None
    finish = parse_ts(live.finishes_at)
    if now is not None and live.sent < live.recipients:
        finish = max(finish, now)  # someone is still waiting: it cannot finish before now
    return finish, (finish - parse_ts(str(node["deliverByAt"]))).total_seconds()


def raise_late(graph: Graph, *, now: datetime) -> list[str]:
    """Mark and announce every sending Dispatch now behind its deadline; returns their ids."""
    since = format_ts(now - timedelta(days=WATCH_DAYS))

    def read(tx: Tx) -> list[dict[str, Any]]:
        return [dict(r["dispatch"]) for r in tx.run(statement("deadline_due"), since=since, limit=_BATCH)]

    rows = graph.read(read)
    return [str(node["id"]) for node in rows if note_late(graph, node, now)]


def note_late(graph: Graph, node: Mapping[str, Any], now: datetime) -> bool:
    """Mark and announce ``node`` if its live estimate at ``now`` finishes past its deadline and nobody
    has yet; True when this call did. Without a deadline, or once marked, no statement is run."""
    if node.get("lateAt") or not node.get("deliverByAt"):
        return False
    judged = behind(node, now=now)
    if judged is None or judged[1] <= 0:
        return False
    finish, over = judged
    channel = graph.write(_mark, node, finish=finish, over=over, stamp=format_ts(now), graph=graph)
    if channel is None:
        return False  # another worker or sweeper marked it, or it stopped meanwhile
    metrics.dispatch_late(channel)
    log.warning("dispatch.late dispatch_id=%s behind_s=%d", node["id"], round(over))
    return True


def _mark(
    tx: Tx, node: Mapping[str, Any], *, finish: datetime, over: float, stamp: str, graph: Graph
) -> str | None:
    row = tx.run(statement("deadline_late"), dispatchId=node["id"], now=stamp,
                 finishesAt=format_ts(finish)).single()  # fmt: skip
    if row is None:
        return None
    record_dispatch_events(tx, graph, "dispatch.late", [str(node["id"])], now=stamp,
                           deliverBy=node.get("deliverByLabel"), latestAt=node["deliverByAt"],
                           expectedFinishAt=format_ts(finish), behindSeconds=round(over))  # fmt: skip
    return str(row["channel"])
