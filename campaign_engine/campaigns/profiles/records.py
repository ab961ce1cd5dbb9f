"""Profiles: batched idempotent upsert, read and delete (admin), plus streaming JSONL import.

A profile is a person, shared by the tenants (apps) it belongs to (``tenants``). A tenant's own
credential reads and writes only its members, sees only itself in their ``tenants``, and cannot take
in a profile another tenant holds (a platform admin adds it); ``tenant=None`` is a platform credential.
A tenant credential's facts go into its view of the person, and it reads its view over the shared facts
(``campaigns/profiles/views.py``, docs/people.md); a platform credential writes and reads the shared ones.

A batch is one transaction: every row is validated before anything is written, and a constraint
violation (a DID already used by another profile) rolls the whole batch back. A row changes only the
fields it names (``domain/profile.py``); the API and the JSONL import share this one path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from neo4j.exceptions import ConstraintError
from pydantic import ValidationError

from campaign_engine.campaigns.profiles.guardians import (
    Provenance,
    Source,
    lock_ids,
    set_guardians,
    upsert_rows,
)
from campaign_engine.campaigns.profiles.receiver_secrets import check_sealable, seal_rows
from campaign_engine.campaigns.profiles.views import (
    merged,
    names_view_facts,
    shared_part,
    view_row,
    write_views,
)
from campaign_engine.domain.errors import BadRequest, Conflict, Forbidden, NotFound
from campaign_engine.domain.profile import (
    EmailContact,
    GuardianLink,
    ProfileIn,
    ProfileOut,
    ProfileUpsert,
    UpsertResult,
    WebhookSecretOut,
)
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.domain.webhook_keys import SecretBox
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles

__all__ = ["delete_profile", "get_profile", "import_jsonl", "upsert_profiles"]


def _row(profile: ProfileIn) -> dict[str, Any]:
    """One statement row: ``props`` holds only the named properties; a list is ``None`` when omitted
    (kept) and a list when named (replaces; a named ``null`` is the empty list)."""
    emails, tags, connections = profile.emails or [], profile.tags or [], profile.connections or []
    return {
        "profileId": profile.profile_id,
        "props": profile.properties(),
        "emails": [e.model_dump() for e in emails] if profile.named("emails") else None,
        "tags": sorted(set(tags)) if profile.named("tags") else None,
        "connections": sorted(set(connections)) if profile.named("connections") else None,
        "tenants": sorted(set(profile.tenants)) if profile.tenants is not None else None,
    }


# Profile ids named in an upsert's audit entry. One entry records the call, not each of its up to 1000
# rows: an entry per profile would multiply the batch's writes and the audit indexes by the batch size,
# and bury every other admin action in audit.list; the count and the first ids say what was done.
AUDIT_IDS_CAP = 20


# Profiles of the batch that exist outside the tenant: a tenant credential may not take them in.
_FOREIGN = "profile_foreign"  # cypher/profiles/profile_foreign.cypher


def upsert_profiles(
    graph: Graph,
    batch: ProfileUpsert,
    *,
    tenant_id: str,
    platform: bool = True,
    audit: AuditContext | None = None,
    secrets: SecretBox | None = None,
    adult_age: int = 18,
    clock: Clock = system_clock,
    source: Source = "api",
    may_route: bool = True,
) -> UpsertResult:
    """``tenant_id`` is the tenant new profiles join; ``platform`` False is a tenant's own credential,
    which may neither name ``tenants`` nor touch a profile outside its tenant (CONFLICT, nothing written: it
    learns that the id is taken, never whose it is or what it holds). ``secrets`` seals the receivers' own
    secrets (``campaigns/profiles/receiver_secrets.py``); a row setting a webhook needs it. Rows naming
    ``guardians`` replace those sets (``campaigns/profiles/guardians.py``) after every row's profile is
    written, so a guardian the batch creates may be named; ``adult_age`` is the age policy's, for that
    check. ``may_route`` False: the caller may not write receivers (only the role that rotates their
    secrets may), so a row naming ``notificationsWebhook`` or its secret, even as null, refuses the batch."""
    if not may_route:
        _refuse_routes(batch.profiles)
    check_sealable(batch.profiles, secrets)
    by_id = {p.profile_id: p for p in batch.profiles}
    unsealed = sorted((_row(p) for p in batch.profiles), key=lambda r: r["profileId"])
    views = (
        []
        if platform
        else sorted(
            (view_row(p) for p in batch.profiles if names_view_facts(p)), key=lambda r: r["profileId"]
        )
    )
    if not platform:  # the tenant's facts go into its view; the profile keeps the shared ones
        unsealed = [shared_part(r) for r in unsealed]
    with_connections = [r for r in (unsealed if platform else views) if r["connections"] is not None]
    links = upsert_rows(batch.profiles)
    provenance = Provenance(source=source, now=clock(), audit=audit)
    ids = [r["profileId"] for r in unsealed]
    if not platform and any(r["tenants"] is not None for r in unsealed):
        raise Forbidden("tenants is set by platform credentials; a tenant's profiles join it by themselves")

    def tx_fn(tx: Tx) -> tuple[int, int, int, int, list[WebhookSecretOut], int]:
        if not platform:
            held = tx.run(statement(_FOREIGN), ids=ids, tenant=tenant_id).single()
            if held is not None and held["foreign"]:
                raise Conflict(
                    f"{held['foreign']} of these profileIds are taken outside this tenant; a platform admin "
                    "can add those profiles to it (nothing in this batch was written)"
                )
            _refuse_identity_changes(tx, unsealed, order=[p.profile_id for p in batch.profiles])
        if links:  # the minors and their guardians, ascending, before any of them is written or read
            lock_profiles(tx, ids + lock_ids(links))
        scope = None if platform else tenant_id
        # The receivers' rings go where their URLs go: the shared facts, or the tenant's view.
        sealed, generated = seal_rows(tx, unsealed if platform else views, by_id, secrets, tenant=scope)
        rows = sealed if platform else unsealed
        record = tx.run(statement("upsert_profiles"), rows=rows, tenant=tenant_id).single()
        assert record is not None
        # Unchanged: an existing profile whose stored facts (a tenant's: its view's) were the row's already.
        unchanged = set(record["unchanged"])
        if not platform:
            unchanged -= write_views(tx, sealed, tenant_id=tenant_id)
        missing = 0
        if with_connections:
            linked = tx.run(statement("upsert_connections"), rows=with_connections, tenant=scope).single()
            missing = int(linked["missing"]) if linked is not None else 0
        created = int(record["created"])
        detail: dict[str, Any] = {"count": len(ids), "created": created,
                                  "updated": len(ids) - created - len(unchanged),
                                  "unchanged": len(unchanged), "profileIds": ids[:AUDIT_IDS_CAP]}  # fmt: skip
        if links:
            detail["guardianLinks"] = set_guardians(tx, links, tenant=scope, adult_age=adult_age,
                                                    provenance=provenance)  # fmt: skip
        record_audit(tx, audit, target_type="profile", target_id=ids[0] if len(ids) == 1 else "batch",
                     detail=detail)  # fmt: skip
        return (
            created,
            int(record["total"]),
            len(unchanged),
            missing,
            generated,
            detail.get("guardianLinks", 0),
        )

    try:
        created, total, unchanged, missing, generated, guardian_links = graph.write(tx_fn)
    except ConstraintError as exc:
        raise BadRequest(
            "a did is already used by another profile; nothing in this batch was written"
        ) from exc
    return UpsertResult(
        created=created,
        updated=total - created - unchanged,
        unchanged=unchanged,
        missing_connections=missing,
        webhook_secrets=generated,
        guardian_links=guardian_links,
    )


def _refuse_routes(rows: list[ProfileIn]) -> None:
    for index, row in enumerate(rows):
        if row.named("notifications_webhook") or row.named("notifications_webhook_secret"):
            raise Forbidden(
                f"profiles.{index}.notificationsWebhook: a receiver and its secret are written by an admin "
                "of the tenant (the role that rotates the secret) or a platform admin; nothing in this "
                "batch was written"
            )


_IDENTITY = "profile_identity"  # cypher/profiles/profile_identity.cypher


def _refuse_identity_changes(tx: Tx, rows: list[dict[str, Any]], *, order: list[str]) -> None:
    """A tenant row sets ``did`` / ``isServiceProfile`` only on a person it creates: every tenant reads
    them (an audience by DID, the email age rule), so another value for an existing person refuses the
    batch, naming the row; the value already stored is no change (a re-import passes)."""
    named = {r["profileId"]: r["identity"] for r in rows if r.get("identity")}
    if not named:
        return
    for found in tx.run(statement(_IDENTITY), ids=sorted(named)):
        stored = {"did": found["did"], "isServiceProfile": found["isServiceProfile"]}
        for name, value in named[found["profileId"]].items():
            if value != stored[name]:
                index = order.index(found["profileId"])
                raise Forbidden(
                    f"profiles.{index}.{name}: a person's {name} is set by a platform admin once they exist "
                    "(every tenant holding them reads it); a tenant sets it only on a profile it creates; "
                    "nothing in this batch was written"
                )


_GET = "profile_get"  # cypher/profiles/profile_get.cypher


def _by_id(link: GuardianLink) -> str:
    return link.profile_id


def get_profile(graph: Graph, profile_id: str, *, tenant_id: str | None = None) -> ProfileOut:
    """``tenant_id``: a tenant's credential, for which a profile outside it is NOT_FOUND."""

    def tx_fn(tx: Tx) -> dict[str, Any] | None:
        record = tx.run(statement(_GET), profileId=profile_id, tenant=tenant_id).single()
        return None if record is None else record.data()

    found = graph.read(tx_fn)
    if found is None:
        raise NotFound(f"profile '{profile_id}' not found")
    node = merged(found["profile"], found["view"])
    return ProfileOut(
        profile_id=node["profileId"],
        did=node.get("did"),
        dob=node.get("dob"),
        locale=node.get("locale"),
        is_managed=bool(node.get("isManaged")),
        is_service_profile=bool(node.get("isServiceProfile")),
        emails=[EmailContact.model_validate(e) for e in found["emails"]],
        notifications_webhook=node.get("notificationsWebhook"),
        time_zone=node.get("timeZone"),
        tags=sorted(found["tags"]),
        connections=sorted(set(found["connections"])),
        guardians=sorted((GuardianLink.model_validate(g) for g in found["guardians"]), key=_by_id),
        guardian_of=sorted((GuardianLink.model_validate(g) for g in found["guardianOf"]), key=_by_id),
        tenants=sorted(node.get("tenants") or []) if tenant_id is None else [tenant_id],
        # Opt-outs add up: the person's own for every tenant, or the reading tenant's.
        announcement_email_opt_out=bool(node.get("announcementEmailOptOut"))
        or bool((found["view"] or {}).get("announcementEmailOptOut")),
        announcement_push_opt_out=bool(node.get("announcementPushOptOut")),
    )


