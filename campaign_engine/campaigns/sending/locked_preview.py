"""A send's preview read before its campaign's lock and verified under it.

Confirming a send (``dispatch``, ``approveDispatch``, ``scheduleDispatch``) needs the preview as it
stands at the commit. Walked under the lock, the audience walk would be one transaction with one
deadline (``NEO4J_TX_TIMEOUT_SECONDS``: a large send on a busy graph is refused), and every audience
edit would wait for it. So the preview is read first, each page a statement of its own
(``read_by_statement``), and under the lock the campaign's lock counter says whether it still
holds: every write that can change a campaign's recipients or definition takes that lock. A lost race
reads again; after ``UNLOCKED_ATTEMPTS`` of them the walk runs under the lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from campaign_engine.graph.graph import Graph, TimedSession, Tx

__all__ = ["UNLOCKED_ATTEMPTS", "confirmed", "read_by_statement", "still_current"]

log = logging.getLogger(__name__)

# Each read before the lock is wasted only if a locked campaign write (audience chunk, enrolment, edit,
# another confirmation) commits while it reads.
UNLOCKED_ATTEMPTS = 3


class _Read(Protocol):
    @property
    def campaign(self) -> dict[str, Any]: ...


C = TypeVar("C", bound=_Read)
P = ParamSpec("P")
R = TypeVar("R")


def read_by_statement(
    graph: Graph, fn: Callable[Concatenate[TimedSession, P], R], *args: P.args, **kwargs: P.kwargs
) -> R:
    """``fn`` on ``Graph.autocommit_reads``: each statement a transaction with its own deadline. One
    transaction would give the walk no snapshot either: Neo4j reads at read committed, so its
    statements see others' commits between them too."""
    with graph.autocommit_reads() as session:
        return fn(session, *args, **kwargs)


class _Raced(Exception):
    """The campaign was written between the preview's read and the lock: read again."""


def still_current(read: _Read | None, locked: dict[str, Any]) -> None:
    """Under the lock: raises (and ``confirmed`` reads again) unless ``read`` is what a locked walk would
    give. ``locked`` is the node as ``lock_campaign`` returned it, after its own increment; an unchanged
    counter and incarnation mean no write that could change the preview came between."""
    if read is None:
        return
    if not (
        locked["createdAt"] == read.campaign["createdAt"]
        and locked.get("campaignStateLock") == (read.campaign.get("campaignStateLock") or 0) + 1
    ):
        raise _Raced


def confirmed(
    graph: Graph,
    fn: Callable[[Tx, C | None], R],
    compute: Callable[..., C],
    args: dict[str, Any],
    *,
    action: str,
) -> R:
    """``fn(tx, preview)`` in a write transaction, ``preview`` being ``compute(**args)`` read by statement
    before it; ``fn`` locks the campaign and calls ``still_current`` first, and computes the preview
    itself, under the lock, when given None."""
    for _ in range(UNLOCKED_ATTEMPTS):
        try:
            return graph.write(fn, read_by_statement(graph, compute, **args))
        except _Raced:
            log.info("%s.preview_raced campaign_id=%s", action, args["campaign_id"])
    return graph.write(fn, None)
