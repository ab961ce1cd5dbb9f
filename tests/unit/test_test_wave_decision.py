"""A test wave's decision says when its arms cannot be told apart (``domain/ab_variants.py:decision_of``):
no metric event in any arm, or an arm the send reached nobody in, is ``insufficient_evidence``; equal
best rates are a ``tie``; either way the first (tied) variant is sent, never a "winner" by accident."""

from __future__ import annotations

import pytest

from campaign_engine.domain.ab_variants import VariantRate, decision_of


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ([("A", 0, 40), ("B", 0, 41)], ("A", "insufficient_evidence")),  # nobody clicked
        ([("A", 0, 0), ("B", 1, 3)], ("A", "insufficient_evidence")),  # A reached nobody: 1/3 is no win
        ([("A", 2, 40), ("B", 4, 80), ("C", 1, 40)], ("A", "tie")),  # 5% and 5%
        ([("A", 1, 40), ("B", 4, 40), ("C", 4, 40)], ("B", "tie")),  # the first of the tied, not A
        ([("A", 3, 97), ("B", 9, 101)], ("B", "highest_rate")),
    ],
)
def test_the_decision_names_why_and_sends_the_first_when_arms_are_indistinguishable(
    rates: list[tuple[str, int, int]], expected: tuple[str, str]
) -> None:
    assert decision_of([VariantRate(vid, n, d) for vid, n, d in rates]) == expected
