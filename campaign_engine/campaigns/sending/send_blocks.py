"""Why a campaign cannot be dispatched now, before any recipient is read, and how the refusal reads.

One place for the campaign-level blocks that ``previewDispatch``, ``dispatch`` and the scheduler's
firing all apply: the campaign's own state (``domain/dispatch.py:send_blocked``) and a channel this
deployment cannot deliver.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.dispatch import DeliveryChannel, send_blocked
from campaign_engine.domain.reasons import BlockedReason

__all__ = ["ALL_CHANNELS", "blocked_reason", "undeliverable", "why_blocked"]


def blocked_reason(campaign: dict[str, Any], *, now: str) -> BlockedReason | None:
    """Why a campaign cannot be sent right now, before looking at recipients (issue order)."""
    return send_blocked(campaign, channels=["notify", "email"], missing="notify_disabled", now=now)


ALL_CHANNELS: frozenset[DeliveryChannel] = frozenset({"notify", "email"})

# A channel of the campaign this deployment cannot deliver blocks the whole send: its Dispatch
# could only fail in the worker. The channels it can deliver come in DispatchSettings, from its Settings.
_HINTS = {
    "email_not_configured": "this deployment has no email provider; set CAMPAIGN_EMAIL_PROVIDER",
    "missing_translation": "too many recipients read a language this campaign has no translation for; add "
    "it, or send with acceptFallback: true to give them the base content",
}


_NOT_CONFIGURED: dict[DeliveryChannel, BlockedReason] = {
    "notify": "notify_not_configured",
    "email": "email_not_configured",
}


def undeliverable(campaign: dict[str, Any], deliverable: frozenset[DeliveryChannel]) -> BlockedReason | None:
    channels = campaign.get("channels") or []
    missing = [ch for ch in _NOT_CONFIGURED if ch in channels and ch not in deliverable]
    return _NOT_CONFIGURED[missing[0]] if missing else None


def why_blocked(reason: BlockedReason) -> str:
    hint = _HINTS.get(reason)
    return f"campaign cannot be dispatched: {reason}" + (f" ({hint})" if hint else "")
