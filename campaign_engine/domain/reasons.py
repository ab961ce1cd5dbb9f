"""Every reason code the API answers, as typed Literals in one home.

A code here reaches an admin: a preview's ``blockedReason`` (and the refusal of a dispatch or a schedule
that names it), a Dispatch's ``pauseReason``, a test wave's ``decision.reason``, and the codes our own
refusals carry in ``data.issues[].code``. The console words each one (``admin/src/messages.ts``,
``REASONS``), and ``tests/unit/test_console_messages.py`` enumerates ``REASON_CODES`` from these types,
so a code added here without words fails there. The code that produces a reason is typed by these
Literals, so mypy refuses a code spelled anywhere but here.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "REASON_CODES",
    "BlockedReason",
    "DecisionReason",
    "GuardRate",
    "PauseCode",
    "RefusalCode",
]

BlockedReason = Literal[
    "not_live",
    "not_started",
    "ended",
    "notify_disabled",
    "email_disabled",
    "channel_removed",
    "no_recipients",
    "notify_not_configured",
    "email_not_configured",
    "missing_translation",
]
"""Why a send cannot go now (``domain/dispatch.py:send_blocked``, ``campaigns/sending/send_blocks.py``,
the preview's recipient counts): the preview's ``blockedReason``, and the refusal of ``dispatch``,
``scheduleDispatch``, ``approveDispatch``, ``resumeDispatch`` and a firing schedule; per channel
(``notify_disabled``, ``email_disabled``) the campaign rule of ``explainRecipient``."""

GuardRate = Literal["hardBounce", "complaint", "rejection"]
"""A rate the health guard judges (``domain/dispatch_health.py``): ``pauseReason.rate``."""

PauseCode = Literal[GuardRate, "approval_exceeded"]
"""Why a Dispatch paused: a health-guard rate, or a live segment grown past its approval."""

DecisionReason = Literal["highest_rate", "tie", "insufficient_evidence", "chosen"]
"""Why a test wave's winner won (``domain/ab_variants.py:decision_of``): the highest rate; a tie at the
highest rate (the first tied variant is sent); no evidence (no metric event in any arm, or an arm the
send reached nobody in: the first variant is sent); or an admin's choice (``chooseVariant``)."""

RefusalCode = Literal["too_few_per_variant"]
"""Codes our own refusals put in ``data.issues[].code`` (pydantic's error types aside):
``too_few_per_variant``, an experiment whose test wave gives a variant too few recipients."""

REASON_CODES: frozenset[str] = frozenset(
    code for kind in (BlockedReason, PauseCode, DecisionReason, RefusalCode) for code in get_args(kind)
)
"""Every code above: what the console's table must word."""
