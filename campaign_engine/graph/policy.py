"""The age policy as Cypher predicates (the twin of ``domain/age_policy.py``; tests hold them equal).

Interpolate these into queries where ``p`` is the Profile and ``c`` the Campaign, and pass
``adultDob`` (from ``adult_dob_cutoff``) and ``dobPattern`` (``DOB_PATTERN``) as parameters.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from campaign_engine.domain.age_policy import DOB_PATTERN, adult_dob_cutoff

__all__ = ["CAMPAIGN_AGE_OK", "EMAIL_AGE_OK", "policy_params"]

# Both are wrapped in coalesce so they are never null (a missing dob would otherwise make the whole
# predicate null, which is wrong under NOT).
CAMPAIGN_AGE_OK = (
    "coalesce(NOT coalesce(c.excludeMinors, true) OR "
    "CASE WHEN coalesce(p.dob =~ $dobPattern, false) THEN p.dob <= $adultDob "
    "ELSE NOT coalesce(p.isManaged, false) END, false)"
)

EMAIL_AGE_OK = (
    "coalesce(p.dob =~ $dobPattern AND p.dob <= $adultDob AND "
    "(NOT coalesce(p.isManaged, false) OR coalesce(p.isServiceProfile, false)), false)"
)


def policy_params(today: date, adult_age: int) -> dict[str, Any]:
    return {"adultDob": adult_dob_cutoff(today, adult_age), "dobPattern": DOB_PATTERN}
