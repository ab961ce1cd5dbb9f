"""Who an announcement email is from: the tenant's From address, with its display name only on an
address the tenant owns. Apart from composing because the API's layout preview asks it too, and the
ownership rule reads best alone."""

from __future__ import annotations

from collections.abc import Mapping
from email.header import Header
from email.utils import parseaddr
from typing import Any

__all__ = ["display_phrase", "sender_for"]


def sender_for(tenants: Mapping[str, Any], tenant_id: str | None, default_tenant: str) -> str | None:
    """The tenant entry's ``emailFrom`` (a tenant record's), else the default tenant's, else None (the
    provider's EMAIL_FROM); with the layout's ``senderName`` as its display name only on an address
    the tenant owns.

    A tenant owns its record's own ``emailFrom`` (set by a platform admin, ``tenants.update``); the
    default tenant also owns EMAIL_FROM (``platformFrom``, as the directory passes it), the deployment's
    own address. A tenant sending from an address it borrows (the default tenant's, or EMAIL_FROM) sends
    it as configured: its admins' ``senderName`` never goes on another's address, so no tenant can
    mail as "Riverside School" from the address Riverside's readers know. A tenant without a record
    is the default tenant's, as its branding is."""
    own_id = tenant_id or default_tenant
    entry_id = own_id if isinstance(tenants.get(own_id), Mapping) else default_tenant
    address: str | None = None
    owned = entry_id == default_tenant  # EMAIL_FROM, when no record names an address
    for candidate in (own_id, default_tenant):
        entry = tenants.get(candidate)
        if isinstance(entry, Mapping) and isinstance(entry.get("emailFrom"), str):
            address, owned = str(entry["emailFrom"]), candidate == entry_id
            break
    own = tenants.get(entry_id)
    name = own.get("senderName") if isinstance(own, Mapping) else None
    fallback = own.get("platformFrom") if isinstance(own, Mapping) else None
    bare = parseaddr(address or (fallback if isinstance(fallback, str) else ""))[1]
    if not owned or not isinstance(name, str) or not name.strip() or not bare:
        return address
    return f"{display_phrase(name)} <{bare}>"


def display_phrase(name: str) -> str:
    """A header phrase (RFC 5322): RFC 2047-encoded when not ASCII, quoted when it has specials."""
    name = " ".join(name.split())
    if not name.isascii():
        return Header(name, "utf-8").encode()
    return _quote_phrase(name) if any(ch in _PHRASE_SPECIALS for ch in name) else name


def _quote_phrase(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


_PHRASE_SPECIALS = frozenset('()<>@,;:\\".[]')
