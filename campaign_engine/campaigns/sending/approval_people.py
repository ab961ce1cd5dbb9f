"""Who may not approve a send: the people it would not count as a second person for.

An approval counts only when its approver is neither a requester of the campaign's open requests nor
anyone who changed its content or audience since its last approved send (``campaigns.create``,
``update``, ``addAudience``, ``removeAudience``; a ``duplicate`` counts its copier and carries the
source's editors in its entry's ``editors``). People are audit actors: a token's subject, an API key's
minter, so a key never makes its minter a second person. The trail is read newest first, back to the
last ``dispatch``, ``scheduleDispatch`` or ``resumeDispatch`` that went out with an approval, or the
last approval that made the campaign's revision the one people see (``approval_publish.py``).
"""

from __future__ import annotations

import json
from typing import Any

from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "EDITS",
    "changed_since_send",
    "editors_of",
    "editors_since_approval",
    "not_by",
    "requesters",
    "who_may_approve",
]

EDITS = frozenset(
    {
        "campaigns.create",
        "campaigns.update",
        "campaigns.addAudience",
        "campaigns.removeAudience",
        "campaigns.duplicate",
    }
)
_SENT = frozenset({"campaigns.dispatch", "campaigns.scheduleDispatch", "campaigns.resumeDispatch"})
_APPROVED = "campaigns.approveDispatch"
_PEOPLE = "approval_people"  # cypher/sending/approval_people.cypher
# Entries read back at most: a campaign edited more often than this since its last approved send keeps
# the most recent editors, who are the ones that matter.
_LIMIT = 2000
_CAMPAIGN = "MATCH (c:Campaign {id: $id}) RETURN c {.id, .createdAt} AS c"
_REQUESTERS = (
    "MATCH (r:DispatchApprovalRequest {campaignId: $campaignId}) WHERE r.requestedBy IS NOT NULL "
    "RETURN r.requestedBy AS person ORDER BY r.requestedAt DESC"
)


def editors_since_approval(tx: Tx, campaign: dict[str, Any]) -> list[str]:
    """The people who changed the campaign since its last approved send, most recent first."""
    rows = tx.run(
        statement(_PEOPLE), campaignId=campaign["id"], createdAt=campaign["createdAt"],
        procedures=sorted(EDITS | _SENT | {_APPROVED}), limit=_LIMIT,
    )  # fmt: skip
    people: list[str] = []
    for row in rows:
        detail = json.loads(row["detail"]) if row["detail"] else {}
        if row["procedure"] in _SENT:
            if detail.get("approvedBy"):
                break
            continue
        if row["procedure"] == _APPROVED:  # an approval that made the revision the one people see
            if detail.get("published"):
                break
            continue
        for person in [row["actor"], *detail.get("editors", [])]:
            if person not in people:
                people.append(str(person))
    return people


def changed_since_send(tx: Tx, campaign: dict[str, Any], dispatch_id: str) -> list[str]:
    """Who changed the campaign's content or audience since ``dispatch_id`` went out (or since a
    later approved send or resume), most recent first: a resume then needs a new approval."""
    rows = tx.run(
        statement(_PEOPLE), campaignId=campaign["id"], createdAt=campaign["createdAt"],
        procedures=sorted(EDITS | _SENT), limit=_LIMIT,
    )  # fmt: skip
    people: list[str] = []
    for row in rows:
        detail = json.loads(row["detail"]) if row["detail"] else {}
        if row["procedure"] in _SENT:
            if detail.get("approvedBy") or dispatch_id in detail.get("dispatchIds", []):
                break
            continue
        if row["actor"] not in people:
            people.append(str(row["actor"]))
    return people


def editors_of(graph: Graph, campaign_id: str) -> list[str]:
    """``editors_since_approval`` of a campaign by id, for its copy to carry (``campaigns.duplicate``)."""

    def tx_fn(tx: Tx) -> list[str]:
        found = tx.run(_CAMPAIGN, id=campaign_id).single()
        return [] if found is None else editors_since_approval(tx, dict(found["c"]))

    return graph.read(tx_fn)


def requesters(tx: Tx, campaign_id: str) -> list[str]:
    """Who asked for a send of the campaign that still awaits approval, most recent first."""
    people: list[str] = []
    for row in tx.run(_REQUESTERS, campaignId=campaign_id):
        if row["person"] not in people:
            people.append(str(row["person"]))
    return people


def not_by(tx: Tx, campaign: dict[str, Any]) -> list[str]:
    """Everyone an approval of the campaign would not count for: requesters first, then editors."""
    people = requesters(tx, campaign["id"])
    return people + [p for p in editors_since_approval(tx, campaign) if p not in people]


def who_may_approve(people: list[str]) -> str:
    """``another publisher than a, b and c``: the words the refusal and the console use."""
    if not people:
        return "another publisher"
    named = people[0] if len(people) == 1 else f"{', '.join(people[:-1])} and {people[-1]}"
    return f"another publisher than {named}"
