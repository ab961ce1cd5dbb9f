"""Generated families for guardian tests and, later, guardian routing.

``families`` builds a deterministic set: each family has one or two adult guardians and one to three
minor children; every third family's guardians have consent ``revoked``, and some guardians share a
child with a co-guardian or have several children. ``upsert_families`` writes them through
``profiles.upsert`` (guardians and children in the same batch: links are written after all profiles),
so the test exercises the real path; ``granted_pairs`` is the independent expectation routing checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, ok

__all__ = ["Family", "families", "granted_pairs", "independent_routed_count", "upsert_families"]

ADULT_DOB = "1980-05-17"
MINOR_DOB = "2015-09-01"


@dataclass(frozen=True)
class Family:
    guardians: tuple[str, ...]
    children: tuple[str, ...]
    consent: str
    tags: tuple[str, ...] = field(default=())


def families(count: int, *, prefix: str = "fam") -> list[Family]:
    out: list[Family] = []
    for n in range(count):
        guardians = tuple(f"{prefix}{n}-g{k}" for k in range(1 + n % 2))
        children = tuple(f"{prefix}{n}-c{k}" for k in range(1 + n % 3))
        out.append(
            Family(guardians, children, "revoked" if n % 3 == 2 else "granted", (f"grade-{7 + n % 2}",))
        )
    return out


def _rows(family: Family, email_domain: str) -> Iterator[dict[str, Any]]:
    for guardian in family.guardians:
        yield {
            "profileId": guardian,
            "dob": ADULT_DOB,
            "emails": [{"address": f"{guardian}@{email_domain}", "verified": True, "primary": True}],
        }
    for child in family.children:
        yield {
            "profileId": child,
            "dob": MINOR_DOB,
            "isManaged": True,
            "tags": list(family.tags),
            "guardians": [{"profileId": g, "consent": family.consent} for g in family.guardians],
        }


def upsert_families(
    api: TrpcClient, found: list[Family], *, as_: str, email_domain: str = "example.com", batch: int = 1000
) -> int:
    """Writes ``found`` in batches of whole families; returns the links written."""
    rows: list[dict[str, Any]] = []
    links = 0

    def flush() -> None:
        nonlocal links, rows
        if rows:
            links += ok(api.mutate("profiles.upsert", {"profiles": rows}, as_=as_, admin=True))[
                "guardianLinks"
            ]
            rows = []

    for family in found:
        family_rows = list(_rows(family, email_domain))
        if len(rows) + len(family_rows) > batch:
            flush()
        rows += family_rows
    flush()
    return links


def granted_pairs(found: list[Family]) -> set[tuple[str, str]]:
    """(guardian, child) for every link with consent granted."""
    return {(g, c) for f in found if f.consent == "granted" for g in f.guardians for c in f.children}


# Written plainly, not from graph/rules/policy.py's fragments or graph/rules/routing.py, so it can disagree
# with them: # for a campaign that excludes minors and has static members only, the distinct guardians a
# routed dispatch must reach on each channel (the done-when check; the lead's 100,000-profile
# fixture uses it too). A child is excluded on notify when known to be a minor or managed with no age, on
# email unless known to be an adult and unmanaged (or a service profile); a guardian is reached when
# linked with consent granted, of the campaign's tenant, no member, a known adult (unmanaged for email),
# not opted out, and for email with exactly one primary verified address.
_INDEPENDENT = """
MATCH (c:Campaign {id: $campaignId})
MATCH (g:Profile)-[link:GUARDIAN_OF]->(k:Profile)-[:IN_CAMPAIGN_AUDIENCE]->(c)
WHERE link.consent = 'granted' AND c.tenantId IN coalesce(g.tenants, [])
  AND NOT (g)-[:IN_CAMPAIGN_AUDIENCE]->(c) AND g.dob IS NOT NULL AND g.dob <= $adultDob
WITH c, g, k,
     (k.dob IS NOT NULL AND k.dob > $adultDob) OR (k.dob IS NULL AND coalesce(k.isManaged, false))
       AS notifyExcluded,
     k.dob IS NULL OR k.dob > $adultDob
       OR (coalesce(k.isManaged, false) AND NOT coalesce(k.isServiceProfile, false)) AS emailExcluded
WITH c, g, any(x IN collect(notifyExcluded) WHERE x) AS notifyRouted,
     any(x IN collect(emailExcluded) WHERE x) AS emailRouted
WITH g, notifyRouted AND NOT coalesce(g.announcementPushOptOut, false) AS notify,
     emailRouted AND NOT coalesce(g.announcementEmailOptOut, false)
       AND (NOT coalesce(g.isManaged, false) OR coalesce(g.isServiceProfile, false))
       AND size([(g)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'})
                 WHERE m.isPrimary AND m.isVerified | m]) = 1 AS email
RETURN count(CASE WHEN notify THEN 1 END) AS notify, count(CASE WHEN email THEN 1 END) AS email
"""


def independent_routed_count(graph: Graph, campaign_id: str, *, adult_dob: str) -> dict[str, int]:
    """Per channel, the guardians a ``minors: "guardians"`` dispatch of ``campaign_id`` must reach,
    counted without the engine's own fragments (see ``_INDEPENDENT``); ``adult_dob``: the latest birth
    date of an adult today (``policy_params(now, 18)["adultDob"]``)."""
    [row] = graph.run(_INDEPENDENT, campaignId=campaign_id, adultDob=adult_dob)
    return {"notify": int(row["notify"]), "email": int(row["email"])}
