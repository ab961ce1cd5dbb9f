"""Reason codes the API answers, as typed Literals in one home.

A code here reaches an admin, who reads it in the console's words (``admin/src/messages.ts``,
``REASONS``): a test wave's ``decision.reason``, and the codes our own refusals carry in
``data.issues[].code``.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["DecisionReason", "RefusalCode"]

DecisionReason = Literal["highest_rate", "tie", "insufficient_evidence", "chosen"]
"""Why a test wave's winner won (``domain/ab_variants.py:decision_of``): the highest rate; a tie at the
highest rate (the first tied variant is sent); no evidence (no metric event in any arm, or an arm the
send reached nobody in: the first variant is sent); or an admin's choice (``chooseVariant``)."""

RefusalCode = Literal["too_few_per_variant"]
"""Codes our own refusals put in ``data.issues[].code`` (pydantic's error types aside):
``too_few_per_variant``, an experiment whose test wave gives a variant too few recipients."""
