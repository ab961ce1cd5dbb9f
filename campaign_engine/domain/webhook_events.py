"""Event webhooks: the event types an endpoint subscribes to, the event body, the retry rule.

An event is ``{id, type, occurredAt, data}`` where ``data`` names things by id only (campaignId,
dispatchId, profileId): never an address or a message's copy, so an endpoint learns what happened, not
what a recipient holds. ``id`` is the Standard Webhooks ``webhook-id``: drawn once when the event is
recorded and sent unchanged on every attempt, so a receiver deduplicates by it.

Retries follow the Standard Webhooks reference schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h,
10 h, 10 h), counted per endpoint: deliveries to one endpoint wait behind its oldest failing event, so
events reach it in order. After the schedule the endpoint keeps being retried every 10 h, and an
endpoint failing for ``DISABLE_AFTER_SECONDS`` (5 days) in a row is disabled with its reason.

No I/O.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = [
    "DISABLE_AFTER_SECONDS",
    "EVENT_TYPES",
    "RETRY_SCHEDULE_SECONDS",
    "WILDCARD",
    "Event",
    "EventType",
    "matches",
    "new_event_id",
    "retry_delay_after",
]

EventType = Literal[
    "dispatch.started",
    "dispatch.paused",
    "dispatch.resumed",
    "dispatch.completed",
    "dispatch.failed",
    "dispatch.late",
    "recipient.notified",
    "recipient.emailed",
    "recipient.email_rejected",
    "recipient.email_clicked",
    "recipient.bounced",
    "recipient.complained",
    "recipient.unsubscribed",
    "campaign.created",
    "campaign.updated",
    "campaign.status_changed",
    "campaign.deleted",
    "approval.requested",
    "approval.granted",
]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
WILDCARD = "*"

# Seconds to wait before attempt n+1 after n failures in a row (the first attempt is immediate).
RETRY_SCHEDULE_SECONDS: tuple[int, ...] = (5, 300, 1800, 7200, 18000, 36000, 36000)
DISABLE_AFTER_SECONDS = 5 * 24 * 3600


_SEQUENCE = itertools.count(1)  # this process's recording order, for events drawn in one instant


def new_event_id() -> str:
    """``evt_`` and 32 hex digits: unique, and stable across every attempt to deliver the event."""
    return "evt_" + uuid.uuid4().hex


def retry_delay_after(failures: int) -> int:
    """The wait after ``failures`` (>= 1) failed attempts in a row; the schedule's last step repeats."""
    return RETRY_SCHEDULE_SECONDS[min(max(failures, 1), len(RETRY_SCHEDULE_SECONDS)) - 1]


def matches(subscribed: Iterable[str], event_type: str) -> bool:
    """An endpoint subscribed to ``subscribed`` (types or ``*``) wants ``event_type``."""
    return any(s in (WILDCARD, event_type) for s in subscribed)


@dataclass(frozen=True)
class Event:
    """One event as recorded and sent; ``occurred_at`` is the one timestamp format (domain/types.py)."""

    id: str
    type: EventType
    occurred_at: str
    data: Mapping[str, Any]
    seq: int = 0
    """Recording order within this process: ties of ``occurred_at`` keep the order they were made in."""

    @classmethod
    def of(cls, event_type: EventType, occurred_at: str, **data: Any) -> Event:
        kept = {k: v for k, v in data.items() if v is not None}
        return cls(new_event_id(), event_type, occurred_at, kept, next(_SEQUENCE))

    def body(self) -> str:
        """The JSON body every attempt sends (and signs) unchanged."""
        return json.dumps(
            {"id": self.id, "type": self.type, "occurredAt": self.occurred_at, "data": dict(self.data)},
            separators=(",", ":"),
            sort_keys=True,
        )

    @property
    def order_key(self) -> str:
        """Delivery order to one endpoint: by time, then recording order, then id (keys sort as strings)."""
        return f"{self.occurred_at}|{self.seq:012d}|{self.id}"

    @property
    def recipient_key(self) -> str:
        """What per-recipient ordering is kept for: the profile, else the dispatch, else the campaign."""
        return str(self.data.get("profileId") or self.data.get("dispatchId") or self.data.get("campaignId"))
