"""The live segment's rule model: one kind per node, the limits, a condition to seek on, and
the age conditions the age policy would leave nobody to match."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from campaign_engine.domain.segment import MAX_DEPTH, MAX_NODES, SegmentRule, minor_only

RULE: TypeAdapter[Any] = TypeAdapter(SegmentRule)
UNSEEN = {"engaged": {"campaignId": "launch", "event": "shown"}, "not": True}


def test_a_follow_up_rule_reads_back_as_written() -> None:
    rule = {"all": [{"memberOf": "launch"}, UNSEEN]}
    assert RULE.validate_python(rule).wire() == rule


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ({}, "exactly one of"),
        ({"tag": "a", "locale": "en"}, "exactly one of"),
        ({"not": {"tag": "a"}, "tag": "b"}, "stands alone"),
        (UNSEEN, "needs a condition outside any 'not'"),
        ({"any": [{"tag": "a"}, UNSEEN]}, "needs a condition outside any 'not'"),
        ({"engaged": {"campaignId": "launch", "event": "opened"}}, "Input should be"),
        ({"all": [{"tag": f"t{i}"} for i in range(MAX_NODES)]}, f"at most {MAX_NODES} rules"),
    ],
)
def test_a_malformed_rule_is_refused_with_its_reason(rule: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        RULE.validate_python(rule)


def test_depth_is_limited() -> None:
    rule: dict[str, Any] = {"tag": "deep"}
    for _ in range(MAX_DEPTH - 1):
        rule = {"all": [rule]}
    RULE.validate_python(rule)
    with pytest.raises(ValidationError, match=f"at most {MAX_DEPTH} levels"):
        RULE.validate_python({"all": [rule]})


def test_only_an_age_below_adulthood_outside_a_not_is_minor_only() -> None:
    rule = RULE.validate_python(
        {"all": [{"tag": "a"}, {"ageBelow": 16}, {"ageBelow": 30}, {"not": {"ageBelow": 12}},
                 {"ageBelow": 10, "not": True}]}
    )  # fmt: skip
    assert [path for path, _ in minor_only(rule, adult_age=18)] == [("all", 1, "ageBelow")]
