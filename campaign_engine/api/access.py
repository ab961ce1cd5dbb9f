"""Who may call what: the access levels a procedure declares, and how roles rank.

Every router module keeps one table, procedure name -> access, next to its procedures, and
``ProcedureRouter`` refuses a procedure without an entry, so none can be added unguarded. Tenant roles
nest: each holds everything of the one before it. A platform admin (``campaigns:admin`` scope and
``CAMPAIGN_ADMIN_PROFILE_IDS``) holds every role in every tenant.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["PEOPLE_ONLY", "ROLES", "Access", "Role", "highest", "role_satisfies"]

Role = Literal["viewer", "author", "publisher", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
Access = Literal["public", "user", "viewer", "author", "publisher", "admin", "platform"]
"""``public``: anyone; ``user``: any signed-in profile; a role: that role in the caller's tenant;
``platform``: platform admins only."""

PEOPLE_ONLY: frozenset[str] = frozenset({"apiKeys.create"})
"""Procedures no API key may call, whatever its role: a key never mints another key, so every key
traces to the person who created it, and revoking a key leaves no key it made behind."""

_RANK: dict[Role, int] = {role: rank for rank, role in enumerate(ROLES)}


def role_satisfies(held: Role | None, needed: Role) -> bool:
    return held is not None and _RANK[held] >= _RANK[needed]


def highest(roles: set[Role] | frozenset[Role]) -> Role | None:
    ranked = [role for role in ROLES if role in roles]
    return ranked[-1] if ranked else None