_DELETE = "profile_delete"  # cypher/profiles/profile_delete.cypher


# A tenant's delete takes the person out of that tenant (and its campaigns' audiences); the person goes
# only when no tenant holds them any more. A platform delete is the whole person.
_LEAVE_TENANT = "profile_leave_tenant"  # cypher/profiles/profile_leave_tenant.cypher


def delete_profile(
    graph: Graph, profile_id: str, *, tenant_id: str | None = None, audit: AuditContext | None = None
) -> bool:
    """Deletes the profile with its contact methods, memberships, states and pending tests; for a
    tenant's credential (``tenant_id``), takes it out of that tenant, deleting it once no tenant holds it."""

    def tx_fn(tx: Tx) -> int:
        if tenant_id is not None:
            left = tx.run(statement(_LEAVE_TENANT), profileId=profile_id, tenant=tenant_id).single()
            if left is None:
                return 0
            if not left["orphaned"]:
                detail = {"left": tenant_id}
                record_audit(tx, audit, target_type="profile", target_id=profile_id, detail=detail)
                return 1
        record = tx.run(statement(_DELETE), profileId=profile_id).single()
        deleted = int(record["deleted"]) if record is not None else 0
        if deleted:  # nothing deleted is NOT_FOUND at the API: no change, no entry
            record_audit(tx, audit, target_type="profile", target_id=profile_id)
        return deleted

    return graph.write(tx_fn) > 0


