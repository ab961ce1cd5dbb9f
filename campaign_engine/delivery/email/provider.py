"""The email provider port: hand a batch of rendered messages to a provider, get one outcome per message.

The email worker claims each recipient durably *before* calling ``send_batch`` (docs/architecture.md, "Email
is at most one attempt"), then acts on each outcome:

- ``accepted``: the provider took responsibility for the message; record ``emailedAt``.
- ``throttled``: the provider proved the message was NOT accepted because of back-pressure (HTTP 429, a
  per-message rate-limit code, an SMTP 4xx before DATA, or it was never sent at all because the
  connection could not be made or the batch stopped early). Releasing the claim and rescheduling after
  ``retry_after_seconds`` (or a back-off) cannot cause a duplicate.
- ``rejected``: the provider definitely refused the message before accepting it (invalid, inactive or
  suppressed recipient; account or sender not allowed to send). The worker keeps the claim with the
  reason: sending the same message again would not help, and only ``throttled`` releases a claim.
- ``uncertain``: the message may or may not have gone out (timeout or reset after the request was sent,
  5xx, an answer we cannot read). The claim stays and the recipient is reported, never retried blindly.

Classification is deliberately conservative: when in doubt an adapter answers ``uncertain``, because
a kept claim costs one missed email while a wrongly released claim can send an announcement twice.

``send_batch`` returns exactly one result per message, in order, and does not raise: whatever goes
wrong with one recipient's message (an address the relay cannot take, an encoding error, a bug) is that
message's outcome, and the rest of the batch proceeds. The worker never infers "nothing went out" from an
exception: it calls the port through ``send_each``, which turns an escaped exception, or a result missing
for a message, into ``uncertain`` (claim kept) for every message without a result, so no failure can
release the claim of a message the provider may already have accepted (a relay's 250 followed
by a ``UnicodeEncodeError`` used to release the whole page and send it again every back-off).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol

from campaign_engine.domain.errors import ServiceUnavailable

log = logging.getLogger(__name__)

__all__ = [
    "BodyTemplate",
    "Cut",
    "EmailProvider",
    "Outcome",
    "OutgoingEmail",
    "ProviderConfigError",
    "ProviderUnavailable",
    "SendResult",
    "send_each",
]

Outcome = Literal["accepted", "throttled", "rejected", "uncertain"]


class ProviderConfigError(ServiceUnavailable):
    """The provider cannot be used as configured (bad token, transactional stream, TLS not offered).

    Retrying will not help until an operator changes the configuration; nothing was sent.
    """


class ProviderUnavailable(ServiceUnavailable):
    """The provider could not be reached to check its configuration; nothing was sent."""


@dataclass(frozen=True, eq=False)
class Cut:
    """One part of a template cut at its slots: ``pieces[0]``, then for each ``k`` the fill of slot
    ``order[k]`` and ``pieces[k + 1]``. A slot may occur any number of times, in any order."""

    pieces: tuple[str, ...]
    order: tuple[int, ...]

    @cached_property
    def _frame(self) -> tuple[list[str], list[tuple[int, int]]]:
        """The pieces with a gap after each but the last, and (gap index, slot) per gap: a message is a
        copy of the list with its fills in the gaps, joined in one C call (the budget is
        microseconds per message; ``str.format`` re-parses the whole body every call)."""
        frame = [self.pieces[0]]
        gaps = []
        for slot, piece in zip(self.order, self.pieces[1:], strict=True):
            gaps.append((len(frame), slot))
            frame += ["", piece]
        return frame, gaps

    def join(self, fills: Sequence[str]) -> str:
        frame, gaps = self._frame
        parts = frame.copy()
        for gap, slot in gaps:
            parts[gap] = fills[slot]
        return "".join(parts)


@dataclass(frozen=True, eq=False)
class BodyTemplate:
    """A page's rendering with ``slots`` where each recipient's values go (``compose.py``: the unsubscribe
    link, the web-view link, ...). Shared by the messages of a page so an adapter can assemble them once
    per page; compared by identity. Slot strings must be distinct and none inside another,
    so every occurrence names one slot."""

    text: str
    html: str
    slots: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.slots or len(set(self.slots)) != len(self.slots):
            raise ValueError("a body template needs distinct slots")
        if any(a != b and a in b for a in self.slots for b in self.slots):
            raise ValueError("no slot may contain another")

    @cached_property
    def text_cut(self) -> Cut:
        return _cut(self.text, self.slots)

    @cached_property
    def html_cut(self) -> Cut:
        return _cut(self.html, self.slots)


def _cut(part: str, slots: Sequence[str]) -> Cut:
    index = {slot: i for i, slot in enumerate(slots)}
    pieces, order, start = [], [], 0
    for match in re.finditer("|".join(re.escape(slot) for slot in slots), part):
        pieces.append(part[start : match.start()])
        order.append(index[match.group()])
        start = match.end()
    pieces.append(part[start:])
    return Cut(tuple(pieces), tuple(order))


@dataclass(frozen=True)
class OutgoingEmail:
    key: str
    """The caller's id for this message (e.g. the profileId); outcomes come back keyed by it."""
    to: str
    subject: str
    html: str
    text: str
    headers: Mapping[str, str]
    """Extra headers such as List-Unsubscribe and List-Unsubscribe-Post."""
    tag: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    sender: str | None = None
    """The tenant's From (its record's ``emailFrom``); None = the provider's own (``EMAIL_FROM``)."""
    body_template: BodyTemplate | None = None
    fills: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    """With ``body_template``: (text fills, html fills), one per slot in its order, so ``text``/``html``
    are its parts with each slot replaced by its fill. An adapter may use either form; they are the
    same message."""


@dataclass(frozen=True)
class SendResult:
    key: str
    outcome: Outcome
    reason: str | None = None
    """Provider error code or short message, safe to store: never contains an address."""
    provider_message_id: str | None = None
    retry_after_seconds: float | None = None
    """Set for ``throttled`` when the provider said how long to wait."""


class EmailProvider(Protocol):
    name: str
    """Who applies the back-pressure: the key of the provider-wide cooldown every worker respects."""

    def verify(self) -> None:
        """Raise ProviderConfigError when the provider must not be used (or ProviderUnavailable)."""
        ...

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        """One result per message, same order. See the module docstring for the outcome contract."""
        ...

    def close(self) -> None: ...


def send_each(provider: EmailProvider, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
    """One result per message, in order, whatever the adapter does: the port contract made structural.

    A result whose key matches its message is kept; any other message (the adapter raised, returned too
    few results, or out of order) is ``uncertain``: it may have gone out, so its claim stays.
    """
    if not messages:
        return []
    reason = "provider_error:no_result"
    try:
        results = list(provider.send_batch(messages))
    except Exception as exc:  # the adapter broke its contract: anything may have been sent
        log.error("email.provider_raised error=%s count=%d", type(exc).__name__, len(messages))
        results, reason = [], f"provider_error:{type(exc).__name__}"
    reported = {r.key: r for r in results}
    if len(reported) != len(results):
        reported = {}  # duplicate keys: no result can be trusted to belong to its message
    missing = [m for m in messages if m.key not in reported]
    if missing:
        log.error("email.provider_results_missing count=%d", len(missing))
    return [reported.get(m.key) or SendResult(m.key, "uncertain", reason=reason) for m in messages]
