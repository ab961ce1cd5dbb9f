"""A send's first bounce or complaint, counted once wherever it is learnt.

Feedback usually finds its send by provider message id (``feedback/store.py``). A webhook may outrun the
record of the send, though: the SMTP catcher holds wave 1 before the walk's record transaction writes
the message ids, and a bounce posted then found no send, so the address was suppressed but the
Dispatch's ``hardBounces`` never counted it and the health guard never paused. Such feedback is kept
(``PendingFeedback``, one node per message id form) and the record of the send counts it
(``link_pending``). Both transactions lock the recipient's profile before looking (the feedback by its
address, the record by its claim), so exactly one of them sees the other: counted once.

Here, in ``graph/``, because the feedback store and the email walk both call it and never import each
other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from campaign_engine.domain.webhook_events import Event, EventType
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_events

__all__ = ["count_marks", "keep_pending", "link_pending"]


def count_marks(tx: Tx, graph: Graph | None, rows: Iterable[Any], *, now: str) -> None:
    """The events (ids only) and the health guard's Dispatch counters of sends marked bounced or
    complained about for the first time (rows of feedback_link or email_record_feedback)."""
    counted: list[dict[str, Any]] = []
    for row in rows:
        ids = {k: row[k] for k in ("campaignId", "dispatchId", "profileId")}
        kinds: list[EventType] = ["recipient.bounced"] if row["bounce"] else []
        kinds += ["recipient.complained"] if row["complaint"] else []
        if graph is not None:  # None: no event-webhook endpoints to hear of it
            record_events(tx, graph, row["tenantId"], [Event.of(k, now, **ids) for k in kinds])
        if row["dispatchId"] is not None:
            counted.append({k: row[k] for k in ("dispatchId", "emailedAt", "bounce", "complaint")})
    if counted:  # the health guard's counters on each send's Dispatch, in this transaction
        tx.run(statement("feedback_dispatch_counts"), rows=counted).consume()


def keep_pending(
    tx: Tx, *, key: str, message_ids: Sequence[str], bounced: bool, complained: bool, now: str
) -> int:
    """Keep feedback none of whose ``message_ids`` names a recorded send (after the profile locks);
    how many nodes were kept (0 when a send was found)."""
    if not message_ids or not (bounced or complained):
        return 0
    found = tx.run(statement("feedback_pending"), key=key, messageIds=list(message_ids), bounced=bounced,
                   complained=complained, now=now).single()  # fmt: skip
    return 0 if found is None else int(found["kept"])


def link_pending(tx: Tx, graph: Graph | None, message_ids: Sequence[str], *, now: str) -> None:
    """In the record of sends, after their message ids were written under the profile locks: count the
    feedback that arrived before them. One count-store read when nothing is pending."""
    if message_ids:
        rows = list(tx.run(statement("email_record_feedback"), messageIds=list(message_ids), now=now))
        count_marks(tx, graph, rows, now=now)
