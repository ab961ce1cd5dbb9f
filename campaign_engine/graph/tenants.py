"""Tenant records in the graph: create, patch, read, list, and the one-time seed.

Base layer, beside ``audit.py``: the API's ``tenants.*`` procedures write through it and the
``TenantDirectory`` (``graph/tenant_directory.py``), which delivery and the API both read, loads through
it. A mutation validates the whole record before its transaction writes anything and records its audit
entry inside that transaction, so a refused call leaves nothing behind.

The seed turns the settings that used to configure tenants (``CAMPAIGN_TENANTS``, ``CAMPAIGN_APP_ORIGINS``,
``CAMPAIGN_FREQUENCY_CAPS``, ``CAMPAIGN_DEFAULT_TENANT_ID``) into records once per tenant; afterwards the
records are the only source, and ``tenants.update`` is how they change.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from neo4j.exceptions import ConstraintError
from pydantic import ValidationError

from campaign_engine.config import ConfigError, Settings
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound, bad_request_from
from campaign_engine.domain.frequency_cap import DEFAULT_TENANT, CapChannel, ChannelCap
from campaign_engine.domain.tenant import (
    LayoutPatch,
    TenantCreate,
    TenantLayout,
    TenantPatch,
    TenantPublic,
    TenantSettings,
    tenant_from_node,
    tenant_node_properties,
)
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = [
    "TenantPage",
    "create_tenant",
    "get_tenant",
    "layout_applied",
    "list_tenants",
    "load_tenants",
    "seed_rows",
    "seed_tenants",
    "settings_seed",
    "update_layout",
    "update_tenant",
]

_LOAD_PAGE = 1000
_SEEDED_LAYOUT = ("logoUrl", "primaryColor", "textColor", "footerText", "footerAddress", "senderName")


class TenantPage(CamelModel):
    records: list[TenantPublic]
    cursor: str | None
    has_more: bool


def _audit(tx: Tx, audit: AuditContext | None, tenant_id: str, *, changed: list[str]) -> None:
    """One entry in the caller's trail and, when the caller acts from another tenant (a platform
    admin), one in the changed tenant's own: a tenant sees every change to its record, its approval
    policy included."""
    detail = {"fields": sorted(changed)}
    record_audit(tx, audit, target_type="tenant", target_id=tenant_id, detail=detail)
    if audit is not None and audit.tenant_id != tenant_id:
        record_audit(
            tx, audit.in_trail_of(tenant_id), target_type="tenant", target_id=tenant_id, detail=detail
        )


def create_tenant(
    graph: Graph, *, data: TenantCreate, now: datetime, audit: AuditContext | None
) -> TenantPublic:
    settings = TenantSettings.model_validate(data.model_dump(by_alias=True, exclude={"tenant_id"}))
    props = tenant_node_properties(settings)

    def tx_fn(tx: Tx) -> dict[str, Any] | None:
        record = tx.run(
            statement("tenant_create"), tenantId=data.tenant_id, props=props, now=format_ts(now)
        ).single()
        if record is None:
            return None
        _audit(tx, audit, data.tenant_id, changed=sorted(data.model_fields_set - {"tenant_id"}))
        return dict(record["tenant"])

    try:
        node = graph.write(tx_fn)
    except ConstraintError as exc:  # a create that raced past the OPTIONAL MATCH
        raise Conflict(f"tenant '{data.tenant_id}' already exists") from exc
    if node is None:
        raise Conflict(f"tenant '{data.tenant_id}' already exists")
    return tenant_from_node(node)


def update_tenant(
    graph: Graph, *, patch: TenantPatch, now: datetime, audit: AuditContext | None
) -> TenantPublic:
    """Merge the patch into the locked record and validate the whole again; BAD_REQUEST writes nothing."""
    changes = patch.changes()
    if changes.get("name", "") is None:
        raise BadRequest("a tenant's name cannot be cleared", issues=[_issue("name", "cannot be null")])
    if "frequencyCaps" in changes and changes["frequencyCaps"] is None:
        changes["frequencyCaps"] = {}
    return _patch(graph, patch.tenant_id, changes, now=now, audit=audit)


def update_layout(
    graph: Graph, *, patch: LayoutPatch, now: datetime, audit: AuditContext | None
) -> TenantPublic:
    """``tenants.updateLayout``: only the layout fields change, merged and validated
    like any patch, in one audited transaction."""
    return _patch(graph, patch.tenant_id, patch.changes(), now=now, audit=audit)


def layout_applied(current: TenantPublic, layout: TenantLayout | None) -> TenantSettings:
    """The tenant's settings with a proposed layout patch over them (a preview), validated whole."""
    merged = _settings_wire(current)
    try:
        return TenantSettings.model_validate({**merged, **(layout.changes() if layout else {})})
    except ValidationError as exc:
        raise bad_request_from(exc, "the proposed layout is invalid") from exc


def _settings_wire(current: TenantPublic) -> dict[str, Any]:
    return {k: v for k, v in current.wire().items() if k not in ("tenantId", "createdAt", "updatedAt")}


