"""How far a sending Dispatch is behind its deadline, by its live estimate (``plan_live.py``: the rate so
far and the recipients left; never before now while some are left). ``getDispatch`` answers it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from campaign_engine.campaigns.sending.plan_live import live_plan
from campaign_engine.domain.types import parse_ts

__all__ = ["behind"]


def behind(node: Mapping[str, Any], *, now: datetime | None = None) -> tuple[datetime, float] | None:
    """(the estimated finish, seconds past the deadline) of a sending Dispatch with one; None without."""
    live = live_plan(node)
    if live is None or not node.get("deliverByAt"):
        return None
    finish = parse_ts(live.finishes_at)
    if now is not None and live.sent < live.recipients:
        finish = max(finish, now)  # someone is still waiting: it cannot finish before now
    return finish, (finish - parse_ts(str(node["deliverByAt"]))).total_seconds()
