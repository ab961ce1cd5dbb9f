"""The ``WebhookSender`` port: what the notification worker needs from the network, in our own words.

The worker hands over a batch of ``Outgoing`` POSTs and gets one ``PostResult`` per item, in order.
Results are values, never exceptions, and never vendor types: the adapter (``poster.WebhookPoster``)
maps every transport failure (httpx errors, ``egress.EgressBlocked``) to one of these classes once, so
the worker's verdict table (docs/architecture.md "Acknowledgement grammar") reads only the cases that matter:

- ``Answered``: the receiver answered; the acknowledgement grammar decides what the answer means.
- ``Blocked``: the egress policy refused the destination; final, retrying cannot change it.
- ``Unreachable``: no request reached the receiver (no address, refused, TLS failed, not sendable).
- ``Unreadable``: the exchange broke after the request went out (answer cut off, malformed, or over
  the 64 KiB body or 16 KiB head cap): the receiver may have stored it, so a retry may be a duplicate
  it must absorb.
- ``TimedOut``: no complete answer in time (connect or answer); as uncertain as ``Unreadable``.
- ``Skipped``: not posted because the pause gate said no (``retry`` False) or could not tell (True).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Answered",
    "Blocked",
    "Outgoing",
    "PostResult",
    "Skipped",
    "TimedOut",
    "Unreachable",
    "Unreadable",
    "WebhookSender",
]


@dataclass(frozen=True)
class Outgoing:
    """One webhook POST: ``body`` is sent unchanged and signed with ``msg_id`` as ``webhook-id``.

    ``campaign`` is the (id, createdAt) incarnation the sender's pause gate checks right before
    sending; None (self-tests, benchmarks) sends without asking. ``secrets`` are the receiver's own
    (one signature each); empty signs with the sender's default secret. ``learncard``: LearnCard's
    receiver format, sent with the engine's DID-auth bearer instead of a signature (``lcn.py``)."""

    url: str
    body: bytes
    msg_id: str
    campaign: tuple[str, str] | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    learncard: bool = False


@dataclass(frozen=True)
class Answered:
    status_code: int
    body: bytes
    content_type: str | None


@dataclass(frozen=True)
class Blocked:
    reason: str
    """The policy's reason (never the URL or host: webhook URLs may carry secrets)."""


@dataclass(frozen=True)
class Unreachable:
    reason: str


@dataclass(frozen=True)
class Unreadable:
    reason: str


@dataclass(frozen=True)
class TimedOut:
    pass


@dataclass(frozen=True)
class Skipped:
    retry: bool


PostResult = Answered | Blocked | Unreachable | Unreadable | TimedOut | Skipped


class WebhookSender(Protocol):
    def post_all(self, items: Sequence[Outgoing]) -> list[PostResult]:
        """POST every item (concurrently where the adapter can); one result per item, in order.

        Callable from any thread. Raises only for bugs, never for what a receiver or network did."""
        ...

    def close(self) -> None:
        """Release connections and threads; idempotent."""
        ...