def _patch(
    graph: Graph, tenant_id: str, changes: dict[str, Any], *, now: datetime, audit: AuditContext | None
) -> TenantPublic:
    """Merge ``changes`` into the locked record and validate the whole again; BAD_REQUEST writes nothing."""

    def tx_fn(tx: Tx) -> dict[str, Any]:
        record = tx.run(statement("tenant_lock"), tenantId=tenant_id).single()
        if record is None:
            raise NotFound(f"tenant '{tenant_id}' not found")
        merged = _settings_wire(tenant_from_node(record["tenant"]))
        try:
            settings = TenantSettings.model_validate({**merged, **changes})
        except ValidationError as exc:
            raise bad_request_from(exc, "the patched tenant is invalid") from exc
        saved = tx.run(
            statement("tenant_save"),
            tenantId=tenant_id,
            props=tenant_node_properties(settings),
            now=format_ts(now),
        ).single()
        assert saved is not None
        _audit(tx, audit, tenant_id, changed=list(changes))
        return dict(saved["tenant"])

    return tenant_from_node(graph.write(tx_fn))


def _issue(path: str, message: str) -> dict[str, Any]:
    return {"path": [path], "message": message, "code": "value_error"}


def _read(tx: Tx, tenant_id: str) -> dict[str, Any] | None:
    record = tx.run(statement("tenant_get"), tenantId=tenant_id).single()
    return None if record is None else dict(record["tenant"])


def get_tenant(graph: Graph, tenant_id: str) -> TenantPublic:
    node = graph.read(_read, tenant_id)
    if node is None:
        raise NotFound(f"tenant '{tenant_id}' not found")
    return tenant_from_node(node)


def _page(tx: Tx, cursor: str, limit: int) -> list[dict[str, Any]]:
    return [dict(row["tenant"]) for row in tx.run(statement("tenant_list"), cursor=cursor, limit=limit)]


def list_tenants(graph: Graph, *, cursor: str | None, limit: int) -> TenantPage:
    nodes = graph.read(_page, cursor or "", limit + 1)
    page = [tenant_from_node(node) for node in nodes[:limit]]
    has_more = len(nodes) > limit
    return TenantPage(
        records=page, cursor=page[-1].tenant_id if page and has_more else None, has_more=has_more
    )


def load_tenants(graph: Graph) -> dict[str, TenantPublic]:
    """Every record, a page of 1000 per read: what the directory caches."""
    found: dict[str, TenantPublic] = {}
    cursor = ""
    while True:
        nodes = graph.read(_page, cursor, _LOAD_PAGE)
        found.update((str(n["tenantId"]), tenant_from_node(n)) for n in nodes)
        if len(nodes) < _LOAD_PAGE:
            return found
        cursor = str(nodes[-1]["tenantId"])


def seed_rows(
    *,
    default_tenant: str,
    tenants: Mapping[str, Mapping[str, Any]],
    app_origins: Mapping[str, str],
    frequency_caps: Mapping[str, Mapping[CapChannel, ChannelCap]],
) -> list[dict[str, Any]]:
    """One validated record per tenant the settings name (the default tenant always), in id order.

    ``CAMPAIGN_FREQUENCY_CAPS["*"]`` becomes the default tenant's caps, under its own entry's channels;
    other tenants keep theirs and fall back to the default tenant's per channel, as ``"*"`` did. A
    setting the records cannot hold raises ``ValueError`` naming the tenant: the settings are checked
    at start as before, now as the seed."""
    names = {default_tenant, *tenants, *app_origins, *(t for t in frequency_caps if t != DEFAULT_TENANT)}
    rows = []
    for tenant_id in sorted(names):
        entry = dict(tenants.get(tenant_id) or {})
        caps = dict(frequency_caps.get(tenant_id) or {})
        if tenant_id == default_tenant:
            caps = {**dict(frequency_caps.get(DEFAULT_TENANT) or {}), **caps}
        try:
            record = TenantCreate.model_validate(
                {
                    **{k: v for k, v in entry.items() if k in _SEEDED_LAYOUT},
                    "tenantId": tenant_id,
                    "name": entry.get("name") or tenant_id,
                    "appOrigin": app_origins.get(tenant_id),
                    "frequencyCaps": {
                        ch: ChannelCap.model_validate(cap).model_dump(by_alias=True)
                        for ch, cap in caps.items()
                    },
                }
            )
        except ValidationError as exc:
            where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"tenant {tenant_id!r} cannot become a record: {where}") from exc
        settings = TenantSettings.model_validate(record.model_dump(by_alias=True, exclude={"tenant_id"}))
        rows.append(
            {
                "tenantId": tenant_id,
                "marker": f"tenant_seed:{tenant_id}",
                "props": tenant_node_properties(settings),
            }
        )
    return rows


def settings_seed(settings: Settings) -> list[dict[str, Any]]:
    """The seed rows of these settings; a setting the records cannot hold is a ``ConfigError``."""
    try:
        return seed_rows(
            default_tenant=settings.campaign_default_tenant_id,
            tenants=settings.campaign_tenants,
            app_origins=settings.campaign_app_origins,
            frequency_caps=settings.campaign_frequency_caps,
        )
    except ValueError as exc:
        raise ConfigError(
            f"CAMPAIGN_TENANTS / CAMPAIGN_APP_ORIGINS / CAMPAIGN_FREQUENCY_CAPS: {exc}"
        ) from exc


def seed_tenants(graph: Graph, rows: list[dict[str, Any]], *, now: datetime) -> list[str]:
    """Create the records of ``rows`` never seeded before (a marker per tenant); returns those created.

    Idempotent and cheap (one statement, an index seek per tenant), so every API and worker start runs
    it: a tenant added to the settings later is created; one seeded before is never touched again."""
    records = graph.run(statement("tenant_seed"), rows=rows, now=format_ts(now))
    return [str(t) for t in records[0]["created"]] if records else []
