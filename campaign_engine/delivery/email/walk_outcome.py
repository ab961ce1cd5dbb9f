"""What an email page job reports: its outcome, and the totals a walk of several pages adds up.

Kept apart from the walk so the job table (``jobs.py``) and the settle step read the same types without
importing the pipeline.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from campaign_engine.delivery.email.provider import SendResult

__all__ = ["EmailPageOutcome", "Outcome", "WalkTotals", "tally"]

log = logging.getLogger("campaign_engine.delivery.email.page_walk")  # the walk's lines, as before

Outcome = Literal[
    "next", "completed", "stopped", "failed", "stale", "lost_race", "waiting", "throttled", "paused"
]


@dataclass(frozen=True)
class EmailPageOutcome:
    outcome: Outcome
    claimed: int = 0
    emailed: int = 0
    throttled: int = 0
    rejected: int = 0
    uncertain: int = 0
    retry_in_seconds: int | None = None
    reason: str | None = None
    pages: int = 0
    """Pages this job walked (more than one when a run chained pages)."""


@dataclass
class WalkTotals:
    claimed: int = 0
    emailed: int = 0
    throttled: int = 0
    rejected: int = 0
    uncertain: int = 0
    pages: int = 0
    # Where the walk's wall time went: claim transactions, waiting for the provider (the pipeline's
    # stall), record + CAS transactions. Logged once per job as ``email.walk``.
    claim_s: float = 0.0
    wait_s: float = 0.0
    settle_s: float = 0.0

    def add(self, results: Sequence[SendResult]) -> None:
        self.pages += 1
        self.claimed += len(results)
        for r in results:
            if r.outcome == "accepted":
                self.emailed += 1
            else:
                setattr(self, r.outcome, getattr(self, r.outcome) + 1)

    def outcome(self, outcome: Outcome, **extra: Any) -> EmailPageOutcome:
        timings = {"claim_s": self.claim_s, "wait_s": self.wait_s, "settle_s": self.settle_s}
        log.info(
            "email.walk pages=%d emailed=%d claim_s=%.3f wait_s=%.3f settle_s=%.3f",
            self.pages,
            self.emailed,
            *timings.values(),
            extra={"pages": self.pages, **timings},
        )
        return EmailPageOutcome(
            outcome,
            claimed=self.claimed,
            emailed=self.emailed,
            throttled=self.throttled,
            rejected=self.rejected,
            uncertain=self.uncertain,
            pages=self.pages,
            **extra,
        )


def tally(results: Sequence[SendResult]) -> Counter[str]:
    return Counter(r.outcome for r in results)
