"""API keys: machine credentials for one tenant and one role, revocable without touching the
identity provider.

A key acts for the person who minted it (``createdBy``, the minting call's audit actor): what it does
is that person's act in the audit trail and in two-person approval, so nobody counts twice by minting a
key. A key reads ``cek_<id>_<secret>``: the fixed prefix lets secret scanners find a leaked one, the id finds
its record, and only SHA-256 of the secret is stored (the secret is 256 random bits, so a plain hash is
as strong as a slow one and costs microseconds per call). Every call reads the record, so a revoked key
is refused by every process from the revoking commit on; last use is written at most once a minute.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from pydantic import BaseModel, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, NotFound, Unauthorized
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "KEY_PREFIX",
    "ApiKeyCreated",
    "ApiKeyList",
    "ApiKeyPublic",
    "KeyHolder",
    "create_key",
    "is_api_key",
    "key_tenant",
    "list_keys",
    "revoke_key",
    "verify_key",
]

KEY_PREFIX = "cek_"
_LAST_USE_EVERY = timedelta(minutes=1)

_CREATE = "api_key_create"  # cypher/tenants/api_key_create.cypher
_FIND = "MATCH (k:ApiKey {id: $id}) RETURN k {.*} AS key"
_TOUCH = "api_key_touch"  # cypher/tenants/api_key_touch.cypher
_REVOKE = "api_key_revoke"  # cypher/tenants/api_key_revoke.cypher
_LIST = "MATCH (k:ApiKey {tenantId: $tenantId}) RETURN k {.*} AS key ORDER BY k.createdAt, k.id"


class ApiKeyPublic(CamelModel):
    """A key as its tenant's admins list it: never the key, never its hash."""

    id: str
    tenant_id: str
    name: str
    role: str
    prefix: str = Field(description="the first characters of the key, to tell keys apart")
    created_at: str
    created_by: str
    expires_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None


class ApiKeyCreated(BaseModel):
    id: str
    key: str = Field(description="shown once: only its hash is kept")


class ApiKeyList(BaseModel):
    records: list[ApiKeyPublic]


@dataclass(frozen=True)
class KeyHolder:
    """Who a verified key speaks for: its tenant in its role, acting for the person who minted it."""

    key_id: str
    tenant_id: str
    role: str
    minted_by: str


def is_api_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _public(node: dict[str, Any]) -> ApiKeyPublic:
    return ApiKeyPublic.model_validate({**node, "prefix": f"{KEY_PREFIX}{node['id']}"})


def create_key(
    graph: Graph,
    *,
    tenant_id: str,
    name: str,
    role: str,
    expires_at: datetime | None,
    now: datetime,
    audit: AuditContext,
) -> ApiKeyCreated:
    if expires_at is not None and expires_at <= now:
        raise BadRequest(
            "expiresAt must be in the future", issues=[{"path": ["expiresAt"], "message": "past"}]
        )
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)

    def tx_fn(tx: Tx) -> None:
        expires = None if expires_at is None else format_ts(expires_at)
        tx.run(
            statement(_CREATE), id=key_id, tenantId=tenant_id, name=name, role=role, hash=_hash(secret),
            now=format_ts(now), actor=audit.actor, expiresAt=expires,
        ).consume()  # fmt: skip
        record_audit(tx, audit, target_type="apiKey", target_id=key_id, detail={"name": name, "role": role})

    graph.write(tx_fn)
    return ApiKeyCreated(id=key_id, key=f"{KEY_PREFIX}{key_id}_{secret}")


def verify_key(graph: Graph, token: str, *, now: datetime) -> KeyHolder:
    """The holder of a live key; UNAUTHORIZED for a malformed, unknown, revoked or expired one."""
    key_id, _, secret = token.removeprefix(KEY_PREFIX).partition("_")
    if not key_id or not secret:
        raise Unauthorized("invalid api key")
    node = graph.read(lambda tx: _find(tx, key_id))
    if node is None or not hmac.compare_digest(node["hash"], _hash(secret)):
        raise Unauthorized("invalid api key")
    if node.get("revokedAt") is not None:
        raise Unauthorized("api key revoked")
    if node.get("expiresAt") is not None and parse_ts(node["expiresAt"]) <= now:
        raise Unauthorized("api key expired")
    last = node.get("lastUsedAt")
    if last is None or parse_ts(last) < now - _LAST_USE_EVERY:
        graph.write_idempotent(
            lambda tx: tx.run(
                statement(_TOUCH), id=key_id, now=format_ts(now), staleBefore=format_ts(now - _LAST_USE_EVERY)
            ).consume()
        )
    return KeyHolder(
        key_id=key_id, tenant_id=node["tenantId"], role=node["role"], minted_by=str(node["createdBy"])
    )


def _find(tx: Tx, key_id: str) -> dict[str, Any] | None:
    record = tx.run(_FIND, id=key_id).single()
    return None if record is None else cast(dict[str, Any], record["key"])


def key_tenant(graph: Graph, key_id: str) -> str | None:
    node = graph.read(lambda tx: _find(tx, key_id))
    return None if node is None else str(node["tenantId"])


def revoke_key(graph: Graph, *, key_id: str, now: datetime, audit: AuditContext) -> ApiKeyPublic:
    """Revoked from this commit on, in every process; revoking twice keeps the first instant."""

    def tx_fn(tx: Tx) -> dict[str, Any]:
        record = tx.run(statement(_REVOKE), id=key_id, tenantId=audit.tenant_id, now=format_ts(now)).single()
        if record is None:
            raise NotFound(f"api key '{key_id}' not found")
        record_audit(tx, audit, target_type="apiKey", target_id=key_id, detail={"revoked": True})
        return cast(dict[str, Any], record["key"])

    return _public(graph.write(tx_fn))


def list_keys(graph: Graph, *, tenant_id: str) -> ApiKeyList:
    rows = graph.read(lambda tx: [dict(row["key"]) for row in tx.run(_LIST, tenantId=tenant_id)])
    return ApiKeyList(records=[_public(row) for row in rows])
