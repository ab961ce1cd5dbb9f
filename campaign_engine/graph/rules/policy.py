"""Eligibility as Cypher, in one place: the age policy (the twin of ``domain/age_policy.py``; tests hold
them equal) and the email contact rule, filled into named queries.

Queries in ``cypher/`` write ``{{CAMPAIGN_AGE_OK}}``, ``{{EMAIL_AGE_OK}}``, ``{{EMAIL_CONTACT_OK}}``,
``{{EMAIL_SUPPRESSED}}``, ``{{PRIMARY_EMAILS}}``, ``{{EMAIL_OPTED_OUT}}`` or ``{{PUSH_OPTED_OUT}}``
where ``p`` is the Profile and ``c`` the Campaign;
``graph/cypher.py:statement`` fills them (``FRAGMENTS``) and ``policy_params`` gives the parameters they
read. The preview, the page reads, the delivery rechecks, the email claim and the email self-test all
use the same predicates, so they can never disagree about who is eligible. ``EMAIL_CONTACT_OK`` includes
the address suppression; ``EMAIL_SUPPRESSED`` exists only so a query can name that reason before the
contact rule.

The two contact predicates read the profile's primary verified addresses from the variable ``emails``,
which the query binds once per row (``{{PRIMARY_EMAILS}} AS emails``) before using them: spelled inline,
the list was walked three or four times per profile, most of the email claim's cost.
``check_bindings`` refuses a query that uses them without that binding.

Every fact of a person these fragments read (age, management, emails, opt-outs) is the campaign
tenant's view over the shared facts (docs/people.md), from ``view``, which a query binds once per
person with ``{{TENANT_VIEW}}``; ``check_bindings`` refuses one that reads ``view`` without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from campaign_engine.config import Settings
from campaign_engine.domain.age_policy import DOB_PATTERN, adult_dob_cutoff
from campaign_engine.domain.patterns import EMAIL_PATTERN

__all__ = [
    "AUDIENCE_AGE_OK",
    "AUDIENCE_AGE_OK_HERE",
    "CAMPAIGN_AGE_OK",
    "CARD_APPROVED",
    "CARD_SHOWN_TO_MEMBER",
    "EMAIL_AGE_OK",
    "EMAIL_CAP_REACHED",
    "EMAIL_CONTACT_OK",
    "EMAIL_OPTED_OUT",
    "EMAIL_PATTERN",
    "EMAIL_SUPPRESSED",
    "FRAGMENTS",
    "NOTIFY_CAP_REACHED",
    "PRIMARY_EMAILS",
    "PUSH_OPTED_OUT",
    "SHOWN_DEFINITION",
    "STATIC_AUDIENCE_PAGE",
    "TENANT_VIEW",
    "Policy",
    "check_bindings",
    "policy_params",
]

# Both age predicates are wrapped in coalesce so they are never null (a missing dob would otherwise
# make the whole predicate null, which is wrong under NOT). Every fact they read is the campaign
# tenant's view over the shared one (docs/people.md): ``view`` is bound per row by ``{{TENANT_VIEW}}``
# (``check_bindings`` refuses a statement that reads it unbound), each property overridden on its own.
_DOB = "coalesce(view.dob, p.dob)"
_MANAGED = "coalesce(view.isManaged, p.isManaged, false)"
CAMPAIGN_AGE_OK = (
    "coalesce(NOT coalesce(c.excludeMinors, true) OR "
    f"CASE WHEN coalesce({_DOB} =~ $dobPattern, false) THEN {_DOB} <= $adultDob "
    f"ELSE NOT {_MANAGED} END, false)"
)

EMAIL_AGE_OK = (
    f"coalesce({_DOB} =~ $dobPattern AND {_DOB} <= $adultDob AND "
    f"(NOT {_MANAGED} OR coalesce(p.isServiceProfile, false)), false)"
)

# The tenant's email list replaces the shared one as a whole once the tenant named one
# (``view.emailsOwn``; an empty list named is "no email" for that tenant, never a fallback).
_PRIMARY = "(em:ContactMethod {type: 'email'}) WHERE em.isPrimary = true AND em.isVerified = true | em.value]"
PRIMARY_EMAILS = (
    f"CASE WHEN coalesce(view.emailsOwn, false) THEN [(view)-[:HAS_CONTACT_METHOD]->{_PRIMARY}"
    f" ELSE [(p)-[:HAS_CONTACT_METHOD]->{_PRIMARY} END"
)

# The variable the contact predicates read, bound once per row (``{{PRIMARY_EMAILS}} AS emails``).
_EMAILS_BOUND = re.compile(r"\{\{PRIMARY_EMAILS\}\}[^;]*?\bAS\s+emails\b", re.DOTALL)

# A suppressed address (provider feedback: bounces, complaints, provider suppressions; feedback/) is
# keyed by the whole address lowercased, the normal form of feedback/events.py. A seek of the unique
# email_suppression_address index per candidate, never a scan.
_SUPPRESSED = "EXISTS { MATCH (emailSuppression:EmailSuppression {address: toLower(address)}) }"
EMAIL_SUPPRESSED = f"any(address IN emails WHERE {_SUPPRESSED})"

# Exactly one primary verified address, a plausible one, and not suppressed: two primaries are
# ambiguous and fail closed, like an unknown age. The address grammar is domain/patterns.py's, which
# Java's regex engine reads as Python and pydantic do.
EMAIL_CONTACT_OK = (
    "(size(emails) = 1 AND "
    f"all(address IN emails WHERE coalesce(address =~ $emailPattern, false) AND NOT {_SUPPRESSED}))"
)

# The frequency cap's verdict for one recipient (the setting: domain/frequency_cap.py):
# where `cap` is the campaign tenant's {max, since} for the channel (null: no cap) and `s` the
# recipient's CAMPAIGN_STATE, the cap is reached unless this campaign already holds a slot or the
# profile's log has fewer than max sends since the window began. The email claim and the explanation
# read it; the notify recheck folds the same rule over a profile's jobs of one batch (notify_cap.cypher).
EMAIL_CAP_REACHED = (
    "(cap IS NOT NULL AND s.emailCapCountedAt IS NULL AND "
    "size([t IN coalesce(p.emailCapLog, []) WHERE t > cap.since]) >= cap.max)"
)
NOTIFY_CAP_REACHED = EMAIL_CAP_REACHED.replace("emailCap", "notifyCap")

# Who may enrol themselves in ``c``: read once before the lock (to refuse without taking it) and again
# under it (cypher/engagement/: enroll_eligible.cypher, enroll.cypher). Only a member of the campaign's
# tenant: another app's campaigns are not there for them to find.
SELF_ENROLLABLE = (
    "c.status = 'live' AND c.discoverable AND c.tenantId IN coalesce(p.tenants, [])"
    " AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)"
    " AND {{CAMPAIGN_AGE_OK}}"
)

# The static audience page every audience reader starts with (``{{AUDIENCE_PAGE}}``): the campaign's
# members after $cursor, read in profileId order from the relationship index audience_member
# (campaignId, profileId) and cut at $limit, so a page costs the members it reads; never SKIP, never a
# sort. The SEEK hint keeps the seek whatever the statistics say: a plain index hint may be served by a
# scan of the whole index (seen after a test wiped a graph whose index held one campaign's members). A
# campaign with a live segment puts its seeks beside it (graph/rules/segment_statements.py:audience_head).
STATIC_AUDIENCE_PAGE = """MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
USING INDEX SEEK m:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)
WHERE m.campaignId = $campaignId AND m.profileId > $cursor
WITH p, c, m
ORDER BY m.campaignId, m.profileId
LIMIT $limit"""

# Who may be a member of `c` (addAudience, its preview, getAudience): whoever the campaign age policy
# admits, and, where the campaign routes minors to their guardians, the members it
# excludes too: they are whom the walks replace by their guardians, never recipients themselves.
AUDIENCE_AGE_OK = "({{CAMPAIGN_AGE_OK}} OR coalesce(c.minors = 'guardians', false))"

# AUDIENCE_AGE_OK where no row binds ``view`` first (the WHERE of a live segment's arm, under its
# LIMIT): the view bound inside the predicate, one expansion of the candidate.
AUDIENCE_AGE_OK_HERE = "EXISTS { {{TENANT_VIEW}} WITH p, c, view WHERE {{AUDIENCE_AGE_OK}} }"

# The campaign tenant's view of the person (docs/people.md), bound once per row as ``view`` before any
# fragment reads a fact of ``p``: null where the tenant wrote nothing of its own (or the campaign has no
# tenant), so every fact falls back to the shared one (``coalesce(view.x, p.x)``). An expansion from
# the profile, not an index seek: a person has a view per tenant that wrote about them, rarely more than
# one or two.
TENANT_VIEW = "OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = c.tenantId"

# Opt-outs add up (docs/people.md): the person's deployment-wide choice (every opt-out recorded before
# per-tenant ones, and the unsubscribe page's "from every organisation") or the campaign tenant's view's
# (its unsubscribe link, its preferences). Every reader (preview, pages, rechecks, claim, self-test,
# explanation) fills these, so none can disagree; they read ``view`` (``{{TENANT_VIEW}}``).
EMAIL_OPTED_OUT = (
    "(coalesce(p.announcementEmailOptOut, false) OR coalesce(view.announcementEmailOptOut, false))"
)
PUSH_OPTED_OUT = EMAIL_OPTED_OUT.replace("Email", "Push")

# A statement binds the view with the fragment, or by naming the node itself (a write that creates it,
# or a fragment already filled into a caller's slot).
_VIEW_BOUND = re.compile(r"\{\{TENANT_VIEW\}\}|\(view:TenantView\b|\bAS\s+view\b")
# What reads ``view``: these fragments (by name, before they are filled), or ``view.x`` spelled out (a
# statement's own fact read, or a caller's slot already filled, such as routing's ROUTED_GUARDIAN).
_VIEW_READ = re.compile(
    r"\{\{(CAMPAIGN_AGE_OK|EMAIL_AGE_OK|AUDIENCE_AGE_OK|SELF_ENROLLABLE|PRIMARY_EMAILS"
    r"|EMAIL_OPTED_OUT|PUSH_OPTED_OUT)\}\}|\bview\."
)

# The named fragments every statement may hold (``{{NAME}}``), filled by ``graph/cypher.py:statement``
# after the caller's slots; a fragment may hold further ones. ``AUDIENCE_PAGE`` is the static page unless
# the caller passes a segment's (``graph/rules/segment_statements.py``) or another head.
# What people see of a campaign under an approval policy (campaigns/sending/approval_publish.py):
# ``shownVersion`` is null without one (the draft shows) and '' while no revision is approved; a member
# ``m`` sees the approved revision once added before its approval (``shownSince``) or self-enrolled.
# The cards, the engagement they take and the live-segment and guardian reads all ask these.
CARD_APPROVED = "(c.shownVersion IS NULL OR c.shownVersion <> '')"
CARD_SHOWN_TO_MEMBER = (
    "(c.shownVersion IS NULL OR (c.shownVersion <> '' AND (m.selfEnrolled OR m.addedAt <= c.shownSince)))"
)
SHOWN_DEFINITION = "CASE WHEN c.shownVersion IS NULL THEN c.definition ELSE c.shownDefinition END"

FRAGMENTS: dict[str, str] = {
    "CARD_APPROVED": CARD_APPROVED,
    "CARD_SHOWN_TO_MEMBER": CARD_SHOWN_TO_MEMBER,
    "SHOWN_DEFINITION": SHOWN_DEFINITION,
    "AUDIENCE_PAGE": STATIC_AUDIENCE_PAGE,
    "TENANT_VIEW": TENANT_VIEW,
    "SELF_ENROLLABLE": SELF_ENROLLABLE,
    "AUDIENCE_AGE_OK": AUDIENCE_AGE_OK,
    "AUDIENCE_AGE_OK_HERE": AUDIENCE_AGE_OK_HERE,
    "EMAIL_CAP_REACHED": EMAIL_CAP_REACHED,
    "NOTIFY_CAP_REACHED": NOTIFY_CAP_REACHED,
    "CAMPAIGN_AGE_OK": CAMPAIGN_AGE_OK,
    "EMAIL_AGE_OK": EMAIL_AGE_OK,
    "EMAIL_CONTACT_OK": EMAIL_CONTACT_OK,
    "EMAIL_SUPPRESSED": EMAIL_SUPPRESSED,
    "PRIMARY_EMAILS": PRIMARY_EMAILS,
    "EMAIL_OPTED_OUT": EMAIL_OPTED_OUT,
    "PUSH_OPTED_OUT": PUSH_OPTED_OUT,
}


def check_bindings(text: str, *, name: str) -> None:
    """Refuses a template (its caller's slots filled) that reads a contact predicate before binding
    ``emails``, or reads a person's facts without binding the tenant's ``view``: Cypher would refuse an
    undefined variable only when the statement first runs, and a view read as null would send by the
    shared facts (another tenant's address, receiver, age), or lose the tenant's opt-out."""
    uses_emails = "{{EMAIL_CONTACT_OK}}" in text or "{{EMAIL_SUPPRESSED}}" in text
    if uses_emails and not _EMAILS_BOUND.search(text):
        raise ValueError(f"{name} uses a contact predicate but never binds `emails`")
    read = _VIEW_READ.search(text)
    if read and not _VIEW_BOUND.search(text):
        raise ValueError(f"{name} reads {read.group(0)} but never binds the tenant's `view`")


def policy_params(now: datetime, adult_age: int) -> dict[str, Any]:
    """The parameters of every policy-checked query. Ages count from the UTC date of ``now``, whatever
    its zone, so the preview, the page walks and the rechecks agree about who turned 18 today."""
    return {
        "adultDob": adult_dob_cutoff(now.astimezone(UTC).date(), adult_age),
        "dobPattern": DOB_PATTERN,
        "emailPattern": EMAIL_PATTERN,
    }


@dataclass(frozen=True)
class Policy:
    """What every policy-checked query needs: the evaluation moment, the adult age, the did:web domain."""

    now: datetime
    adult_age: int
    domain: str

    @classmethod
    def of(cls, settings: Settings, now: datetime) -> Policy:
        return cls(now=now, adult_age=settings.campaign_adult_age, domain=settings.domain_name)

    def params(self) -> dict[str, Any]:
        return policy_params(self.now, self.adult_age)
