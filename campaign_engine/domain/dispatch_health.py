"""The health guard's rule: when a sending Dispatch's own feedback says the list or
the copy is bad, it pauses before its next page.

Pure, so the page walks (which pause), the resume (which restarts the window) and the reads (which show
why) apply one rule. The inputs are counters on the Dispatch node, kept by the transactions that learn
the facts (the email page settle: ``emailed`` / ``rejected``; the feedback write: ``hardBounces`` /
``complaints``; the notify outcome write: ``acknowledged`` / ``rejected``), so a check costs no query.

Rates, each over the Dispatch's own window (everything since it started, or since its last resume):

- ``hardBounce``: hard bounces / accepted emails, once ``min_sample`` emails were accepted;
- ``complaint``: spam complaints / accepted emails, likewise;
- ``rejection``: provider (email) or receiver (notify) refusals / answered attempts (accepted +
  refused), once ``min_sample`` attempts were answered. Over attempts, not over accepted ones, so a
  provider that refuses everything still trips the guard (it would never reach a sample of accepted).

A resume restarts the window: it stores the counters of that moment as ``guardBase*`` and the guard
compares only what happened since, so an admin's decision to go on is not undone by the very numbers
they judged. Feedback arriving after the resume about an email accepted before it belongs to the old
window: the feedback write adds it to the base as well (``cypher/feedback/feedback_dispatch_counts.cypher``).
No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from campaign_engine.domain.reasons import GuardRate

__all__ = ["Breach", "GuardLimits", "GuardRate", "breach_of", "window_counts"]


_LABEL: dict[GuardRate, str] = {
    "hardBounce": "hard_bounce_rate",
    "complaint": "complaint_rate",
    "rejection": "rejection_rate",
}

# Counter -> the base the last resume stored for it (absent = 0: the window is the whole dispatch).
_BASE = {
    "emailed": "guardBaseEmailed",
    "rejected": "guardBaseRejected",
    "hardBounces": "guardBaseHardBounces",
    "complaints": "guardBaseComplaints",
    "acknowledged": "guardBaseAcknowledged",
}


@dataclass(frozen=True)
class GuardLimits:
    """``CAMPAIGN_GUARD_*`` with a tenant's overrides applied; a rate above its limit pauses."""

    min_sample: int = 100
    max_hard_bounce_rate: float = 0.02
    max_complaint_rate: float = 0.001
    max_rejection_rate: float = 0.05

    def limit(self, rate: GuardRate) -> float:
        return {
            "hardBounce": self.max_hard_bounce_rate,
            "complaint": self.max_complaint_rate,
            "rejection": self.max_rejection_rate,
        }[rate]


@dataclass(frozen=True)
class Breach:
    """The rate that crossed its limit: what ``pauseReason`` stores and the console shows."""

    rate: GuardRate
    value: float
    limit: float
    sample: int
    """The accepted emails (or answered attempts, for ``rejection``) the rate is over."""

    @property
    def message(self) -> str:
        """Readable, e.g. ``hard_bounce_rate 0.031 > 0.02 (over 200)``."""
        return f"{_LABEL[self.rate]} {self.value:.4g} > {self.limit:.4g} (over {self.sample})"

    def wire(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "value": self.value,
            "limit": self.limit,
            "sample": self.sample,
            "message": self.message,
        }


def window_counts(dispatch: Mapping[str, Any]) -> dict[str, int]:
    """The Dispatch's counters since its window began (its start, or its last resume)."""
    return {name: int(dispatch.get(name) or 0) - int(dispatch.get(base) or 0) for name, base in _BASE.items()}


def breach_of(dispatch: Mapping[str, Any], limits: GuardLimits) -> Breach | None:
    """The first rate of ``dispatch`` (node properties) above its limit, or None. Email: hard bounce,
    complaint, then rejection; notify: rejection only (receivers send no bounces)."""
    counts = window_counts(dispatch)
    rates: list[tuple[GuardRate, int, int]] = []
    if dispatch.get("channel") == "email":
        accepted = counts["emailed"]
        rates.append(("hardBounce", counts["hardBounces"], accepted))
        rates.append(("complaint", counts["complaints"], accepted))
        rates.append(("rejection", counts["rejected"], accepted + counts["rejected"]))
    else:
        rates.append(("rejection", counts["rejected"], counts["acknowledged"] + counts["rejected"]))
    for rate, bad, sample in rates:
        if sample < limits.min_sample or sample <= 0:
            continue
        value = bad / sample
        if value > limits.limit(rate):
            return Breach(rate=rate, value=round(value, 6), limit=limits.limit(rate), sample=sample)
    return None
