"""Rejected and suppressed deliveries counted once per recipient and Dispatch (``notify_held.cypher``).

Found by the chaos run (``bench/chaos.py``, seed 4): every copy of a delivery the queue handed out again
after a pause added one to ``suppressed``, so a stopped Dispatch showed more outcomes than recipients.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx

__all__ = ["record_held"]


def record_held(tx: Tx, held: list[dict[str, Any]], *, batch: str) -> list[tuple[str, str, int]]:
    """(dispatch, outcome, how many of ``held`` count now): ``held`` rows are ``{profileId, dispatchId,
    outcome}``, outcome ``rejected`` or ``suppressed``; ``batch`` names this write for every attempt."""
    unique = {(str(h["profileId"]), str(h["dispatchId"])): h for h in held}
    if not unique:
        return []
    ordered = [unique[key] for key in sorted(unique)]  # each pair once, in profile lock order
    result = tx.run(statement("notify_held"), held=ordered, batch=batch)
    return [(str(r["dispatchId"]), str(r["outcome"]), int(r["firsts"])) for r in result]
