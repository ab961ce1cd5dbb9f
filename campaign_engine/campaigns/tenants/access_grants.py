"""Role grants: ``access.grant/revoke/list``, and the roles a subject holds in a tenant.

A grant binds a subject (a JWT ``sub``) to one role in one tenant. The roles an admin call acts with are
read here on each call, so a revoked grant stops working with the transaction that removed it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from pydantic import BaseModel

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "Grant",
    "GrantList",
    "grant_role",
    "granted_subjects",
    "list_grants",
    "revoke_role",
    "roles_of",
    "tenants_of",
]

# Role names are api/access.py's; this layer stores them and does not rank them.
_ROLES_OF = "access_roles_of"  # cypher/tenants/access_roles_of.cypher
_GRANT = "access_grant"  # cypher/tenants/access_grant.cypher
_REVOKE = "access_revoke"  # cypher/tenants/access_revoke.cypher
_LIST = "access_list"  # cypher/tenants/access_list.cypher
_TENANTS_OF = "access_tenants_of"  # cypher/tenants/access_tenants_of.cypher
_SUBJECTS = "access_subjects"  # cypher/tenants/access_subjects.cypher


class Grant(CamelModel):
    tenant_id: str
    subject: str
    role: str
    granted_at: str
    granted_by: str | None = None


class GrantList(BaseModel):
    records: list[Grant]


def roles_of(graph: Graph, *, tenant_id: str, subject: str) -> frozenset[str]:
    def tx_fn(tx: Tx) -> list[str]:
        record = tx.run(statement(_ROLES_OF), tenantId=tenant_id, subject=subject).single()
        return [] if record is None else list(record["roles"])

    return frozenset(graph.read(tx_fn))


def tenants_of(graph: Graph, *, subject: str) -> list[str]:
    """The tenants ``subject`` holds a role in, by id: where a person signed in by the organisation's
    identity provider (whose token names no tenant) may act."""

    def tx_fn(tx: Tx) -> list[str]:
        return [str(r["tenantId"]) for r in tx.run(statement(_TENANTS_OF), subject=subject)]

    return graph.read(tx_fn)


def grant_role(
    graph: Graph, *, tenant_id: str, subject: str, role: str, now: datetime, audit: AuditContext
) -> Grant:
    """Idempotent: granting a held role changes nothing but the audit trail."""

    def tx_fn(tx: Tx) -> dict[str, Any]:
        params: dict[str, Any] = {"tenantId": tenant_id, "subject": subject, "role": role}
        record = tx.run(statement(_GRANT), now=format_ts(now), actor=audit.actor, **params).single()
        assert record is not None
        record_audit(tx, audit, target_type="grant", target_id=f"{tenant_id}/{subject}", detail=params)
        return cast(dict[str, Any], record["grant"])

    return Grant.model_validate(graph.write(tx_fn))


def revoke_role(graph: Graph, *, tenant_id: str, subject: str, role: str, audit: AuditContext) -> None:
    """NOT_FOUND when the subject does not hold the role there."""

    def tx_fn(tx: Tx) -> None:
        params: dict[str, Any] = {"tenantId": tenant_id, "subject": subject, "role": role}
        record = tx.run(statement(_REVOKE), **params).single()
        if record is None or not record["removed"]:
            raise NotFound(f"'{subject}' holds no {role} grant in tenant '{tenant_id}'")
        record_audit(tx, audit, target_type="grant", target_id=f"{tenant_id}/{subject}", detail=params)

    graph.write(tx_fn)


def list_grants(graph: Graph, *, tenant_id: str) -> GrantList:
    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        return [dict(row["grant"]) for row in tx.run(statement(_LIST), tenantId=tenant_id)]

    return GrantList(records=[Grant.model_validate(row) for row in graph.read(tx_fn)])


def granted_subjects(graph: Graph, *, limit: int) -> GrantList:
    """Every tenant's grants, at most ``limit``: who make dev's OpenID provider may sign in
    (``api/dev_subjects.py``); no procedure reads across tenants this way."""

    def tx_fn(tx: Tx) -> list[dict[str, Any]]:
        return [dict(row["grant"]) for row in tx.run(statement(_SUBJECTS), limit=limit)]

    return GrantList(records=[Grant.model_validate(row) for row in graph.read(tx_fn)])
