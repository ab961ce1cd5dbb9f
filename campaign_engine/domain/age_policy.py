"""The age policy, in one place, for every read and write path.

Age is evaluated at the moment of use in UTC from the stored ``dob`` (``YYYY-MM-DD``); it is unknown
when ``dob`` is absent or malformed. Rather than computing ages row by row, callers compute one cutoff
date per evaluation: a profile is an adult exactly when ``dob <= adult_dob_cutoff(today)``. ISO dates
compare correctly as strings, so the graph predicates in ``graph/rules/policy.py`` stay simple and cheap.

- Campaign policy (inApp, notify): with ``excludeMinors`` exclude known minors and managed profiles of
  unknown age; without it, no age filter.
- Email adult policy: always a known adult age, and never a managed profile unless it is a service
  profile, whatever ``excludeMinors`` says.
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["DOB_PATTERN", "adult_dob_cutoff", "campaign_allows", "email_allows", "known_dob"]

# Month 01-12 and day 01-31; day-of-month overflow (2001-02-30) is rejected at upsert, not here.
DOB_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"
_DOB = re.compile(DOB_PATTERN)


def adult_dob_cutoff(today: date, adult_age: int) -> str:
    """The latest birth date that is adult on ``today``; someone born on 29 February of a leap year
    comes of age on 1 March in common years."""
    try:
        cutoff = today.replace(year=today.year - adult_age)
    except ValueError:  # today is 29 February and the cutoff year is common
        cutoff = date(today.year - adult_age, 2, 28)
    return cutoff.isoformat()


def known_dob(dob: str | None) -> str | None:
    if dob is None or not _DOB.fullmatch(dob):
        return None
    try:
        date.fromisoformat(dob)
    except ValueError:
        return None
    return dob


def campaign_allows(*, dob: str | None, is_managed: bool, exclude_minors: bool, cutoff: str) -> bool:
    if not exclude_minors:
        return True
    known = known_dob(dob)
    if known is None:
        return not is_managed
    return known <= cutoff


def email_allows(*, dob: str | None, is_managed: bool, is_service_profile: bool, cutoff: str) -> bool:
    known = known_dob(dob)
    if known is None or known > cutoff:
        return False
    return not is_managed or is_service_profile
