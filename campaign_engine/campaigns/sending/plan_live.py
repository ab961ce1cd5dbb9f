"""A sending Dispatch's live estimate: its finish re-estimated from its progress, and the forecast's error.

The confirmation keeps the review's forecast on each Dispatch (``plan.py``: ``planRecipients``,
``planFinishesAt``, ``planRate``, ``planRateSource``). ``getDispatch`` then answers ``plan``: the rate it has
sent at so far (recipients answered over the seconds since it started, up to its last progress), the
finish that rate gives for the recipients left, and ``error``, how far the forecast's duration was from
that estimate (``+0.10``: the forecast said 10% longer). It is computed from the record alone, at its
own last progress instant, so reading it costs nothing and a finished send shows its actual finish.
A Dispatch confirmed before forecasts were kept, or scheduled (``scheduleDispatch`` keeps none), has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.types import format_ts, parse_ts

__all__ = ["LivePlan", "live_plan"]


class LivePlan(CamelModel):
    recipients: int
    """The channel's recipients the review counted."""
    forecast_finishes_at: str
    forecast_rate: float
    forecast_rate_source: Literal["measured", "configured"]
    sent: int
    """Recipients answered so far (delivered, rejected, suppressed, uncertain, capped)."""
    rate: float | None
    """Recipients per second so far; None before the first answer."""
    finishes_at: str
    """The finish re-estimated from the progress so far (the actual one once everyone was answered)."""
    error: float | None
    """(forecast duration / estimated duration) - 1; None before the first answer."""


def live_plan(node: Mapping[str, Any]) -> LivePlan | None:
    if node.get("planFinishesAt") is None or node.get("startedAt") is None:
        return None
    recipients = int(node["planRecipients"])
    sent = sum(int(node.get(k) or 0) for k in
               ("acknowledged", "rejected", "suppressed", "emailed", "uncertain", "capped"))  # fmt: skip
    started = parse_ts(node["startedAt"])
    marks = [node.get(k) for k in ("lastOutcomeAt", "lastProgressAt", "finishedAt")]
    at = max(parse_ts(m) for m in marks if m) if any(marks) else started
    if sent >= recipients and node.get("lastOutcomeAt"):  # the forecast's finish is the last one sent
        at = parse_ts(node["lastOutcomeAt"])
    forecast = parse_ts(node["planFinishesAt"])
    elapsed = (at - started).total_seconds()
    if sent == 0 or elapsed <= 0:
        return _plan(node, recipients, sent, None, node["planFinishesAt"], None)
    rate = sent / elapsed
    finish = at + timedelta(seconds=max(0, recipients - sent) / rate)
    estimated = (finish - started).total_seconds()
    error = (forecast - started).total_seconds() / estimated - 1 if estimated > 0 else None
    return _plan(node, recipients, sent, rate, format_ts(finish), error)


def _plan(
    node: Mapping[str, Any], recipients: int, sent: int, rate: float | None, finish: str, error: float | None
) -> LivePlan:
    return LivePlan(
        recipients=recipients, forecast_finishes_at=node["planFinishesAt"], forecast_rate=node["planRate"],
        forecast_rate_source=node["planRateSource"], sent=sent, rate=None if rate is None else round(rate, 3),
        finishes_at=finish, error=None if error is None else round(error, 3),
    )  # fmt: skip
