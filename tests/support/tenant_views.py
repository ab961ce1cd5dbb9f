"""A tenant's view of a shared person written as docs/people.md stores it, in one statement.

This is what the migration-free case looks like: the shared facts stay on the ``Profile`` (as every
test writes them) and a tenant's own facts sit on its ``TenantView``, reached by ``HAS_VIEW``. The
readers' tests use it to set up what a tenant wrote without going through a write path.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.webhook_keys import KeyRing, SecretBox
from campaign_engine.graph.graph import Graph

__all__ = ["write_view"]

# The view (created on the first write, as the write path does), its properties, and with `emails` the
# tenant's own email list (`emailsOwn`), each address primary and verified.
_WRITE_VIEW = """
MATCH (p:Profile {profileId: $profileId})
MERGE (p)-[:HAS_VIEW]->(view:TenantView {tenantId: $tenantId, profileId: $profileId})
SET view += $props
WITH view
CALL (view) {
  WITH view WHERE $emails IS NOT NULL
  SET view.emailsOwn = true
  WITH view
  UNWIND $emails AS address
  CREATE (view)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: address, isPrimary: true,
                                                        isVerified: true})
}
"""


def write_view(
    graph: Graph,
    tenant_id: str,
    profile_id: str,
    *,
    emails: list[str] | None = None,
    secret: str | None = None,
    box: SecretBox | None = None,
    **props: Any,
) -> None:
    """``tenant_id``'s view of ``profile_id`` with ``props`` (stored names: ``locale``, ``dob`` ...);
    ``secret`` (with the deployment's ``box``) is the view's receiver secret, sealed as the graph holds it."""
    if secret is not None:
        assert box is not None, "a receiver secret is stored sealed: pass the deployment's box"
        props["notificationsWebhookKeys"] = box.seal(KeyRing(secret))
    graph.run(_WRITE_VIEW, tenantId=tenant_id, profileId=profile_id, props=props, emails=emails)
