"""Each profile's own receiver secret: given with the webhook, sealed, rotated with overlap.

A row that sets ``notificationsWebhook`` gives the receiver a secret of its own: the one the row supplies
(``notificationsWebhookSecret``), else a generated one when the webhook is new, changed, or has none
yet, so re-sending an unchanged row does not rotate anything. Generated secrets are answered once; the
graph holds only the sealed key ring (``notificationsWebhookKeys``). Clearing the webhook drops its ring.
Whoever runs one receiver therefore cannot sign for any other, the default inbox included.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.profile import ProfileIn, WebhookSecretOut
from campaign_engine.domain.webhook_keys import KeyRing, RingUnreadable, SecretBox, generate_secret
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["KEYS_PROPERTY", "check_sealable", "rotate_webhook_secret", "seal_rows"]

KEYS_PROPERTY = "notificationsWebhookKeys"

_NO_KEY = (
    "CAMPAIGN_SECRETS_KEY is not set: a profile's own webhook needs it to store the receiver's secret"
    " (nothing in this batch was written)"
)

# Under the profile locks (ascending ids), so two concurrent upserts of one new webhook cannot both
# generate a secret and answer the one the other overwrote.
_STORED = "receiver_secret_stored"  # cypher/profiles/receiver_secret_stored.cypher


def check_sealable(profiles: list[ProfileIn], box: SecretBox | None) -> None:
    """BAD_REQUEST before anything is written when a row sets a webhook and no key can seal its secret."""
    if box is None and any(p.notifications_webhook for p in profiles):
        raise BadRequest(_NO_KEY)


def seal_rows(
    tx: Tx,
    rows: list[dict[str, Any]],
    profiles: dict[str, ProfileIn],
    box: SecretBox | None,
    *,
    tenant: str | None = None,
) -> tuple[list[dict[str, Any]], list[WebhookSecretOut]]:
    """The statement rows with each receiver's sealed ring in ``props``, and the secrets generated.
    ``tenant``: the rows are that tenant's view rows, compared with the receiver its view holds (a
    tenant never inherits the shared ring: its first receiver gets a secret of its own)."""
    webhooked = [pid for pid, p in profiles.items() if p.notifications_webhook]
    generate: set[str] = set()
    pending = sorted(pid for pid in webhooked if profiles[pid].notifications_webhook_secret is None)
    if pending:
        stored = {r["profileId"]: r for r in tx.run(statement(_STORED), ids=pending, tenant=tenant)}
        for pid in pending:
            before = stored.get(pid)
            new_url = profiles[pid].notifications_webhook
            if before is None or not before["keyed"] or before["webhook"] != new_url:
                generate.add(pid)
    generated: list[WebhookSecretOut] = []
    sealed_rows = []
    for row in rows:
        profile = profiles[row["profileId"]]
        props = dict(row["props"])
        if profile.named("notifications_webhook") and not profile.notifications_webhook:
            props[KEYS_PROPERTY] = None  # no webhook of its own: its secrets go with it
        supplied = profile.notifications_webhook_secret
        if supplied is not None or row["profileId"] in generate:
            assert box is not None  # check_sealable refused the batch otherwise
            secret = supplied or generate_secret()
            props[KEYS_PROPERTY] = box.seal(KeyRing(secret))
            if supplied is None:
                generated.append(WebhookSecretOut(profile_id=row["profileId"], secret=secret))
        sealed_rows.append({**row, "props": props})
    return sealed_rows, generated


_RING = "receiver_secret_ring"  # cypher/profiles/receiver_secret_ring.cypher
_SET_RING = "receiver_secret_set_ring"  # cypher/profiles/receiver_secret_set_ring.cypher


def rotate_webhook_secret(
    graph: Graph,
    box: SecretBox | None,
    *,
    profile_id: str,
    overlap_seconds: int,
    now: int,
    secret: str | None = None,
    tenant_id: str | None = None,
    audit: AuditContext | None = None,
) -> str | None:
    """A new secret for the profile's receiver (``secret``, else generated and returned); the one it
    replaces keeps signing for ``overlap_seconds``. ``tenant_id`` (a tenant's credential) rotates the
    ring of the receiver in that tenant's view of the person, never the shared one. A profile set before
    per-receiver secrets has none to keep: its receiver holds the default secret, so it must accept the
    new one before this is called."""
    if box is None:
        raise BadRequest(_NO_KEY.replace("nothing in this batch", "nothing"))

    def tx_fn(tx: Tx) -> str | None:
        # The lock first (no keys: nothing set): two rotations at once must not both keep one old secret.
        tx.run(statement(_SET_RING), profileId=profile_id, tenant=tenant_id, keys=None).consume()
        record = tx.run(statement(_RING), profileId=profile_id, tenant=tenant_id).single()
        if record is None:
            raise NotFound(f"profile '{profile_id}' not found")
        if not record["webhook"]:
            whose = "of its own" if tenant_id is None else "this tenant set"
            raise BadRequest(f"this profile has no notificationsWebhook {whose}; the default receiver's"
                             " secret is NOTIFICATIONS_WEBHOOK_SECRET")  # fmt: skip
        new = secret or generate_secret()
        if record["keys"] is None:
            ring = KeyRing(new)
        else:
            try:
                ring = box.open(record["keys"]).rotated(new, now=now, overlap_seconds=overlap_seconds)
            except RingUnreadable:
                ring = KeyRing(new)  # sealed under a key now gone: nothing left that could sign
        tx.run(statement(_SET_RING), profileId=profile_id, tenant=tenant_id, keys=box.seal(ring)).consume()
        detail = {"overlapSeconds": overlap_seconds, "generated": secret is None}
        record_audit(tx, audit, target_type="profile", target_id=profile_id, detail=detail)
        return None if secret is not None else new

    return graph.write(tx_fn)
