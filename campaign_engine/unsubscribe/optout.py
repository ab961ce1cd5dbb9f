"""Opting a profile out of announcement email by its ``campaignUnsubscribeId``, and allocating those ids.

Opt-outs are per organisation (docs/people.md): a link from tenant B's email opts the person out of B's
email only (``announcementEmailOptOut`` on B's view of them); "from every organisation", and every link
that names no tenant, sets the person's deployment-wide opt-out, which stops every tenant's.

A link that names its campaign (``tokens.py``, version 4) has the opt-out counted for that campaign:
``unsubscribedAt`` on the person's state of it, when the opt-out newly stops the campaign's tenant.
Each tenant the opt-out stops gets an audit entry (actor: the person, ``via`` the link), the campaign's
tenant's naming the campaign; another tenant's never does (its trail must not name another tenant's
campaign).

The id is a random UUID given to a profile once (by the email claim, inside its locked transaction) and
kept for the profile's life. It is never derived from the profileId, so a profile deleted and created
again under the same profileId gets a new id and old links do nothing to it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_events import Event
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.webhook_outbox import record_events
from campaign_engine.unsubscribe.tokens import LinkCampaign

__all__ = [
    "VIA_LINK",
    "Scope",
    "allocate_unsubscribe_id",
    "ensure_unsubscribe_ids",
    "opt_out_by_unsubscribe_id",
]

Scope = Literal["tenant", "all"]
"""The page's choice: the link's tenant only (the default), or every organisation."""

VIA_LINK = "unsubscribeLink"
"""The audit entry's ``via``: the person acted through the signed link of an email, signed in nowhere."""

_OPT_OUT = "opt_out"  # cypher/unsubscribe/opt_out.cypher: every tenant
_OPT_OUT_TENANT = "opt_out_tenant"  # cypher/unsubscribe/opt_out_tenant.cypher: the link's tenant

# The lock comes first so the coalesce reads a value no concurrent claim can still change; inside a
# claim transaction that already holds the profile locks it is a harmless re-lock.
_ENSURE_IDS = "opt_out_ensure_ids"  # cypher/unsubscribe/opt_out_ensure_ids.cypher
_COUNT_CAMPAIGN = "opt_out_campaign"  # cypher/unsubscribe/opt_out_campaign.cypher


def allocate_unsubscribe_id() -> str:
    return str(uuid.uuid4())


def ensure_unsubscribe_ids(tx: Tx, profile_ids: list[str]) -> dict[str, str]:
    """Give each existing profile among ``profile_ids`` an unsubscribe id if it has none; return all ids.

    Meant for the email claim transaction (after ``lock_profiles``; it locks in ascending profileId order
    itself too). An existing id is always kept; a re-run of the transaction only draws new candidates
    for ids that were never committed.
    """
    rows = [{"profileId": pid, "candidate": allocate_unsubscribe_id()} for pid in sorted(set(profile_ids))]
    return {
        record["profileId"]: record["unsubscribeId"] for record in tx.run(statement(_ENSURE_IDS), rows=rows)
    }


def opt_out_by_unsubscribe_id(
    graph: Graph,
    unsubscribe_id: str,
    *,
    now: datetime,
    tenant_id: str | None = None,
    scope: Scope = "tenant",
    campaign: LinkCampaign | None = None,
    procedure: str = "unsubscribe.oneClick",
) -> bool:
    """Set ``announcementEmailOptOut`` under the profile lock: on ``tenant_id``'s view of the person, or
    on the person when ``scope`` is ``"all"`` or the link names no tenant. Idempotent (the first
    timestamp is kept).

    False when no profile holds the id (deleted profile). Callers answer exactly as for True, so a link
    never reveals whether its profile exists. The first opt-out is a ``recipient.unsubscribed`` event
    and an audit entry (``procedure``: the edge it came through) for each tenant it stops: the link's
    tenant only, or every tenant the profile belongs to; it counts for ``campaign`` (the link's) when
    it stops that campaign's tenant, whose event and audit entry then name the campaign.
    """
    stamp = format_ts(now)
    one_tenant = tenant_id is not None and scope == "tenant"
    name = _OPT_OUT_TENANT if one_tenant else _OPT_OUT
    request_id = uuid.uuid4().hex  # drawn outside: a retried transaction writes the same entries

    def tx_fn(tx: Tx) -> bool:
        row = tx.run(statement(name), unsubscribeId=unsubscribe_id, tenantId=tenant_id, now=stamp).single()
        if row is None:
            return False
        if row["already"]:
            return True
        tenants: list[str] = list(row["tenants"])
        counted = None
        if campaign is not None and tenant_id is not None:
            counted = tx.run(
                statement(_COUNT_CAMPAIGN), profileId=row["profileId"], campaignId=campaign.campaign_id,
                createdAt=campaign.created_at, tenantId=tenant_id, tenants=tenants, now=stamp,
            ).single()  # fmt: skip
        for tenant in tenants:
            named: dict[str, Any] | None = None
            ref = None
            if counted is not None and tenant == tenant_id:
                named, ref = dict(counted["campaign"]), counted["campaignId"]
            event = Event.of("recipient.unsubscribed", stamp, profileId=row["profileId"], channel="email",
                             campaignId=ref)  # fmt: skip
            record_events(tx, graph, tenant, [event])
            audit = AuditContext(
                actor=row["profileId"], procedure=procedure, request_id=request_id, at=stamp,
                tenant_id=tenant, entry_id=uuid.uuid5(uuid.NAMESPACE_OID, f"{request_id}:{tenant}").hex,
                via=VIA_LINK,
            )  # fmt: skip
            record_audit(
                tx, audit, target_type="profile", target_id=row["profileId"], campaign=named,
                detail={"channel": "email", "scope": "tenant" if one_tenant else "all"},
            )  # fmt: skip
        return True

    return graph.write(tx_fn)
