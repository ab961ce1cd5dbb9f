"""Email eligibility as Cypher: the contact rule next to the email age rule, filled into named queries.

A recipient can be emailed only through *exactly one* primary, verified email contact method whose
value is a plausible address: two primaries are ambiguous and fail closed, like an unknown age. The
same predicates serve the dispatch preview, the email page read and the claim recheck, so the three
can never disagree about who is eligible.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from campaign_engine.graph.cypher import query
from campaign_engine.graph.policy import EMAIL_AGE_OK, policy_params

__all__ = ["EMAIL_CONTACT_OK", "EMAIL_PATTERN", "PRIMARY_EMAILS", "email_params", "email_query"]

# The address grammar of domain/profile.py, in a form Java's regex engine reads the same way.
EMAIL_PATTERN = r"^[^@\s<>\"(),;:]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+$"

PRIMARY_EMAILS = (
    "[(p)-[:HAS_CONTACT_METHOD]->(em:ContactMethod {type: 'email'}) "
    "WHERE em.isPrimary = true AND em.isVerified = true | em.value]"
)

EMAIL_CONTACT_OK = (
    f"(size({PRIMARY_EMAILS}) = 1 AND "
    f"all(address IN {PRIMARY_EMAILS} WHERE coalesce(address =~ $emailPattern, false)))"
)


def email_query(name: str) -> str:
    """``cypher/<name>.cypher`` with the ``{{EMAIL_AGE_OK}}``-style placeholders filled in."""
    text = query(name).replace("{{EMAIL_AGE_OK}}", EMAIL_AGE_OK)
    return text.replace("{{EMAIL_CONTACT_OK}}", EMAIL_CONTACT_OK).replace(
        "{{PRIMARY_EMAILS}}", PRIMARY_EMAILS
    )


def email_params(today: date, adult_age: int) -> dict[str, Any]:
    return {**policy_params(today, adult_age), "emailPattern": EMAIL_PATTERN}
