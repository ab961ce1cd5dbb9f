"""A receiver's answer read as a delivery verdict, and a batch's verdicts as the metric outcomes.

Apart from the worker so the one rule for what an answer means (``domain/acknowledgement.py`` for the
body, here for everything the transport reports instead: skipped, blocked, unreachable, timed out)
reads on its own. Log lines keep the worker's logger name, which operators' filters already use.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from campaign_engine.delivery.notify.sender import Answered, Blocked, PostResult, Skipped
from campaign_engine.domain.acknowledgement import classify_acknowledgement
from campaign_engine.domain.dispatch import DeliveryJob

__all__ = ["Verdict", "delivery_ids", "metric_outcomes", "verdict_of"]

log = logging.getLogger("campaign_engine.delivery.notify.worker")

Verdict = Literal[
    "positive", "negative", "uncertain", "blocked", "suppressed", "capped", "duplicate", "invalid"
]

_METRIC_OUTCOME = {"negative": "rejected", "blocked": "blocked", "suppressed": "suppressed",
                   "capped": "capped", "uncertain": "uncertain"}  # fmt: skip


def metric_outcomes(
    jobs: Sequence[DeliveryJob], verdicts: Mapping[str, Verdict], acknowledged: int
) -> Counter[str]:
    """The batch's deliveries by metric outcome, counted as the Dispatch counts them (self-tests aside)."""
    outcomes = Counter(
        _METRIC_OUTCOME[verdicts[j.delivery_id]]
        for j in jobs
        if j.campaign_test_id is None and verdicts[j.delivery_id] in _METRIC_OUTCOME
    )
    outcomes["acknowledged"] = acknowledged
    return outcomes


def delivery_ids(job: DeliveryJob) -> dict[str, str | None]:
    """The ids every line about one delivery carries. Passed as fields, not bound in contextvars: a
    batch's deliveries are handled together, and binding per recipient would cost on the hot path."""
    return {"campaignId": job.campaign_id, "dispatchId": job.dispatch_id, "deliveryId": job.delivery_id}


def verdict_of(job: DeliveryJob, answer: PostResult) -> Verdict:
    if isinstance(answer, Skipped):
        log.info("notify.not_posted", extra={**delivery_ids(job), "retry": answer.retry})
        return "uncertain" if answer.retry else "suppressed"
    if isinstance(answer, Blocked):
        log.warning("notify.blocked", extra={**delivery_ids(job), "reason": answer.reason})
        return "blocked"
    if not isinstance(answer, Answered):  # Unreachable, Unreadable (e.g. over the cap), TimedOut
        log.info("notify.uncertain", extra={**delivery_ids(job), "error": str(answer)})
        return "uncertain"
    verdict = classify_acknowledgement(answer.status_code, answer.body, answer.content_type)
    # Positives are recorded as notifiedAt (and counted on the Dispatch): logging each one too costs
    # a formatted line per recipient on the hot path. Everything else stays visible at INFO.
    level = logging.DEBUG if verdict == "positive" else logging.INFO
    if log.isEnabledFor(level):
        fields = {**delivery_ids(job), "http_status": answer.status_code, "verdict": verdict}
        log.log(level, "notify.answer", extra=fields)
    return verdict
