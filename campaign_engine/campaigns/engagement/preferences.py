"""A user's own announcement preferences: email and push opt-outs, for every tenant or for one.

Only the profile itself reads or changes them (these fields never appear in projections for others).
Opt-outs add up (docs/people.md): without a tenant the choices are the person's deployment-wide ones,
which stop every tenant's announcements (turning a channel back on turns it on for every tenant, the
tenants' own opt-outs of it included); with ``tenant_id`` (one of the person's tenants) they are that
tenant's view's, and what comes back is what that tenant honours (its view's or the deployment-wide
choice). An update is a partial patch under the profile lock, so it serialises with email claims and
one-click unsubscribes: an omitted choice keeps whatever a concurrent writer stored. Each opt-out keeps
the time it was first switched on (``...OptOutAt``), cleared when switched off.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from campaign_engine.domain.errors import Forbidden, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["AnnouncementPreferences", "get_announcement_preferences", "update_announcement_preferences"]


@dataclass(frozen=True)
class AnnouncementPreferences:
    email_opt_out: bool
    push_opt_out: bool


_GET = "preferences_get"  # cypher/engagement/preferences_get.cypher

# A null choice leaves the stored value (and its timestamp) untouched.
_UPDATE = "preferences_update"  # cypher/engagement/preferences_update.cypher: every tenant
_UPDATE_TENANT = "preferences_update_tenant"  # cypher/engagement/preferences_update_tenant.cypher


def _preferences(record: Any) -> AnnouncementPreferences:
    return AnnouncementPreferences(email_opt_out=bool(record["email"]), push_opt_out=bool(record["push"]))


def _read(tx: Tx, profile_id: str, tenant_id: str | None) -> AnnouncementPreferences:
    """NOT_FOUND without the profile; FORBIDDEN when ``tenant_id`` is not one of its tenants."""
    record = tx.run(statement(_GET), profileId=profile_id, tenantId=tenant_id).single()
    if record is None:
        raise NotFound("profile not found")
    if not record["member"]:
        raise Forbidden("tenantId must be one of your tenants")
    return _preferences(record)


def get_announcement_preferences(
    graph: Graph, profile_id: str, *, tenant_id: str | None = None
) -> AnnouncementPreferences:
    return graph.read(_read, profile_id, tenant_id)


def update_announcement_preferences(
    graph: Graph,
    profile_id: str,
    *,
    email_opt_out: bool | None,
    push_opt_out: bool | None,
    now: datetime,
    tenant_id: str | None = None,
) -> AnnouncementPreferences:
    """Apply the given choices (None = unchanged), for every tenant or ``tenant_id``'s, and return the
    stored result."""
    stamp = format_ts(now)

    def tx_fn(tx: Tx) -> AnnouncementPreferences:
        current = _read(tx, profile_id, tenant_id)
        if email_opt_out is None and push_opt_out is None:
            return current  # nothing to write: no lock taken, no view created
        name = _UPDATE if tenant_id is None else _UPDATE_TENANT
        record = tx.run(
            statement(name),
            profileId=profile_id,
            tenantId=tenant_id,
            email=email_opt_out,
            push=push_opt_out,
            now=stamp,
        ).single(strict=True)
        return _preferences(record)

    return graph.write(tx_fn)