def _batches(lines: Iterable[str], size: int) -> Iterator[tuple[int, list[Any]]]:
    batch: list[Any] = []
    first = 1
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            batch.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise BadRequest(f"line {number}: not valid JSON ({exc.msg})") from exc
        if len(batch) == size:
            yield first, batch
            batch, first = [], number + 1
    if batch:
        yield first, batch


def import_jsonl(
    graph: Graph,
    lines: Iterable[str],
    *,
    batch_size: int = 1000,
    progress: Callable[[int], None] | None = None,
    audit: AuditContext | None = None,
    clock: Clock = system_clock,
    tenant_id: str = "default",
    secrets: SecretBox | None = None,
    platform: bool = True,
    may_route: bool = True,
) -> UpsertResult:
    """Streams a JSONL file of profiles in batches; an invalid row names its line and stops the import.
    ``platform`` False: a tenant's credential, whose facts go into its views (``upsert_profiles``).

    Batches before the bad one stay written (each batch is atomic); the message says where to resume.
    Each batch is its own transaction, so each committed batch has its own audit entry.
    """
    created = updated = unchanged = missing = 0
    generated: list[WebhookSecretOut] = []
    for first_line, rows in _batches(lines, batch_size):
        try:
            batch = ProfileUpsert.model_validate({"profiles": rows})
        except ValidationError as exc:
            err = exc.errors(include_url=False, include_input=False)[0]
            loc = list(err["loc"])
            line = first_line + loc[1] if len(loc) > 1 and isinstance(loc[1], int) else first_line
            field = ".".join(str(part) for part in loc[2:]) or "row"
            raise BadRequest(f"line {line}: {field}: {err['msg']} (earlier batches were imported)") from exc
        entry = None if audit is None else audit.next_entry(clock())
        result = upsert_profiles(graph, batch, tenant_id=tenant_id, audit=entry, secrets=secrets,
                                 platform=platform, may_route=may_route)  # fmt: skip
        generated += result.webhook_secrets
        created += result.created
        updated += result.updated
        unchanged += result.unchanged
        missing += result.missing_connections
        if progress is not None:
            progress(len(rows))
    return UpsertResult(
        created=created,
        updated=updated,
        unchanged=unchanged,
        missing_connections=missing,
        webhook_secrets=generated,
    )
