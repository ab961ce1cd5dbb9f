"""A tenant's view of a person, the write side (docs/people.md).

A tenant credential (a person's token for the tenant, or its API key) never writes the facts the person's
other tenants send by: each fact its row names goes into the tenant's ``TenantView`` of the person,
created on the first write, and every read for that tenant takes the view's fact over the shared one.
A named ``null`` clears the tenant's own fact, so the shared one shows again; a named empty list is the
tenant's own empty list ("no emails"), not a fallback. What a tenant row writes on the profile is its
membership, and its identity (``did``, ``isServiceProfile``) only when it creates the person; a platform
credential writes the shared facts, identity included.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.profile import ProfileIn
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx

__all__ = [
    "IDENTITY",
    "VIEW_PROPERTIES",
    "merged",
    "names_view_facts",
    "shared_part",
    "view_row",
    "write_views",
]

# The stored properties a tenant's view overrides one by one, by ProfileIn field name.
VIEW_PROPERTIES = frozenset({"dob", "locale", "is_managed", "notifications_webhook", "time_zone"})
_LISTS = ("emails", "tags", "connections")
_STORED_NAMES = frozenset(
    {"dob", "locale", "isManaged", "notificationsWebhook", "timeZone", "notificationsWebhookKeys"}
)

_UPSERT_VIEWS = "upsert_views"  # cypher/profiles/upsert_views.cypher


def names_view_facts(profile: ProfileIn) -> bool:
    """Whether the row names a fact a tenant writes into its view (so the view is written)."""
    return any(profile.named(name) for name in (*VIEW_PROPERTIES, *_LISTS))


IDENTITY = ("did", "isServiceProfile")
"""The person's identity facts, shared by every tenant: a tenant row sets them only on a profile it
creates (``identity``; ``upsert_profiles.cypher``), and naming another value for an existing person is
refused (``campaigns/profiles/records.py``)."""


def shared_part(row: dict[str, Any]) -> dict[str, Any]:
    """A tenant row's write of the profile itself: its identity properties, for a profile it creates
    only, and no shared fact or list."""
    identity = {k: v for k, v in row["props"].items() if k in IDENTITY}
    return {**row, "props": {}, "identity": identity, "emails": None, "tags": None, "connections": None}


def _own(profile: ProfileIn, name: str) -> tuple[Any, bool | None]:
    """(the list a view row writes, its ``*Own`` mark): None when omitted; a named null clears the
    tenant's list (written empty, mark removed); a named list is the tenant's own, an empty one too."""
    if not profile.named(name):
        return None, None
    value = getattr(profile, name)
    if value is None:
        return [], None
    if name == "emails":
        return [e.model_dump() for e in value], True
    return sorted(set(value)), True


def view_row(profile: ProfileIn) -> dict[str, Any]:
    """The statement row of a tenant's write: the named view properties by stored name (``None``
    removes the override, flags included: the shared flag shows again) and the named lists."""
    fields = type(profile).model_fields
    props = {fields[name].alias or name: getattr(profile, name)
             for name in VIEW_PROPERTIES if profile.named(name)}  # fmt: skip
    emails, emails_own = _own(profile, "emails")
    tags, tags_own = _own(profile, "tags")
    connections, connections_own = _own(profile, "connections")
    return {
        "profileId": profile.profile_id,
        "props": props,
        "emails": emails,
        "emailsOwn": emails_own,
        "tags": tags,
        "tagsOwn": tags_own,
        "connections": connections,
        "own": connections_own,
    }


def write_views(tx: Tx, rows: list[dict[str, Any]], *, tenant_id: str) -> set[str]:
    """Writes the rows (sorted by profileId, their profiles written and locked) into the views; answers
    the profileIds whose view did not already hold what their row names (the others are unchanged)."""
    if not rows:
        return set()
    record = tx.run(statement(_UPSERT_VIEWS), rows=rows, tenant=tenant_id).single()
    return set() if record is None else set(record["changed"])


def merged(profile: dict[str, Any], view: dict[str, Any] | None) -> dict[str, Any]:
    """The profile's properties with the view's overrides on top (the view's receiver with its ring)."""
    if not view:
        return profile
    return {**profile, **{k: v for k, v in view.items() if k in _STORED_NAMES}}
