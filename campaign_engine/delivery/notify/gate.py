"""The pause gate: asked right before each webhook POST whether its campaign may still be posted to.

The worker's per-batch recheck is the full eligibility rule, but a batch's POSTs can wait for a free
slot behind other batches. The gate catches a pause (or delete, or the notify channel going) that lands
meanwhile (docs/architecture.md "Cancel is a status": stop future work before each webhook POST): the campaign
incarnation must still be live with the notify channel, re-read at most every ``GATE_TTL_SECONDS``, so
a pause stops every POST that starts more than that after it commits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph

__all__ = ["GATE_TTL_SECONDS", "SendGate"]

GATE_TTL_SECONDS = 0.2

# replan=skip: a unique-key seek, as in notify_recheck.cypher.
_GATE = "notify_send_gate"  # cypher/delivery/notify/notify_send_gate.cypher


class SendGate:
    """Whether a campaign incarnation may still be posted to; each answer is reused for ``ttl`` seconds.

    Used only from the poster's event loop (no locks needed): one read per campaign and ``ttl`` however
    many POSTs ask, run in the loop's default executor so the loop keeps sending meanwhile. Nothing a
    receiver controls runs there (webhook DNS has the transport's own pool), so a hostile receiver
    cannot make the gate wait.
    """

    def __init__(
        self, graph: Graph, *, ttl: float = GATE_TTL_SECONDS, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._graph = graph
        self._ttl = ttl
        self._monotonic = monotonic
        self._answers: dict[tuple[str, str], tuple[float, bool]] = {}
        self._reading: dict[tuple[str, str], asyncio.Future[bool]] = {}

    async def allows(self, campaign: tuple[str, str]) -> bool:
        """Raises when the graph cannot answer (the caller treats that as "try later")."""
        answer = self._answers.get(campaign)
        if answer is not None and self._monotonic() - answer[0] < self._ttl:
            return answer[1]
        reading = self._reading.get(campaign)
        if reading is None:
            reading = asyncio.get_running_loop().run_in_executor(None, self._read, campaign)
            self._reading[campaign] = reading
            try:
                is_open = await reading
            finally:
                del self._reading[campaign]
            self._answers[campaign] = (self._monotonic(), is_open)
            return is_open
        return await asyncio.shield(reading)

    def _read(self, campaign: tuple[str, str]) -> bool:
        campaign_id, created_at = campaign
        rows = self._graph.read(
            lambda tx: [
                r["open"] for r in tx.run(statement(_GATE), campaignId=campaign_id, createdAt=created_at)
            ]
        )
        return bool(rows and rows[0])
