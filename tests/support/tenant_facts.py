"""A tenant's own facts about a shared person, written as docs/people.md stores them.

For tests of the readers (audience sources, segment arms, guardian routing, explanations) while the
write path of a fact is not the test's subject: ``view`` a tenant's view with its properties,
``own_tags`` a tenant's whole tag list (``tagsOwn``), and ``own_link`` a guardian link the tenant
recorded. Shared facts are the profile's own, as every test
already writes them.
"""

from __future__ import annotations

from typing import Any

from campaign_engine.graph.graph import Graph

__all__ = ["own_link", "own_tags", "view"]

_VIEW = """
MATCH (p:Profile {profileId: $profileId})
MERGE (v:TenantView {tenantId: $tenant, profileId: $profileId})
MERGE (p)-[:HAS_VIEW]->(v)
SET v += $props
"""


def view(graph: Graph, tenant: str, profile_id: str, **props: Any) -> None:
    """The tenant's view of ``profile_id``, created if absent, with ``props`` set on it."""
    graph.run(_VIEW, tenant=tenant, profileId=profile_id, props=props)


def own_tags(graph: Graph, tenant: str, profile_id: str, slugs: list[str]) -> None:
    """The tenant's tag list of the person (replacing its earlier one): ``tagsOwn`` and its edges."""
    view(graph, tenant, profile_id, tagsOwn=True)
    graph.run(
        "MATCH (p:Profile {profileId: $profileId}) "
        "OPTIONAL MATCH (p)-[old:HAS_TAG {tenantId: $tenant}]->(:Tag) DELETE old "
        "WITH DISTINCT p UNWIND $slugs AS slug MERGE (t:Tag {slug: slug}) "
        "MERGE (p)-[:HAS_TAG {slug: slug, profileId: p.profileId, tenantId: $tenant}]->(t)",
        tenant=tenant, profileId=profile_id, slugs=slugs,
    )  # fmt: skip


def own_link(graph: Graph, tenant: str | None, guardian: str, child: str, consent: str = "granted") -> None:
    """A guardian link ``tenant`` recorded (``None``: the shared link)."""
    graph.run(
        "MATCH (g:Profile {profileId: $g}), (k:Profile {profileId: $k}) "
        "CREATE (g)-[:GUARDIAN_OF {tenantId: $tenant, consent: $consent, source: 'api'}]->(k)",
        g=guardian, k=child, tenant=tenant, consent=consent,
    )  # fmt: skip
