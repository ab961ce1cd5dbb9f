"""The queue port: what the dispatch and delivery workers need from SQS or the durable local queue.

The shape follows SQS on purpose (at-least-once delivery, visibility timeout, receive count, delays
capped at 900 s) so that code tested against the local queue behaves the same on AWS. Bodies are JSON
text; message models validate them at the edge, the queue never looks inside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = [
    "DEFAULT_LANE",
    "MAX_DELAY_SECONDS",
    "Lane",
    "Queue",
    "QueueError",
    "QueueStats",
    "Received",
    "ReceivedMessage",
    "check_delay",
]

J = TypeVar("J")

MAX_DELAY_SECONDS = 900
"""SQS's ceiling for a per-message delay; longer gaps are scheduled in the graph by the sweeper."""


@dataclass(frozen=True)
class Lane:
    """Where a message waits its turn: a receive serves the lowest ``rank`` with visible messages
    first, and within a rank each ``group`` (a tenant) gets a share of receives in proportion to its
    ``weight`` (the local queue: start-time fair queueing; SQS: a queue per rank, fair queues by
    message group). docs/lanes.md."""

    rank: int = 1
    group: str = ""
    weight: float = 1.0


DEFAULT_LANE = Lane()
"""``normal`` of no tenant: what every message sent without a lane waits in."""


@dataclass(frozen=True)
class ReceivedMessage:
    message_id: str
    """The adapter's id (SQS MessageId, local row id): the Lambda ``itemIdentifier`` on partial failure."""
    receipt: str
    """Handle for ``delete`` and ``change_visibility`` of this particular receive."""
    body: str
    receive_count: int
    """1 on first delivery; grows with every redelivery."""


@dataclass(frozen=True)
class Received(Generic[J]):
    """A received message with its body parsed once (by the job table): handlers read ``job`` and
    are settled by ``message``."""

    message: ReceivedMessage
    job: J


@dataclass(frozen=True)
class QueueStats:
    """A queue's depth for the metrics (read at scrape time), in SQS's terms."""

    visible: int
    in_flight: int
    """Received and not yet deleted, or waiting out a ``change_visibility`` back-off."""
    delayed: int
    oldest_age_seconds: float | None
    """Seconds since the oldest message was sent; None where the backend cannot say cheaply (SQS)."""


class QueueError(Exception):
    """The queue could not do what was asked; adapters raise it ``from`` the vendor error."""


class Queue(Protocol):
    def send_batch(self, bodies: Sequence[str], *, delay_seconds: int = 0, lane: Lane | None = None) -> None:
        """Send every body or raise ``QueueError`` (some may have been sent: receivers deduplicate).

        ``delay_seconds`` outside ``0..MAX_DELAY_SECONDS`` raises ``ValueError`` before any I/O.
        ``lane``: where they wait their turn (None: ``DEFAULT_LANE``).
        """
        ...

    def receive(self, *, max_messages: int = 10, wait_seconds: float = 0.0) -> list[ReceivedMessage]: ...

    def delete(self, receipt: str) -> None: ...

    def delete_batch(self, receipts: Sequence[str]) -> None:
        """Delete many settled messages in as few round trips as the backend allows."""
        ...

    def change_visibility(self, receipt: str, *, timeout_seconds: int) -> None: ...


def check_delay(delay_seconds: int) -> None:
    """Shared argument check so both adapters refuse the same delays."""
    if isinstance(delay_seconds, bool) or not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
        raise ValueError(f"delay_seconds must be 0..{MAX_DELAY_SECONDS}, got {delay_seconds!r}")
